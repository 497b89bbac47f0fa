"""ScriptedProvider: a real ChatModel that replays a script, for tests and examples."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from memstack._json import JSONObject
from memstack.errors import ConfigError
from memstack.providers.base import Completion, Message

__all__ = ["ScriptedCall", "ScriptedProvider"]

Reply = str | Completion
Responder = Callable[[Sequence[Message]], Reply]


@dataclass(frozen=True, kw_only=True)
class ScriptedCall:
    """What the provider was asked, for assertions."""

    messages: tuple[Message, ...]
    model: str
    tools: tuple[JSONObject, ...]
    json_output: bool


class ScriptedProvider:
    """Answers each call with the next scripted reply, or with ``responder(messages)``.

    A reply is a ``Completion`` or plain text. Running out of script is an error
    that says how many replies were scripted, so a test never hangs or guesses.
    """

    def __init__(
        self, replies: Iterable[Reply] = (), *, responder: Responder | None = None
    ) -> None:
        self._replies = list(replies)
        self._responder = responder
        self._lock = threading.Lock()
        self.calls: list[ScriptedCall] = []

    async def generate(
        self,
        messages: Sequence[Message],
        *,
        model: str,
        tools: Sequence[JSONObject] = (),
        json_output: bool = False,
        max_tokens: int | None = None,
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
        return reply if isinstance(reply, Completion) else Completion(content=reply, model=model)
