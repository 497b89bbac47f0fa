"""The provider seam: chat messages, tool calls, streamed events, and the ChatModel protocol.

Real providers (OpenAI-compatible, Anthropic) and the ScriptedProvider implement
``ChatModel``; everything that needs an LLM (extraction, agents) takes one. A provider
streams ``TextDelta`` events as text arrives, each ``ToolCall`` once its arguments are
complete, and one ``Usage`` at the end; ``generate`` is the same call collected.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Final, Literal, Protocol, Self, runtime_checkable

from memstack._json import JSONObject
from memstack.tools import ProviderTool

__all__ = [
    "INVALID_JSON_KEY",
    "ChatModel",
    "Completion",
    "Message",
    "Role",
    "StreamEvent",
    "StreamingChatModel",
    "TextDelta",
    "ToolCall",
    "Usage",
    "collect",
]

Role = Literal["system", "user", "assistant", "tool"]

INVALID_JSON_KEY: Final = "__invalid_json__"
"""The one key of a tool call's arguments when the model streamed text that is not a JSON
object (its value is that text); the step executor then tells the model to call again."""


@dataclass(frozen=True, kw_only=True)
class ToolCall:
    id: str
    name: str
    arguments: JSONObject


@dataclass(frozen=True, kw_only=True)
class Message:
    role: Role
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    """Calls an assistant message makes."""
    tool_call_id: str | None = None
    """On a tool message: the call it answers."""
    name: str | None = None


@dataclass(frozen=True, kw_only=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0


@dataclass(frozen=True, kw_only=True)
class TextDelta:
    content: str


StreamEvent = TextDelta | ToolCall | Usage


@dataclass(frozen=True, kw_only=True)
class Completion:
    """One model turn: text, tool calls, or both."""

    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = Usage()
    model: str | None = None


@runtime_checkable
class ChatModel(Protocol):
    """An LLM that continues a conversation."""

    def stream(
        self,
        messages: Sequence[Message],
        *,
        model: str,
        tools: Sequence[ProviderTool] = (),
        json_output: bool = False,
        max_tokens: int | None = None,
    ) -> AsyncIterator[StreamEvent]:
        """The model's turn as events: text deltas, complete tool calls, then usage."""
        ...

    async def generate(
        self,
        messages: Sequence[Message],
        *,
        model: str,
        tools: Sequence[ProviderTool] = (),
        json_output: bool = False,
        max_tokens: int | None = None,
    ) -> Completion:
        """The model's whole turn (``stream`` collected). ``json_output`` asks for a JSON
        object as the whole reply."""
        ...


class StreamingChatModel(ABC):
    """A ChatModel written as ``stream`` alone: ``generate`` collects it, and the model
    works as an async context manager that ``aclose``s what it holds."""

    @abstractmethod
    def stream(
        self,
        messages: Sequence[Message],
        *,
        model: str,
        tools: Sequence[ProviderTool] = (),
        json_output: bool = False,
        max_tokens: int | None = None,
    ) -> AsyncIterator[StreamEvent]: ...

    async def generate(
        self,
        messages: Sequence[Message],
        *,
        model: str,
        tools: Sequence[ProviderTool] = (),
        json_output: bool = False,
        max_tokens: int | None = None,
    ) -> Completion:
        events = self.stream(
            messages, model=model, tools=tools, json_output=json_output, max_tokens=max_tokens
        )
        return await collect(events, model=model)

    async def aclose(self) -> None:  # noqa: B027 (optional hook: most models hold nothing)
        """Release clients the model holds; nothing by default."""

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


async def collect(events: AsyncIterator[StreamEvent], *, model: str | None = None) -> Completion:
    """A ``Completion`` from a stream of events; providers implement ``generate`` with it."""
    text: list[str] = []
    calls: list[ToolCall] = []
    usage = Usage()
    async for event in events:
        if isinstance(event, TextDelta):
            text.append(event.content)
        elif isinstance(event, ToolCall):
            calls.append(event)
        else:
            usage = event
    return Completion(content="".join(text), tool_calls=tuple(calls), usage=usage, model=model)
