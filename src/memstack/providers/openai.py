"""OpenAIProvider: Chat Completions on OpenAI or any OpenAI-compatible server (Ollama,
vLLM, LM Studio, ...), through the official ``openai`` SDK (``memstack[openai]``).

Replies are always streamed (``stream_options.include_usage`` for the token counts).
Tool-call arguments arrive in fragments keyed by ``index``; each call is yielded whole
once the choice finishes.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from memstack._json import JSONObject, dumps
from memstack.errors import ConfigError, InvalidInput
from memstack.providers._common import (
    DEFAULT_MAX_RETRIES,
    Endpoint,
    missing_sdk,
    parse_arguments,
    translate_error,
)
from memstack.providers.base import (
    Message,
    StreamEvent,
    StreamingChatModel,
    TextDelta,
    ToolCall,
    Usage,
)
from memstack.tools import ProviderTool

if TYPE_CHECKING:
    import httpx2
    from openai import AsyncStream
    from openai.types.chat import ChatCompletionChunk
    from openai.types.chat.chat_completion_chunk import ChoiceDeltaToolCall

__all__ = ["OpenAIProvider", "openai_messages"]


class OpenAIProvider(StreamingChatModel):
    """A ChatModel over the Chat Completions API.

    ``api_key`` and ``base_url`` default to what the SDK finds (``OPENAI_API_KEY``,
    ``OPENAI_BASE_URL``); a local server that takes no key still needs a placeholder
    such as ``"none"``. ``http_client`` is handed to the SDK (tests pass one with a mock
    transport); ``aclose()`` closes it. ``provider_name`` names the server in errors.
    """

    def __init__(
        self,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        http_client: httpx2.AsyncClient | None = None,
        max_retries: int = DEFAULT_MAX_RETRIES,
        provider_name: str = "openai",
    ) -> None:
        try:
            import openai
        except ImportError as exc:
            raise missing_sdk("OpenAIProvider", "openai") from exc
        self.provider_name = provider_name
        try:
            self._client = openai.AsyncOpenAI(
                api_key=api_key, base_url=base_url, http_client=http_client, max_retries=max_retries
            )
        except openai.OpenAIError as exc:
            raise ConfigError(
                f"{provider_name} needs an API key: pass api_key= or set OPENAI_API_KEY "
                "(a local server that takes none still needs a placeholder such as 'none')."
            ) from exc
        self.base_url = str(self._client.base_url).rstrip("/")
        self._endpoint = Endpoint(
            provider=provider_name,
            base_url=self.base_url,
            key_hint="OPENAI_API_KEY (or the api_key you passed)"
            if provider_name == "openai"
            else f"the API key the server at {self.base_url} expects",
        )

    async def stream(
        self,
        messages: Sequence[Message],
        *,
        model: str,
        tools: Sequence[ProviderTool] = (),
        json_output: bool = False,
        max_tokens: int | None = None,
    ) -> AsyncIterator[StreamEvent]:
        import openai

        options = self._options(tools, json_output, max_tokens)
        try:
            chunks: AsyncStream[ChatCompletionChunk] = await self._client.chat.completions.create(
                model=model,
                messages=cast(Any, openai_messages(messages)),  # the SDK's TypedDicts
                stream=True,
                stream_options={"include_usage": True},
                **options,
            )
            async with chunks:
                async for event in _events(chunks):
                    yield event
        except openai.APIError as exc:
            raise translate_error(openai, exc, self._endpoint, model) from exc

    async def aclose(self) -> None:
        """Close the SDK client and its HTTP client."""
        await self._client.close()

    def _options(
        self, tools: Sequence[ProviderTool], json_output: bool, max_tokens: int | None
    ) -> dict[str, Any]:
        options: dict[str, Any] = {}
        if tools:
            options["tools"] = [tool.to_openai() for tool in tools]
        if json_output:
            options["response_format"] = {"type": "json_object"}
        if max_tokens is not None:
            # OpenAI's newer models take only max_completion_tokens; compatible servers
            # (Ollama, older vLLM, LM Studio) know max_tokens.
            limit = "max_completion_tokens" if self.provider_name == "openai" else "max_tokens"
            options[limit] = max_tokens
        return options


# -- messages out ----------------------------------------------------------------------


def openai_messages(messages: Sequence[Message]) -> list[JSONObject]:
    """``messages`` as the Chat Completions API takes them."""
    return [_message(message) for message in messages]


def _message(message: Message) -> JSONObject:
    if message.role == "tool":
        if not message.tool_call_id:
            raise InvalidInput(
                "a tool message needs the tool_call_id of the call it answers.", field="messages"
            )
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}
    if message.role == "assistant" and message.tool_calls:
        return {
            "role": "assistant",
            "content": message.content or None,
            "tool_calls": [_call(call) for call in message.tool_calls],
        }
    return {"role": message.role, "content": message.content}


def _call(call: ToolCall) -> JSONObject:
    return {
        "id": call.id,
        "type": "function",
        "function": {"name": call.name, "arguments": dumps(call.arguments)},
    }


# -- events in -------------------------------------------------------------------------


async def _events(chunks: AsyncIterable[ChatCompletionChunk]) -> AsyncIterator[StreamEvent]:
    calls = _PendingCalls()
    usage = Usage()
    async for chunk in chunks:
        if chunk.usage is not None:
            usage = Usage(
                input_tokens=chunk.usage.prompt_tokens,
                output_tokens=chunk.usage.completion_tokens,
            )
        for choice in chunk.choices:
            if choice.index != 0:
                continue
            text = choice.delta.content or choice.delta.refusal
            if text:
                yield TextDelta(content=text)
            calls.add(choice.delta.tool_calls or ())
            if choice.finish_reason is not None:
                for call in calls.flush():
                    yield call
    for call in calls.flush():
        yield call
    yield usage


@dataclass
class _Pending:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


class _PendingCalls:
    """Tool calls assembled from their streamed fragments."""

    def __init__(self) -> None:
        self._calls: list[_Pending] = []
        self._by_index: dict[int, _Pending] = {}

    def add(self, deltas: Iterable[ChoiceDeltaToolCall]) -> None:
        for delta in deltas:
            pending = self._by_index.get(delta.index)
            if pending is None or (delta.id and pending.id and delta.id != pending.id):
                # some servers reuse index 0 for every call; a new id starts a new call
                pending = self._by_index[delta.index] = _Pending()
                self._calls.append(pending)
            pending.id = delta.id or pending.id
            if delta.function is not None:
                pending.name = delta.function.name or pending.name
                pending.arguments.append(delta.function.arguments or "")

    def flush(self) -> list[ToolCall]:
        done = [
            ToolCall(
                id=pending.id or f"call_{n}",
                name=pending.name,
                arguments=parse_arguments("".join(pending.arguments)),
            )
            for n, pending in enumerate(self._calls)
        ]
        self._calls, self._by_index = [], {}
        return done
