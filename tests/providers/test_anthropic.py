"""AnthropicProvider against httpx2.MockTransport, with replies shaped like the Messages API."""

from __future__ import annotations

import sys

import httpx2
import pytest

from memstack.errors import ConfigError, InvalidInput, ProviderError
from memstack.providers import (
    AnthropicProvider,
    ChatModel,
    Completion,
    Message,
    StreamEvent,
    TextDelta,
    ToolCall,
    Usage,
)
from memstack.providers.anthropic import DEFAULT_MAX_TOKENS, JSON_ONLY
from memstack.providers.base import INVALID_JSON_KEY
from memstack.tools import ProviderTool
from tests.providers.sse import (
    Recorder,
    anthropic_error,
    anthropic_stream,
    message_end,
    message_start,
    text_block,
    tool_block,
)

BASE_URL = "https://claude.example.test"
MODEL = "claude-haiku-4-5"
USER = [Message(role="user", content="hi")]
WEATHER = ProviderTool(
    name="get_weather",
    description="The weather in a city.",
    input_schema={"type": "object", "properties": {"city": {"type": "string"}}},
)


def provider_for(recorder: Recorder) -> AnthropicProvider:
    return AnthropicProvider(
        api_key="sk-ant-test", base_url=BASE_URL, http_client=recorder.client(), max_retries=0
    )


async def run(
    recorder: Recorder,
    messages: list[Message] = USER,
    *,
    tools: list[ProviderTool] | None = None,
    json_output: bool = False,
    max_tokens: int | None = None,
) -> list[StreamEvent]:
    async with provider_for(recorder) as provider:
        events = provider.stream(
            messages, model=MODEL, tools=tools or (), json_output=json_output, max_tokens=max_tokens
        )
        return [event async for event in events]


def reply_ok() -> httpx2.Response:
    return anthropic_stream(message_start(5), *text_block(0, "ok"), *message_end("end_turn", 2))


async def test_text_streams_as_deltas_then_usage():
    recorder = Recorder(
        anthropic_stream(
            message_start(472, cache_read=100),
            *text_block(0, "Hel", "lo!"),
            *message_end("end_turn", 12),
        )
    )
    events = await run(recorder)

    assert events == [
        TextDelta(content="Hel"),
        TextDelta(content="lo!"),
        Usage(input_tokens=572, output_tokens=12),
    ]
    (request,) = recorder.requests
    assert request.method == "POST"
    assert str(request.url) == f"{BASE_URL}/v1/messages"
    sent_key = request.headers.get("x-api-key") or request.headers["authorization"]
    assert sent_key.removeprefix("Bearer ") == "sk-ant-test"  # SDK versions differ
    assert "anthropic-version" in request.headers
    assert recorder.body == {
        "model": MODEL,
        "max_tokens": DEFAULT_MAX_TOKENS,
        "messages": [{"role": "user", "content": "hi"}],
        "stream": True,
    }


async def test_tool_use_blocks_become_tool_calls_when_they_stop():
    recorder = Recorder(
        anthropic_stream(
            message_start(300),
            *text_block(0, "Checking both."),
            *tool_block(1, "toolu_01A", "get_weather", "", '{"city": ', '"Paris"}'),
            *tool_block(2, "toolu_01B", "get_weather", '{"city": "Oslo"}'),
            *message_end("tool_use", 89),
        )
    )
    events = await run(recorder, tools=[WEATHER])

    assert events == [
        TextDelta(content="Checking both."),
        ToolCall(id="toolu_01A", name="get_weather", arguments={"city": "Paris"}),
        ToolCall(id="toolu_01B", name="get_weather", arguments={"city": "Oslo"}),
        Usage(input_tokens=300, output_tokens=89),
    ]
    assert recorder.body["tools"] == [
        {
            "name": "get_weather",
            "description": "The weather in a city.",
            "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
        }
    ]


@pytest.mark.parametrize(
    ("fragments", "arguments"),
    [
        (['{"city": "Par'], {INVALID_JSON_KEY: '{"city": "Par'}),
        (["[1]"], {INVALID_JSON_KEY: "[1]"}),
        ([], {}),
        ([""], {}),
    ],
)
async def test_input_that_is_not_a_json_object_is_marked_for_a_retry(fragments, arguments):
    recorder = Recorder(
        anthropic_stream(
            message_start(10),
            *tool_block(0, "toolu_1", "get_weather", *fragments),
            *message_end("tool_use", 5),
        )
    )
    events = await run(recorder)
    assert events[0] == ToolCall(id="toolu_1", name="get_weather", arguments=arguments)


