"""ScriptedProvider: a real ChatModel that replays a script, for tests and examples."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from dataclasses import dataclass

from memstack._json import dumps, to_json
from memstack.errors import ConfigError
from memstack.providers.base import (
    Completion,
    Message,
    StreamEvent,
    StreamingChatModel,
    TextDelta,
    ToolCall,
)
from memstack.tools import ProviderTool

__all__ = ["ScriptedCall", "ScriptedProvider"]

Reply = str | Completion | ToolCall
Responder = Callable[[Sequence[Message]], Reply]


@dataclass(frozen=True, kw_only=True)
class ScriptedCall:
    """What the provider was asked, for assertions."""

    messages: tuple[Message, ...]
    model: str
    tools: tuple[ProviderTool, ...]
    json_output: bool

    @property
    def tool_names(self) -> list[str]:
        return [t.name for t in self.tools]


class ScriptedProvider(StreamingChatModel):
    """Answers each call with the next scripted reply, or with ``responder(messages)``.

    A reply is a ``Completion`` (text and/or tool calls), one ``ToolCall``, or plain
    text. Text streams in word-sized deltas, then each tool call, then usage. Running
    out of script is an error that says how many replies were scripted, so a test never
    hangs or guesses.
    """

    provider_name = "scripted"

    def __init__(
        self, replies: Iterable[Reply] = (), *, responder: Responder | None = None
    ) -> None:
        self._replies = list(replies)
        self._responder = responder
        self._lock = threading.Lock()
        self.calls: list[ScriptedCall] = []

    async def stream(
        self,
        messages: Sequence[Message],
        *,
        model: str,
        tools: Sequence[ProviderTool] = (),
        json_output: bool = False,
        max_tokens: int | None = None,
    ) -> AsyncIterator[StreamEvent]:
        reply = self._next(messages, model, tools, json_output)
        for piece in _pieces(reply.content):
            yield TextDelta(content=piece)
        for call in reply.tool_calls:
            yield call
        yield reply.usage

    def _next(
        self,
        messages: Sequence[Message],
        model: str,
        tools: Sequence[ProviderTool],
        json_output: bool,
    ) -> Completion:
        with self._lock:
            index = len(self.calls)
            self.calls.append(
                ScriptedCall(
                    messages=tuple(messages),
                    model=model,
                    tools=tuple(tools),
                    json_output=json_output,
                )
            )
            if self._responder is None and index >= len(self._replies):
                raise ConfigError(
                    f"ScriptedProvider was called {index + 1} times but only "
                    f"{len(self._replies)} replies were scripted; add replies or a responder."
                )
            reply = self._replies[index] if index < len(self._replies) else None
        if reply is None:
            assert self._responder is not None
            reply = self._responder(messages)
        if isinstance(reply, ToolCall):
            return Completion(tool_calls=(reply,), model=model)
        return reply if isinstance(reply, Completion) else Completion(content=reply, model=model)

    @staticmethod
    def tool_call(
        name: str, arguments: dict[str, object], *, call_id: str | None = None
    ) -> ToolCall:
        """A ToolCall for a script, with a generated id when none is given."""
        args = to_json(arguments, field="arguments")
        assert isinstance(args, dict)
        digest = hashlib.sha1(f"{name}:{dumps(args)}".encode()).hexdigest()[:10]
        return ToolCall(id=call_id or f"call_{digest}", name=name, arguments=args)


def _pieces(text: str) -> list[str]:
    """Split text into word-sized deltas, keeping every character."""
    if not text:
        return []
    out, current = [], ""
    for ch in text:
        current += ch
        if ch == " ":
            out.append(current)
            current = ""
    if current:
        out.append(current)
    return out
