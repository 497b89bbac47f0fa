"""ScriptedResponsesModel: an Agents SDK ``Model`` that replays Responses API payloads.

For tests and offline examples: each model call is answered with the next payload, the
JSON body ``POST /v1/responses`` returns (write one with ``response_payload``, or paste a
recorded one), parsed by the ``openai`` SDK's own ``Response`` type, so the Runner sees
exactly what the real API would have sent. Every call is recorded for assertions.
"""

from __future__ import annotations

import copy
import json
import threading
import uuid
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from agents import Model, ModelResponse, ModelSettings, ModelTracing, Tool, Usage
from agents.agent_output import AgentOutputSchemaBase
from agents.handoffs import Handoff
from agents.items import TResponseInputItem, TResponseStreamEvent
from openai.types.responses import Response, ResponseCompletedEvent
from openai.types.responses.response_prompt_param import ResponsePromptParam

from memstack.errors import ConfigError

__all__ = [
    "ResponsesCall",
    "ScriptedResponsesModel",
    "function_call_item",
    "message_item",
    "response_payload",
]

Payload = Mapping[str, Any]
Reply = Payload | Callable[[list[TResponseInputItem]], Payload]
"""A Responses API body, or a function of the call's input items that returns one."""


@dataclass(frozen=True, kw_only=True)
class ResponsesCall:
    """What the model was asked."""

    instructions: str | None
    input: list[TResponseInputItem]
    tool_names: list[str]


class ScriptedResponsesModel(Model):
    """Answers each call with the next scripted Responses API payload.

    Running out of script is a ``ConfigError`` that says how many replies there were,
    so a test never hangs or guesses.
    """

    def __init__(self, replies: Iterable[Reply]) -> None:
        self._replies = list(replies)
        self._lock = threading.Lock()
        self.calls: list[ResponsesCall] = []

    async def get_response(
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        model_settings: ModelSettings,
        tools: list[Tool],
        output_schema: AgentOutputSchemaBase | None,
        handoffs: list[Handoff],
        tracing: ModelTracing,
        *,
        previous_response_id: str | None,
        conversation_id: str | None,
        prompt: ResponsePromptParam | None,
    ) -> ModelResponse:
        response = self._next(system_instructions, input, tools)
        return ModelResponse(
            output=response.output, usage=_usage(response), response_id=response.id
        )

    async def stream_response(
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        model_settings: ModelSettings,
        tools: list[Tool],
        output_schema: AgentOutputSchemaBase | None,
        handoffs: list[Handoff],
        tracing: ModelTracing,
        *,
        previous_response_id: str | None,
        conversation_id: str | None,
        prompt: ResponsePromptParam | None,
    ) -> AsyncIterator[TResponseStreamEvent]:
        response = self._next(system_instructions, input, tools)
        yield ResponseCompletedEvent(
            type="response.completed", response=response, sequence_number=0
        )

    def _next(
        self, instructions: str | None, input: str | list[TResponseInputItem], tools: list[Tool]
    ) -> Response:
        items: list[TResponseInputItem] = (
            [{"role": "user", "content": input}] if isinstance(input, str) else copy.deepcopy(input)
        )
        with self._lock:
            index = len(self.calls)
            self.calls.append(
                ResponsesCall(
                    instructions=instructions, input=items, tool_names=[t.name for t in tools]
                )
            )
        if index >= len(self._replies):
            raise ConfigError(
                f"ScriptedResponsesModel was called {index + 1} times but only "
                f"{len(self._replies)} replies were scripted; add replies."
            )
        reply = self._replies[index]
        payload = reply(items) if callable(reply) else reply
        return Response.model_validate(payload)


def _usage(response: Response) -> Usage:
    used = response.usage
    if used is None:
        return Usage(requests=1)
    return Usage(
        requests=1,
        input_tokens=used.input_tokens,
        input_tokens_details=used.input_tokens_details,
        output_tokens=used.output_tokens,
        output_tokens_details=used.output_tokens_details,
        total_tokens=used.total_tokens,
    )


# -- payloads shaped as the Responses API sends them -------------------------------------


def response_payload(
    *output: Payload, model: str = "gpt-4.1-mini-2025-04-14", input_tokens: int = 40
) -> dict[str, Any]:
    """A completed ``response`` object holding these output items."""
    output_tokens = 10 * max(1, len(output))
    return {
        "id": f"resp_{uuid.uuid4().hex}",
        "object": "response",
        "created_at": 1_760_000_000,
        "status": "completed",
        "model": model,
        "output": [dict(item) for item in output],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "text": {"format": {"type": "text"}},
        "truncation": "disabled",
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "metadata": {},
        "temperature": 1.0,
        "top_p": 1.0,
        "usage": {
            "input_tokens": input_tokens,
            "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
            "output_tokens": output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": input_tokens + output_tokens,
        },
    }


def function_call_item(
    name: str, arguments: Mapping[str, Any], *, call_id: str | None = None
) -> dict[str, Any]:
    """A ``function_call`` output item; ``arguments`` travel as a JSON string."""
    n = uuid.uuid4().hex
    return {
        "type": "function_call",
        "id": f"fc_{n}",
        "call_id": call_id or f"call_{n}",
        "name": name,
        "arguments": json.dumps(dict(arguments)),
        "status": "completed",
    }


def message_item(text: str) -> dict[str, Any]:
    """An assistant ``message`` output item with one ``output_text`` part."""
    return {
        "type": "message",
        "id": f"msg_{uuid.uuid4().hex}",
        "status": "completed",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }
