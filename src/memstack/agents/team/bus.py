"""MessageBus: direct and broadcast messages between the members of a team."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from memstack.clock import Clock, SystemClock, now_ms
from memstack.errors import InvalidInput

__all__ = ["BROADCAST", "MessageBus", "TeamMessage"]

BROADCAST: Final = "*"
"""The recipient that means every member but the sender."""


@dataclass(frozen=True, kw_only=True)
class TeamMessage:
    sender: str
    to: str
    """A member's name, or ``"*"`` for everyone."""
    content: str
    sent_at: int
    """Milliseconds since the epoch."""


class MessageBus:
    """Each member has an inbox of unread messages; ``inbox`` hands them over once.

    Safe to use from several threads and asyncio tasks at once.
    """

    def __init__(self, members: Iterable[str] = (), *, clock: Clock | None = None) -> None:
        self._clock: Clock = clock or SystemClock()
        self._inboxes: dict[str, list[TeamMessage]] = {}
        self._lock = threading.Lock()
        for name in members:
            self.register(name)

    @property
    def members(self) -> list[str]:
        with self._lock:
            return list(self._inboxes)

    def register(self, name: str) -> None:
        """Add a member; registering a member twice is harmless."""
        if not isinstance(name, str) or not name.strip() or name == BROADCAST:
            raise InvalidInput(
                f"a member name must be a non-empty string other than {BROADCAST!r}; got {name!r}.",
                field="name",
            )
        with self._lock:
            self._inboxes.setdefault(name, [])

    def send(self, *, sender: str, to: str, content: str) -> TeamMessage:
        """Deliver ``content`` to member ``to``, or with ``to="*"`` to every other member."""
        if not isinstance(content, str) or not content.strip():
            raise InvalidInput("content must be a non-empty string.", field="content")
        with self._lock:
            self._check_member(sender, "sender")
            if to != BROADCAST:
                self._check_member(to, "to")
            message = TeamMessage(
                sender=sender, to=to, content=content, sent_at=now_ms(self._clock)
            )
            recipients = [n for n in self._inboxes if n != sender] if to == BROADCAST else [to]
            for name in recipients:
                self._inboxes[name].append(message)
        return message

    def inbox(self, agent: str) -> list[TeamMessage]:
        """The unread messages for ``agent``, oldest first; they are marked read."""
        with self._lock:
            self._check_member(agent, "agent")
            unread, self._inboxes[agent] = self._inboxes[agent], []
        return unread

    def unread_count(self, agent: str) -> int:
        """How many messages wait for ``agent``, without reading them."""
        with self._lock:
            self._check_member(agent, "agent")
            return len(self._inboxes[agent])

    def _check_member(self, name: str, field: str) -> None:
        if name not in self._inboxes:
            known = ", ".join(repr(n) for n in self._inboxes) or "none"
            everyone = f' (or "{BROADCAST}" for everyone)' if field == "to" else ""
            raise InvalidInput(
                f"{name!r} is not a member of the team; the members are {known}{everyone}.",
                field=field,
            )
