"""OpenAIProvider against httpx2.MockTransport, with replies shaped like Chat Completions."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator

import httpx2
import pytest

from memstack.errors import ConfigError, InvalidInput, ProviderError
from memstack.providers import (
    ChatModel,
    Completion,
    Message,
    OpenAIProvider,
    StreamEvent,
    TextDelta,
    ToolCall,
    Usage,
)
from memstack.providers.base import INVALID_JSON_KEY
from memstack.tools import ProviderTool
from tests.providers.sse import (
    Recorder,
    openai_chunk,
    openai_error,
    openai_stream,
    openai_tool_delta,
    openai_usage,
)

BASE_URL = "https://llm.example.test/v1"
USER = [Message(role="user", content="hi")]
WEATHER = ProviderTool(
    name="get_weather",
    description="The weather in a city.",
    input_schema={"type": "object", "properties": {"city": {"type": "string"}}},
)


async def run(
    recorder: Recorder,
    messages: list[Message] = USER,
    *,
    provider_name: str = "openai",
    tools: list[ProviderTool] | None = None,
    json_output: bool = False,
    max_tokens: int | None = None,
) -> list[StreamEvent]:
    async with OpenAIProvider(
        api_key="sk-test",
        base_url=BASE_URL,
        http_client=recorder.client(),
        max_retries=0,
        provider_name=provider_name,
    ) as provider:
        events = provider.stream(
            messages,
            model="gpt-4o-mini",
            tools=tools or (),
            json_output=json_output,
            max_tokens=max_tokens,
        )
        return [event async for event in events]


async def test_text_streams_as_deltas_then_usage():
    recorder = Recorder(
        openai_stream(
            openai_chunk({"role": "assistant", "content": "", "refusal": None}),
            openai_chunk({"content": "Hel"}),
            openai_chunk({"content": "lo!"}),
            openai_chunk({}, finish_reason="stop"),
            openai_usage(9, 3),
        )
    )
    events = await run(recorder)

    assert events == [
        TextDelta(content="Hel"),
        TextDelta(content="lo!"),
        Usage(input_tokens=9, output_tokens=3),
    ]
    (request,) = recorder.requests
    assert request.method == "POST"
    assert str(request.url) == f"{BASE_URL}/chat/completions"
    assert request.headers["authorization"] == "Bearer sk-test"
    assert recorder.body == {
        "model": "gpt-4o-mini",
        "messages": [{"role": "user", "content": "hi"}],
        "stream": True,
        "stream_options": {"include_usage": True},
    }


async def test_tool_calls_are_assembled_from_fragments_and_yielded_before_usage():
    recorder = Recorder(
        openai_stream(
            openai_chunk({"role": "assistant", "content": None}),
            openai_chunk(openai_tool_delta(0, call_id="call_a", name="get_weather")),
            openai_chunk(openai_tool_delta(0, arguments='{"ci')),
            openai_chunk(openai_tool_delta(1, call_id="call_b", name="get_weather")),
            openai_chunk(openai_tool_delta(0, arguments='ty": "Paris"}')),
            openai_chunk(openai_tool_delta(1, arguments='{"city": "Oslo"}')),
            openai_chunk({}, finish_reason="tool_calls"),
            openai_usage(80, 40),
        )
    )
    events = await run(recorder, tools=[WEATHER])

    assert events == [
        ToolCall(id="call_a", name="get_weather", arguments={"city": "Paris"}),
        ToolCall(id="call_b", name="get_weather", arguments={"city": "Oslo"}),
        Usage(input_tokens=80, output_tokens=40),
    ]
    assert recorder.body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "The weather in a city.",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
            },
        }
    ]


async def test_a_server_that_sends_whole_calls_reusing_index_0_and_no_usage():
    """Like some compatible servers: each call complete in one chunk, every one at index 0,
    no finish_reason and no usage chunk."""
    recorder = Recorder(
        openai_stream(
            openai_chunk(openai_tool_delta(0, call_id="c1", name="a", arguments='{"x": 1}')),
            openai_chunk(openai_tool_delta(0, call_id="c2", name="b", arguments="{}")),
        )
    )
    events = await run(recorder, provider_name="ollama")
    assert events == [
        ToolCall(id="c1", name="a", arguments={"x": 1}),
        ToolCall(id="c2", name="b", arguments={}),
        Usage(),
    ]


@pytest.mark.parametrize(
    ("raw", "arguments"),
    [
        ('{"city": "Par', {INVALID_JSON_KEY: '{"city": "Par'}),
        ("[1, 2]", {INVALID_JSON_KEY: "[1, 2]"}),
        ('{"n": NaN}', {INVALID_JSON_KEY: '{"n": NaN}'}),
        ("", {}),
    ],
)
async def test_arguments_that_are_not_a_json_object_are_marked_for_a_retry(raw, arguments):
    recorder = Recorder(
        openai_stream(
            openai_chunk(openai_tool_delta(0, call_id="call_1", name="get_weather")),
            openai_chunk(openai_tool_delta(0, arguments=raw)),
            openai_chunk({}, finish_reason="tool_calls"),
        )
    )
    events = await run(recorder)
    assert events[0] == ToolCall(id="call_1", name="get_weather", arguments=arguments)


async def test_history_maps_to_chat_messages():
    call = ToolCall(id="call_1", name="get_weather", arguments={"city": "Paris"})
    messages = [
        Message(role="system", content="Be brief."),
        Message(role="user", content="Weather in Paris?"),
        Message(role="assistant", tool_calls=(call,)),
        Message(role="tool", tool_call_id="call_1", name="get_weather", content='{"temp":21}'),
        Message(role="assistant", content="21 degrees."),
    ]
    recorder = Recorder(openai_stream(openai_chunk({"content": "ok"})))
    await run(recorder, messages)
    assert recorder.body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Paris?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": '{"temp":21}'},
        {"role": "assistant", "content": "21 degrees."},
    ]


@pytest.mark.parametrize(
    ("provider_name", "limit"), [("openai", "max_completion_tokens"), ("vllm", "max_tokens")]
)
async def test_json_output_and_max_tokens(provider_name, limit):
    recorder = Recorder(openai_stream(openai_chunk({"content": "{}"})))
    await run(recorder, provider_name=provider_name, json_output=True, max_tokens=50)
    assert recorder.body["response_format"] == {"type": "json_object"}
    assert recorder.body[limit] == 50


async def test_generate_collects_the_stream():
    recorder = Recorder(
        openai_stream(
            openai_chunk({"content": "Let me check. "}),
            openai_chunk(openai_tool_delta(0, call_id="call_1", name="get_weather")),
            openai_chunk(openai_tool_delta(0, arguments='{"city": "Rome"}')),
            openai_chunk({}, finish_reason="tool_calls"),
            openai_usage(12, 7),
        )
    )
    async with OpenAIProvider(
        api_key="k", base_url=BASE_URL, http_client=recorder.client(), max_retries=0
    ) as provider:
        assert isinstance(provider, ChatModel)
        reply = await provider.generate(USER, model="gpt-4o-mini")
    assert reply == Completion(
        content="Let me check. ",
        tool_calls=(ToolCall(id="call_1", name="get_weather", arguments={"city": "Rome"}),),
        usage=Usage(input_tokens=12, output_tokens=7),
        model="gpt-4o-mini",
    )


@pytest.mark.parametrize(
    ("response", "status", "message"),
    [
        (
            openai_error(401, "Incorrect API key provided: sk-bad.", "invalid_request_error"),
            401,
            r"openai rejected the API key .*Incorrect API key.*check OPENAI_API_KEY",
        ),
        (
            openai_error(404, "The model `gpt-nope` does not exist.", "invalid_request_error"),
            404,
            r"model name 'gpt-4o-mini'",
        ),
        (openai_error(429, "Rate limit reached.", "requests"), 429, "wait and retry"),
        (openai_error(500, "The server had an error.", "server_error"), 500, "retry later"),
        (httpx2.Response(502, text="<html>Bad Gateway</html>"), 502, "Bad Gateway"),
    ],
)
async def test_http_errors_become_provider_errors(response, status, message):
    with pytest.raises(ProviderError, match=message) as info:
        await run(recorder := Recorder(response))
    assert len(recorder.requests) == 1  # max_retries=0
    assert info.value.status == status
    assert info.value.provider == "openai"
    assert "sk-test" not in str(info.value)


@pytest.mark.parametrize(
    ("exception", "message"),
    [
        (httpx2.ConnectError("Connection refused"), "cannot reach openai at https://llm"),
        (httpx2.ReadTimeout("timed out"), "timed out"),
    ],
)
async def test_network_failures_become_provider_errors(exception, message):
    with pytest.raises(ProviderError, match=message) as info:
        await run(Recorder(exception))
    assert info.value.status is None


async def test_an_error_inside_the_stream_is_a_provider_error():
    broken = openai_stream(
        openai_chunk({"content": "Hel"}),
        {"error": {"message": "The model overloaded.", "type": "server_error"}},
    )
    with pytest.raises(ProviderError, match=r"broke off the reply \(The model overloaded\.\)"):
        await run(Recorder(broken))


async def test_a_tool_message_without_its_call_id_is_refused():
    with pytest.raises(InvalidInput, match="tool_call_id"):
        await run(Recorder(), [Message(role="tool", content="{}")])


def test_a_missing_key_is_a_config_error(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        OpenAIProvider(base_url=BASE_URL)


def test_a_missing_sdk_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "openai", None)
    with pytest.raises(ConfigError, match=r'pip install "memstack\[openai\]"'):
        OpenAIProvider(api_key="k")


async def test_stopping_early_closes_the_stream():
    recorder = Recorder(openai_stream(*(openai_chunk({"content": f"{i} "}) for i in range(5))))
    async with OpenAIProvider(
        api_key="k", base_url=BASE_URL, http_client=recorder.client(), max_retries=0
    ) as provider:
        events: AsyncIterator[StreamEvent] = provider.stream(USER, model="m")
        first = await anext(events)
        await events.aclose()  # type: ignore[attr-defined]
    assert first == TextDelta(content="0 ")