async def test_history_maps_to_anthropic_turns():
    paris = ToolCall(id="toolu_1", name="get_weather", arguments={"city": "Paris"})
    oslo = ToolCall(id="toolu_2", name="get_weather", arguments={"city": "Oslo"})
    messages = [
        Message(role="system", content="Be brief."),
        Message(role="user", content="Weather in Paris and Oslo?"),
        Message(role="assistant", content="Checking.", tool_calls=(paris, oslo)),
        Message(role="tool", tool_call_id="toolu_1", name="get_weather", content='{"temp":21}'),
        Message(role="tool", tool_call_id="toolu_2", name="get_weather", content='{"temp":4}'),
        Message(role="assistant", content=""),  # an empty turn: dropped
        Message(role="user", content="Now finish."),
        Message(role="system", content="Answer in English."),
    ]
    recorder = Recorder(reply_ok())
    await run(recorder, messages, max_tokens=256)

    body = recorder.body
    assert body["system"] == "Be brief.\n\nAnswer in English."
    assert body["max_tokens"] == 256
    assert body["messages"] == [
        {"role": "user", "content": "Weather in Paris and Oslo?"},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Checking."},
                {
                    "type": "tool_use",
                    "id": "toolu_1",
                    "name": "get_weather",
                    "input": {"city": "Paris"},
                },
                {
                    "type": "tool_use",
                    "id": "toolu_2",
                    "name": "get_weather",
                    "input": {"city": "Oslo"},
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": '{"temp":21}'},
                {"type": "tool_result", "tool_use_id": "toolu_2", "content": '{"temp":4}'},
                {"type": "text", "text": "Now finish."},
            ],
        },
    ]


@pytest.mark.parametrize(
    ("messages", "system"),
    [
        (USER, JSON_ONLY),
        (
            [Message(role="system", content="Extract facts."), *USER],
            f"Extract facts.\n\n{JSON_ONLY}",
        ),
    ],
)
async def test_json_output_is_asked_for_in_the_system_prompt(messages, system):
    recorder = Recorder(reply_ok())
    await run(recorder, messages, json_output=True)
    assert recorder.body["system"] == system


async def test_generate_collects_the_stream():
    recorder = Recorder(
        anthropic_stream(
            message_start(20),
            *text_block(0, "Sure. "),
            *tool_block(1, "toolu_9", "get_weather", '{"city": "Rome"}'),
            *message_end("tool_use", 30),
        )
    )
    async with provider_for(recorder) as provider:
        assert isinstance(provider, ChatModel)
        reply = await provider.generate(USER, model=MODEL)
    assert reply == Completion(
        content="Sure. ",
        tool_calls=(ToolCall(id="toolu_9", name="get_weather", arguments={"city": "Rome"}),),
        usage=Usage(input_tokens=20, output_tokens=30),
        model=MODEL,
    )


@pytest.mark.parametrize(
    ("response", "status", "message"),
    [
        (
            anthropic_error(401, "authentication_error", "invalid x-api-key"),
            401,
            r"anthropic rejected the API key .*invalid x-api-key.*check ANTHROPIC_API_KEY",
        ),
        (
            anthropic_error(404, "not_found_error", "model: claude-nope"),
            404,
            rf"model name '{MODEL}'",
        ),
        (
            anthropic_error(429, "rate_limit_error", "Number of requests has exceeded your limit."),
            429,
            "wait and retry",
        ),
        (anthropic_error(500, "api_error", "Internal server error"), 500, "retry later"),
        (anthropic_error(529, "overloaded_error", "Overloaded"), 529, r"Overloaded\); retry later"),
    ],
)
async def test_http_errors_become_provider_errors(response, status, message):
    with pytest.raises(ProviderError, match=message) as info:
        await run(recorder := Recorder(response))
    assert len(recorder.requests) == 1  # max_retries=0
    assert info.value.status == status
    assert info.value.provider == "anthropic"
    assert "sk-ant-test" not in str(info.value)


@pytest.mark.parametrize(
    ("exception", "message"),
    [
        (httpx2.ConnectError("Connection refused"), "cannot reach anthropic at https://claude"),
        (httpx2.ReadTimeout("timed out"), "timed out"),
    ],
)
async def test_network_failures_become_provider_errors(exception, message):
    with pytest.raises(ProviderError, match=message) as info:
        await run(Recorder(exception))
    assert info.value.status is None


async def test_an_error_event_inside_the_stream_is_a_provider_error():
    broken = anthropic_stream(
        message_start(5),
        {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
    )
    with pytest.raises(ProviderError, match=r"broke off the reply \(Overloaded\)") as info:
        await run(Recorder(broken))
    assert info.value.status is None


@pytest.mark.parametrize(
    ("messages", "message"),
    [
        ([Message(role="system", content="only a system prompt")], "at least one user"),
        ([Message(role="tool", content="{}")], "tool_call_id"),
    ],
)
async def test_histories_the_api_would_refuse_are_invalid_input(messages, message):
    with pytest.raises(InvalidInput, match=message) as info:
        await run(Recorder(), messages)
    assert info.value.field == "messages"


def test_a_missing_key_is_a_config_error(monkeypatch, tmp_path):
    for name in ("API_KEY", "AUTH_TOKEN", "PROFILE", "CONFIG_DIR", "FEDERATION_RULE_ID"):
        monkeypatch.delenv(f"ANTHROPIC_{name}", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no credentials profile on disk either
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY"):
        AnthropicProvider(base_url=BASE_URL)


def test_a_missing_sdk_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "anthropic", None)
    with pytest.raises(ConfigError, match=r'pip install "memstack\[anthropic\]"'):
        AnthropicProvider(api_key="k")
