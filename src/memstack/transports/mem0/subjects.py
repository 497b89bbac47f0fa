"""memstack's memories as mem0 sees them (``Subject``), and in mem0's JSON shapes.

Where each mem0 entity lives in memstack (``docs/mem0.md`` draws the table):

- ``user_id``: that user's conversation memory (``/api/users/{user_id}``): a message is a
  turn kept verbatim, its ``run_id`` the turn's session, ``agent_id`` and ``app_id``
  kept in its metadata.
- ``agent_id`` without a ``user_id``: the agent's keyed memories, scope ``agent``, or
  ``session`` with the ``run_id`` as the session.
- ``app_id`` alone: a ``global`` memory (every agent of the tenant reads it) of the agent
  named by the ``app_id``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Final

from memstack._json import JSON
from memstack.longterm.turns import spoken
from memstack.longterm.types import LongTermItem
from memstack.service.types import Memory
from memstack.service.users import ORIGIN_KEY
from memstack.transports.mem0.filters import Subject
from memstack.transports.mem0.ids import user_memory_id

__all__ = [
    "DEFAULT_RUN",
    "HIDDEN_KEYS",
    "agent_subject",
    "history_out",
    "iso",
    "memory_out",
    "user_subject",
]

DEFAULT_RUN: Final = "default"
"""The session of a user's messages added without a ``run_id``."""
HIDDEN_KEYS: Final = frozenset(
    {"speaker", "session_id", "turn_seq", "agent_id", "app_id", ORIGIN_KEY}
)
"""Metadata keys memstack keeps for mem0's entities and a turn's place: shown as fields
of their own (``run_id``, ``agent_id``), never in ``metadata``."""


def user_subject(user_id: str, item: LongTermItem) -> Subject:
    said = spoken(item.text, item.metadata)
    return Subject(
        id=user_memory_id(user_id, _text(item.metadata.get(ORIGIN_KEY)) or item.id),
        text=item.text if said is None else said,
        user_id=user_id,
        agent_id=_text(item.metadata.get("agent_id")),
        app_id=_text(item.metadata.get("app_id")),
        run_id=_text(item.metadata.get("session_id")),
        created_at=item.valid_from if item.valid_from is not None else item.created_at,
        updated_at=item.updated_at,
        categories=(item.kind,),
        metadata=_shown(item.metadata),
    )


def agent_subject(memory: Memory) -> Subject:
    app = _text(memory.metadata.get("app_id"))
    is_global = memory.scope == "global"
    return Subject(
        id=memory.id,
        text=memory.value,
        agent_id=None if is_global and app == memory.agent_id else memory.agent_id,
        app_id=app,
        run_id=memory.session_id if memory.scope == "session" else None,
        created_at=memory.valid_from if memory.valid_from is not None else memory.created_at,
        updated_at=memory.updated_at,
        categories=(memory.scope,),
        metadata=_shown(memory.metadata),
    )


def memory_out(subject: Subject, *, score: float | None = None) -> dict[str, JSON]:
    """A memory in the shape mem0's documentation shows."""
    out: dict[str, JSON] = {
        "id": subject.id,
        "memory": subject.text,
        "hash": hashlib.md5(subject.text.encode(), usedforsecurity=False).hexdigest(),
        "user_id": subject.user_id,
        "agent_id": subject.agent_id,
        "app_id": subject.app_id,
        "run_id": subject.run_id,
        "session_id": subject.run_id,
        "metadata": dict(subject.metadata),
        "categories": list(subject.categories),
        "created_at": iso(subject.created_at),
        "updated_at": iso(subject.updated_at),
        "expiration_date": None,
        "immutable": False,
    }
    if score is not None:
        out["score"] = score
    return out


def history_out(memory_id: str, versions: list[Subject], closed: str | None) -> list[JSON]:
    """mem0's history of a memory from its versions, oldest first: ``ADD`` for the
    first, ``UPDATE`` for each new text, ``DELETE`` when the last was closed (``closed``,
    the time it was, as ISO 8601)."""
    out: list[JSON] = []
    before: Subject | None = None
    for n, version in enumerate(versions):
        out.append(_event(memory_id, n, "ADD" if before is None else "UPDATE", before, version))
        before = version
    if before is not None and closed is not None:
        gone = _event(memory_id, len(versions), "DELETE", before, None)
        gone["created_at"] = gone["updated_at"] = closed
        out.append(gone)
    return out


def _event(
    memory_id: str, n: int, event: str, old: Subject | None, new: Subject | None
) -> dict[str, JSON]:
    subject = new or old
    assert subject is not None
    return {
        "id": f"{memory_id}#{n}",
        "memory_id": memory_id,
        "input": [],
        "old_memory": None if old is None else old.text,
        "new_memory": None if new is None else new.text,
        "event": event,
        "user_id": subject.user_id,
        "agent_id": subject.agent_id,
        "app_id": subject.app_id,
        "session_id": subject.run_id,
        "categories": list(subject.categories),
        "metadata": dict(subject.metadata),
        "created_at": iso(subject.created_at),
        "updated_at": iso(subject.updated_at),
    }


def iso(at: float) -> str:
    return datetime.fromtimestamp(at, tz=timezone.utc).isoformat()  # noqa: UP017


def _shown(metadata: Mapping[str, JSON]) -> dict[str, JSON]:
    return {k: v for k, v in metadata.items() if k not in HIDDEN_KEYS}


def _text(value: JSON | None) -> str | None:
    return value if isinstance(value, str) else None
