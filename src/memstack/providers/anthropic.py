"""AnthropicProvider: the Anthropic Messages API through the official ``anthropic`` SDK
(``memstack[anthropic]``).

System messages become the top-level ``system``; tool results become ``tool_result``
blocks in a user turn, and consecutive turns of one role are merged, as the API wants.
Replies are streamed; a tool call is yielded whole when its content block stops.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, cast

from memstack._json import JSON, JSONObject, to_json
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
    from anthropic import AsyncStream
    from anthropic.types import (
        MessageDeltaUsage,
        RawContentBlockDelta,
        RawMessageStreamEvent,
    )
    from anthropic.types import Usage as AnthropicUsage
    from anthropic.types.raw_content_block_start_event import ContentBlock

__all__ = ["DEFAULT_MAX_TOKENS", "AnthropicProvider", "anthropic_messages"]

DEFAULT_MAX_TOKENS: Final = 4096
"""The API requires ``max_tokens``; this is sent when the caller gives none."""
JSON_ONLY: Final = "Reply with one JSON object and nothing else: no prose, no code fences."


class AnthropicProvider(StreamingChatModel):
    """A ChatModel over the Messages API.

    ``api_key`` and ``base_url`` default to what the SDK finds (``ANTHROPIC_API_KEY``,
    ``ANTHROPIC_BASE_URL``). ``http_client`` is handed to the SDK (tests pass one with a
    mock transport); ``aclose()`` closes it. ``json_output`` is asked for in the system
    prompt, since the API has no plain JSON mode.
    """

    provider_name = "anthropic"

    def __init__(
        self,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        http_client: httpx2.AsyncClient | None = None,
        max_retries: int = DEFAULT_MAX_RETRIES,
    ) -> None:
        try:
            import anthropic
        except ImportError as exc:
            raise missing_sdk("AnthropicProvider", "anthropic") from exc
        try:
            self._client = anthropic.AsyncAnthropic(
                api_key=api_key, base_url=base_url, http_client=http_client, max_retries=max_retries
            )
        except anthropic.AnthropicError as exc:  # e.g. a broken credentials profile
            raise ConfigError(f"AnthropicProvider cannot find its credentials: {exc}") from exc
        client = self._client
        credentials = getattr(client, "credentials", None)  # older SDKs have no credentials
        if client.api_key is None and client.auth_token is None and credentials is None:
            raise ConfigError(
                "AnthropicProvider needs an API key: pass api_key= or set ANTHROPIC_API_KEY."
            )
        self.base_url = str(self._client.base_url).rstrip("/")
        self._endpoint = Endpoint(
            provider=self.provider_name,
            base_url=self.base_url,
            key_hint="ANTHROPIC_API_KEY (or the api_key you passed)",
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
        import anthropic

        system, turns = anthropic_messages(messages)
        if json_output:
            system = f"{system}\n\n{JSON_ONLY}" if system else JSON_ONLY
        options: dict[str, Any] = {}
        if system:
            options["system"] = system
        if tools:
            options["tools"] = [tool.to_anthropic() for tool in tools]
        try:
            events: AsyncStream[RawMessageStreamEvent] = await self._client.messages.create(
                model=model,
                max_tokens=max_tokens or DEFAULT_MAX_TOKENS,
                messages=cast(Any, turns),  # the SDK's TypedDicts, same wire shape
                stream=True,
                **options,
            )
            async with events:
                async for event in _Turn().events(events):
                    yield event
        except anthropic.APIError as exc:
            raise translate_error(anthropic, exc, self._endpoint, model) from exc

    async def aclose(self) -> None:
        """Close the SDK client and its HTTP client."""
        await self._client.close()


# -- messages out ----------------------------------------------------------------------


def anthropic_messages(messages: Sequence[Message]) -> tuple[str, list[JSONObject]]:
    """``messages`` as the Messages API takes them: the system text, and the turns."""
    system = "\n\n".join(m.content for m in messages if m.role == "system" and m.content)
    turns: list[tuple[str, list[JSONObject]]] = []
    for message in messages:
        if message.role == "system":
            continue
        role = "assistant" if message.role == "assistant" else "user"
        blocks = _blocks(message)
        if not blocks:
            continue  # the API refuses empty turns
        if turns and turns[-1][0] == role:
            turns[-1][1].extend(blocks)
        else:
            turns.append((role, blocks))
    if not turns:
        raise InvalidInput(
            "Anthropic needs at least one user or assistant message besides the system prompt.",
            field="messages",
        )
    return system, [{"role": role, "content": _content(blocks)} for role, blocks in turns]


def _blocks(message: Message) -> list[JSONObject]:
    if message.role == "tool":
        if not message.tool_call_id:
            raise InvalidInput(
                "a tool message needs the tool_call_id of the call it answers.", field="messages"
            )
        result: JSONObject = {"type": "tool_result", "tool_use_id": message.tool_call_id}
        if message.content:
            result["content"] = message.content
        return [result]
    blocks: list[JSONObject] = []
    if message.content.strip():  # the API refuses blank text blocks
        blocks.append({"type": "text", "text": message.content})
    for call in message.tool_calls:
        blocks.append(
            {"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments}
        )
    return blocks


def _content(blocks: list[JSONObject]) -> JSON:
    """A lone text block as a plain string, as the API also takes it."""
    if len(blocks) == 1 and blocks[0]["type"] == "text":
        return blocks[0]["text"]
    as_json: list[JSON] = [*blocks]
    return as_json


# -- events in -------------------------------------------------------------------------


@dataclass
class _PendingCall:
    id: str
    name: str
    initial: JSONObject
    parts: list[str] = field(default_factory=list)

    def done(self) -> ToolCall:
        arguments = parse_arguments("".join(self.parts)) if self.parts else self.initial
        return ToolCall(id=self.id, name=self.name, arguments=arguments)


class _Turn:
    """Turns the SDK's raw stream events into ours."""

    def __init__(self) -> None:
        self.calls: dict[int, _PendingCall] = {}
        self.usage = Usage()

    async def events(
        self, stream: AsyncIterable[RawMessageStreamEvent]
    ) -> AsyncIterator[StreamEvent]:
        async for event in stream:
            for out in self._handle(event):
                yield out
        yield self.usage

    def _handle(self, event: RawMessageStreamEvent) -> list[StreamEvent]:
        if event.type == "message_start":
            self._count(event.message.usage)
        elif event.type == "message_delta":
            self._count(event.usage)
        elif event.type == "content_block_start":
            return self._start(event.index, event.content_block)
        elif event.type == "content_block_delta":
            return self._delta(event.index, event.delta)
        elif event.type == "content_block_stop" and event.index in self.calls:
            return [self.calls.pop(event.index).done()]
        return []

    def _count(self, used: AnthropicUsage | MessageDeltaUsage) -> None:
        """Both counts are running totals; input counts cache writes and reads too."""
        inputs = self.usage.input_tokens
        if used.input_tokens is not None:
            cached = (used.cache_creation_input_tokens or 0) + (used.cache_read_input_tokens or 0)
            inputs = used.input_tokens + cached
        self.usage = Usage(input_tokens=inputs, output_tokens=used.output_tokens)

    def _start(self, index: int, block: ContentBlock) -> list[StreamEvent]:
        if block.type == "tool_use":
            initial = to_json(block.input or {}, field="input")
            self.calls[index] = _PendingCall(
                id=block.id, name=block.name, initial=initial if isinstance(initial, dict) else {}
            )
        elif block.type == "text" and block.text:
            return [TextDelta(content=block.text)]
        return []

    def _delta(self, index: int, delta: RawContentBlockDelta) -> list[StreamEvent]:
        if delta.type == "text_delta" and delta.text:
            return [TextDelta(content=delta.text)]
        if delta.type == "input_json_delta" and index in self.calls:
            self.calls[index].parts.append(delta.partial_json)
        return []
