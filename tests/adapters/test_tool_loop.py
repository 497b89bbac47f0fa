"""run_tool_calls between two requests of the official OpenAI and Anthropic clients.

Each client talks to an httpx MockTransport that answers with bodies shaped like the real
APIs' and records what the client sent, so the test sees the tool results exactly as the
next request carries them.
"""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest
from anthropic import AsyncAnthropic
from openai import AsyncOpenAI

from memstack import memory_tools
from memstack.adapters.openai_agents import function_call_item, message_item, response_payload
from memstack.adapters.tool_loop import run_tool_calls, tool_calls, tool_definitions
from memstack.context import ProcessingContext
from memstack.errors import InvalidInput

TOOLS = memory_tools(source="agent")
WRITE_ARGS = {"key": "city", "value": "Lisbon"}


class Api:
    """A MockTransport handler: answers with the next body, keeps each request's JSON."""

    def __init__(self, *bodies: dict[str, Any]) -> None:
        self.bodies = list(bodies)
        self.sent: list[dict[str, Any]] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.sent.append(json.loads(request.content))
        return httpx2.Response(200, json=self.bodies.pop(0))

    def client(self) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(transport=httpx2.MockTransport(self))


def chat_completion(message: dict[str, Any], finish: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG",
        "object": "chat.completion",
        "created": 1741570283,
        "model": "gpt-4o-2024-08-06",
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish}],
        "usage": {"prompt_tokens": 82, "completion_tokens": 17, "total_tokens": 99},
        "system_fingerprint": "fp_fc9f1d7035",
    }


def chat_call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def anthropic_message(*content: dict[str, Any], stop: str = "tool_use") -> dict[str, Any]:
    return {
        "id": "msg_01Aq9w938a90dw8q",
        "type": "message",
        "role": "assistant",
        "model": "claude-haiku-4-5-20251001",
        "content": list(content),
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 472, "output_tokens": 91},
    }


async def test_openai_chat_round_trip() -> None:
    calls = [
        chat_call("call_a", "memory_write", json.dumps(WRITE_ARGS)),
        chat_call("call_b", "memory_read", json.dumps({"keys": "city"})),  # a string, not a list
        chat_call("call_c", "web_search", "{}"),
    ]
    api = Api(
        chat_completion({"role": "assistant", "content": None, "tool_calls": calls}, "tool_calls"),
        chat_completion({"role": "assistant", "content": "Saved."}, "stop"),
    )
    client = AsyncOpenAI(
        api_key="k", base_url="https://llm.example.test/v1", http_client=api.client()
    )
    context = ProcessingContext()
    messages: list[Any] = [{"role": "user", "content": "Remember I live in Lisbon"}]
    tools = tool_definitions(TOOLS, "openai-chat")
    first = await client.chat.completions.create(model="gpt-4o", messages=messages, tools=tools)  # type: ignore[arg-type]

    results = await run_tool_calls(first, TOOLS, context=context)
    messages += [first.choices[0].message.model_dump(exclude_none=True), *results]
    await client.chat.completions.create(model="gpt-4o", messages=messages, tools=tools)  # type: ignore[arg-type]

    assert context.memory.get_value("shared:city") == "Lisbon"
    sent = api.sent[1]["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "tool", "tool", "tool"]
    assert [m["tool_call_id"] for m in sent[2:]] == ["call_a", "call_b", "call_c"]
    assert json.loads(sent[2]["content"])["ok"] is True
    assert "`keys` must be of type array" in json.loads(sent[3]["content"])["error"]
    assert "unknown tool `web_search`" in json.loads(sent[4]["content"])["error"]
    assert api.sent[0]["tools"][0]["function"]["name"] == "memory_list"


async def test_openai_responses_round_trip() -> None:
    api = Api(
        response_payload(
            message_item("Saving that."),
            function_call_item("memory_write", WRITE_ARGS, call_id="call_w"),
        ),
        response_payload(message_item("Saved.")),
    )
    client = AsyncOpenAI(
        api_key="k", base_url="https://llm.example.test/v1", http_client=api.client()
    )
    context = ProcessingContext()
    tools = tool_definitions(TOOLS, "openai-responses")
    inputs: list[Any] = [{"role": "user", "content": "Remember I live in Lisbon"}]
    first = await client.responses.create(model="gpt-4.1", input=inputs, tools=tools)  # type: ignore[arg-type]

    results = await run_tool_calls(first, TOOLS, context=context)
    inputs += [item.model_dump(exclude_none=True) for item in first.output] + results
    await client.responses.create(model="gpt-4.1", input=inputs, tools=tools)  # type: ignore[arg-type]

    assert context.memory.get_value("shared:city") == "Lisbon"
    sent = api.sent[1]["input"]
    assert sent[-1]["type"] == "function_call_output" and sent[-1]["call_id"] == "call_w"
    assert json.loads(sent[-1]["output"])["key"] == "shared:city"
    assert api.sent[0]["tools"][0] == {**tools[0], "strict": False}


async def test_anthropic_round_trip() -> None:
    api = Api(
        anthropic_message(
            {"type": "text", "text": "I'll save that."},
            {"type": "tool_use", "id": "toolu_01A", "name": "memory_write", "input": WRITE_ARGS},
            {"type": "tool_use", "id": "toolu_01B", "name": "memory_write", "input": {}},
        ),
        anthropic_message({"type": "text", "text": "Saved."}, stop="end_turn"),
    )
    client = AsyncAnthropic(
        api_key="k", base_url="https://claude.example.test", http_client=api.client()
    )
    context = ProcessingContext()
    tools = tool_definitions(TOOLS, "anthropic")
    messages: list[Any] = [{"role": "user", "content": "Remember I live in Lisbon"}]
    first = await client.messages.create(
        model="claude-haiku-4-5",
        max_tokens=512,
        messages=messages,
        tools=tools,  # type: ignore[arg-type]
    )

    results = await run_tool_calls(first, TOOLS, context=context)
    messages += [{"role": "assistant", "content": first.content}, *results]
    await client.messages.create(
        model="claude-haiku-4-5",
        max_tokens=512,
        messages=messages,
        tools=tools,  # type: ignore[arg-type]
    )

    assert context.memory.get_value("shared:city") == "Lisbon"
    sent = api.sent[1]["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "user"]
    ok, refused = sent[2]["content"]
    assert ok["tool_use_id"] == "toolu_01A" and "is_error" not in ok
    assert refused["tool_use_id"] == "toolu_01B" and refused["is_error"] is True
    assert "missing required fields `key`, `value`" in json.loads(refused["content"])["error"]


@pytest.mark.parametrize(
    ("reply", "api"),
    [
        (chat_completion({"role": "assistant", "content": "hi"}, "stop"), "openai-chat"),
        (anthropic_message({"type": "text", "text": "hi"}, stop="end_turn"), "anthropic"),
    ],
)
async def test_a_reply_without_tool_calls_needs_no_messages(
    reply: dict[str, Any], api: str
) -> None:
    assert tool_calls(reply) == (api, [])
    assert await run_tool_calls(reply, TOOLS) == []


async def test_an_unknown_reply_shape_names_the_field() -> None:
    with pytest.raises(InvalidInput) as caught:
        await run_tool_calls({"text": "hi"}, TOOLS)
    assert caught.value.field == "reply"
