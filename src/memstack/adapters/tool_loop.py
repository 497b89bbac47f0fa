"""One call for the tool round trip of any OpenAI or Anthropic tool-calling loop.

``tool_definitions(tools, api)`` gives the ``tools`` request parameter;
``run_tool_calls(reply, tools)`` runs the tool calls of the model's reply with memstack's
tools and returns the messages to append before the next request, shaped for the API the
reply came from:

=====================  ==========================  =========================================
API                    the reply                   what comes back
=====================  ==========================  =========================================
``openai-chat``        a ``chat.completion``       one ``{"role": "tool", ...}`` per call
``openai-responses``   a ``response``              one ``function_call_output`` item per call
``anthropic``          a ``message``               one ``user`` message of ``tool_result`` blocks
=====================  ==========================  =========================================

The reply may be the JSON body or the official SDK's object (anything with
``model_dump``). A call the tool refuses (bad arguments, unknown tool, invalid JSON) comes
back as ``{"error": ...}``, the message the model needs to call again.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, cast

from memstack._json import JSON, JSONObject, dumps
from memstack.context import ProcessingContext
from memstack.errors import InvalidInput, ToolInputError
from memstack.tools import Tool

__all__ = ["Api", "Call", "call_tool", "run_tool_calls", "tool_calls", "tool_definitions"]

Api = Literal["openai-chat", "openai-responses", "anthropic"]


@dataclass(frozen=True, kw_only=True)
class Call:
    """One tool call of a reply: arguments as the API sent them (JSON text or a dict)."""

    id: str
    name: str
    arguments: str | Mapping[str, Any]


def tool_definitions(tools: Iterable[Tool], api: Api) -> list[JSONObject]:
    """The ``tools`` parameter of a request to ``api``."""
    out: list[JSONObject] = []
    for tool in tools:
        spec = tool.to_provider_tool()
        if api == "openai-chat":
            out.append(spec.to_openai())
        elif api == "anthropic":
            out.append(spec.to_anthropic())
        else:
            out.append(
                {
                    "type": "function",
                    "name": spec.name,
                    "description": spec.description,
                    "parameters": spec.input_schema,
                    "strict": False,
                }
            )
    return out


async def run_tool_calls(
    reply: object, tools: Iterable[Tool], *, context: ProcessingContext | None = None
) -> list[dict[str, Any]]:
    """Run the reply's tool calls in order; the messages that answer them (``[]`` when
    the reply calls no tool)."""
    api, calls = tool_calls(reply)
    by_name = {tool.name: tool for tool in tools}
    run = context if context is not None else ProcessingContext()
    results = [(call, await call_tool(by_name, call.name, call.arguments, run)) for call in calls]
    if api == "openai-chat":
        return [
            {"role": "tool", "tool_call_id": call.id, "content": dumps(result)}
            for call, (result, _) in results
        ]
    if api == "openai-responses":
        return [
            {"type": "function_call_output", "call_id": call.id, "output": dumps(result)}
            for call, (result, _) in results
        ]
    blocks = [_tool_result(call.id, result, failed) for call, (result, failed) in results]
    return [{"role": "user", "content": blocks}] if blocks else []


def tool_calls(reply: object) -> tuple[Api, list[Call]]:
    """Which API ``reply`` comes from, and its tool calls."""
    body = _as_dict(reply)
    if isinstance(body.get("choices"), list):
        return "openai-chat", _chat_calls(body)
    if body.get("object") == "response" or isinstance(body.get("output"), list):
        return "openai-responses", [
            Call(id=item["call_id"], name=item["name"], arguments=item.get("arguments", ""))
            for item in body["output"]
            if isinstance(item, dict) and item.get("type") == "function_call"
        ]
    if body.get("type") == "message" and isinstance(body.get("content"), list):
        return "anthropic", [
            Call(id=block["id"], name=block["name"], arguments=block.get("input") or {})
            for block in body["content"]
            if isinstance(block, dict) and block.get("type") == "tool_use"
        ]
    raise InvalidInput(
        "reply is not a model reply memstack knows: pass an OpenAI chat.completion "
        "(with `choices`), an OpenAI Responses `response` (with `output`) or an Anthropic "
        "`message` (with `content` blocks), as JSON or as the SDK's object.",
        field="reply",
    )


async def call_tool(
    tools: Mapping[str, Tool],
    name: str,
    arguments: str | Mapping[str, Any],
    context: ProcessingContext,
) -> tuple[JSON, bool]:
    """The tool's result, or ``({"error": ...}, True)`` when the call cannot run."""
    tool = tools.get(name)
    if tool is None:
        known = ", ".join(sorted(tools)) or "none"
        return {"error": f"unknown tool `{name}`; the available tools are: {known}."}, True
    try:
        params = json.loads(arguments or "{}") if isinstance(arguments, str) else arguments
    except json.JSONDecodeError:
        return {
            "error": f"the arguments of `{name}` were not valid JSON; "
            "call it again with a JSON object that matches its schema."
        }, True
    try:
        return await tool.process(context, params), False
    except ToolInputError as exc:
        return {"error": str(exc)}, True


def _chat_calls(body: dict[str, Any]) -> list[Call]:
    choices = body["choices"]
    message = choices[0].get("message") or {} if choices else {}
    return [
        Call(id=c["id"], name=c["function"]["name"], arguments=c["function"].get("arguments", ""))
        for c in message.get("tool_calls") or []
        if c.get("type", "function") == "function"
    ]


def _tool_result(call_id: str, result: JSON, failed: bool) -> dict[str, Any]:
    block: dict[str, Any] = {
        "type": "tool_result",
        "tool_use_id": call_id,
        "content": dumps(result),
    }
    if failed:
        block["is_error"] = True
    return block


def _as_dict(reply: object) -> dict[str, Any]:
    dump = getattr(reply, "model_dump", None)
    if callable(dump):
        reply = dump(mode="json")
    if not isinstance(reply, dict):
        raise InvalidInput(
            f"reply must be a model reply (a dict or an SDK object); got {type(reply).__name__}.",
            field="reply",
        )
    return cast(dict[str, Any], reply)
