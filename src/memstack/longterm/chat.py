"""ChatSession: a chat loop with long-term memory around any ``ChatModel``: recall
before each call, extraction after.

Before each model call the user's latest message is recalled against the user's
long-term memory and the ``<recalled-memories>`` block goes in as a system message just
before that message; the block is never kept in the history. It holds only the memories
whose calibrated relevance reaches ``min_score`` (``CONTEXT_MIN_SCORE`` by default), so a
message about nothing remembered gets no block. After the reply, the completed turn
(the user's message and the reply) is mined for new memories in the background (fire
and forget): ``send`` does not wait for it, and an extraction failure is logged, never
raised into the chat.

Opt-in and veto: memory is used only when the session has a ``LongTermMemory``
(``create_default_long_term_memory`` returns None unless the caller or
``MEMSTACK_MEMORY_ENABLED`` opts in, and 0/false there is a global veto). The session's
``memory_enabled`` toggle, and the ``memory_enabled`` of one ``send``, veto it when
False: no recall and no extraction for that turn.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Final

from memstack.errors import InvalidInput
from memstack.longterm.calibration import CONTEXT_MIN_SCORE, check_min_score
from memstack.longterm.memory import LongTermMemory
from memstack.longterm.render import render_recalled
from memstack.providers.base import ChatModel, Message

__all__ = ["DEFAULT_RECALL_K", "ChatSession"]

DEFAULT_RECALL_K: Final = 5

_log = logging.getLogger("memstack.longterm")


class ChatSession:
    """One conversation: ``await session.send("...")`` returns the assistant's reply."""

    def __init__(
        self,
        *,
        provider: ChatModel,
        model: str,
        memory: LongTermMemory | None = None,
        memory_enabled: bool | None = None,
        system_prompt: str = "",
        recall_k: int = DEFAULT_RECALL_K,
        history: Sequence[Message] = (),
        min_score: float | None = CONTEXT_MIN_SCORE,
    ) -> None:
        if not isinstance(model, str) or not model.strip():
            raise InvalidInput("model must name the chat model, e.g. 'gpt-4o'.", field="model")
        self.provider, self.model = provider, model
        self.memory = memory
        self.memory_enabled = memory_enabled
        """The session's toggle: False vetoes long-term memory for every turn."""
        self.recall_k = recall_k
        self.min_score = check_min_score(min_score)
        """The calibrated relevance a recalled memory needs to go into the block
        (``CONTEXT_MIN_SCORE`` by default; None or 0 keeps all ``recall_k``)."""
        self.history: list[Message] = list(history)
        """The persisted conversation; recalled blocks are never part of it."""
        if system_prompt and not self.history:
            self.history.append(Message(role="system", content=system_prompt))
        self._extractions: set[asyncio.Task[object]] = set()

    def uses_memory(self, memory_enabled: bool | None = None) -> bool:
        """Whether a turn sent with ``memory_enabled`` recalls and extracts."""
        if self.memory is None or memory_enabled is False or self.memory_enabled is False:
            return False
        return self.memory.is_ready()

    async def send(self, text: str, *, memory_enabled: bool | None = None) -> str:
        """One turn: recall, the model call, then extraction in the background."""
        if not isinstance(text, str) or not text.strip():
            raise InvalidInput("text must be the user's non-empty message.", field="text")
        user = Message(role="user", content=text)
        use_memory = self.uses_memory(memory_enabled)
        messages = [*self.history, *await self._recalled(text, use_memory), user]
        completion = await self.provider.generate(messages, model=self.model)
        reply = Message(role="assistant", content=completion.content)
        self.history.extend([user, reply])
        if use_memory:
            self._extract_later([user, reply])
        return completion.content

    async def _recalled(self, text: str, use_memory: bool) -> list[Message]:
        if not use_memory or self.memory is None:
            return []
        found = await self.memory.recall(text, self.recall_k, min_score=self.min_score)
        block = render_recalled(found)
        return [Message(role="system", content=block)] if block else []

    def _extract_later(self, turn: list[Message]) -> None:
        assert self.memory is not None
        task = asyncio.create_task(self._extract(self.memory, turn))
        self._extractions.add(task)
        task.add_done_callback(self._extractions.discard)

    @staticmethod
    async def _extract(memory: LongTermMemory, turn: list[Message]) -> object:
        try:
            return await memory.remember_conversation(turn)
        except Exception:  # fire and forget: the chat goes on; the failure is logged here
            _log.warning("long-term memory extraction failed", exc_info=True)
            return None

    async def wait_for_extraction(self) -> None:
        """Wait for the background extractions started so far (for shutdown and tests)."""
        while self._extractions:
            await asyncio.gather(*list(self._extractions))
