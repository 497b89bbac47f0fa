"""mem0's memory and event ids, for memories memstack keeps in two places.

mem0 addresses a memory by its id alone (``GET /v1/memories/{id}/``). An agent's memory
(memstack's keyed memories) is found by its id alone too, so its mem0 id is its memstack
id. A user's memory lives in that user's collection, so its mem0 id carries the user:
``u.<user id, base64url>.<record id>``. An extraction job is an event of its user:
``j.<user id, base64url>.<job id>``. Every id is the caller's tenant's: the tenant comes
from the API key, never from the id.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from typing import Final

__all__ = ["UserRef", "event_id", "parse_event_id", "parse_memory_id", "user_memory_id"]

_USER: Final = "u"
_JOB: Final = "j"
_MAX_ID_CHARS: Final = 1_000


@dataclass(frozen=True, kw_only=True)
class UserRef:
    """A record (a memory or a job) of one user."""

    user_id: str
    item_id: str


def user_memory_id(user_id: str, record_id: str) -> str:
    return f"{_USER}.{_encode(user_id)}.{record_id}"


def event_id(user_id: str, job_id: str) -> str:
    return f"{_JOB}.{_encode(user_id)}.{job_id}"


def parse_memory_id(memory_id: str) -> UserRef | str | None:
    """A user's memory, an agent's memory id (returned as it is), or None for an id
    that names neither."""
    if not memory_id or len(memory_id) > _MAX_ID_CHARS:
        return None
    if not memory_id.startswith(f"{_USER}."):
        return memory_id
    return _parsed(memory_id)


def parse_event_id(value: str) -> UserRef | None:
    if not value.startswith(f"{_JOB}.") or len(value) > _MAX_ID_CHARS:
        return None
    return _parsed(value)


def _parsed(value: str) -> UserRef | None:
    parts = value.split(".", 2)
    if len(parts) != 3 or not parts[2]:
        return None
    user_id = _decode(parts[1])
    return None if user_id is None else UserRef(user_id=user_id, item_id=parts[2])


def _encode(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def _decode(text: str) -> str | None:
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        return raw.decode() or None
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None
