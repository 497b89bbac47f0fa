"""JSONL export and import of memories: one memory a line, as the REST API shows it
(``id``, ``agent_id``, ``scope``, ``key``, ``value``, ``session_id``, ``metadata``,
``expires_at``, ``created_at``, ``updated_at``, ``provenance``, ``provenance_detail``, ...).

Importing stores each line again through ``POST /api/memories``: a memory's id follows
from its tenant, scope, agent, session and key, so an import into the same tenant
restores the same ids, and a second import changes nothing but ``updated_at``. The
server stamps ``created_at``/``updated_at`` at import time; a memory whose
``expires_at`` has passed is skipped (counted as ``expired``). A line's ``provenance``
(and ``provenance_detail``) is kept, so an export and import round trip loses neither; a
line without one (null, or left out) is stored as ``imported``."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Final, get_args

from memstack.client import _calls as calls
from memstack.client.types import Memory, MemoryPage, Provenance, Scope
from memstack.errors import InvalidInput

__all__ = ["ImportResult", "Pager", "memory_line", "read_export"]

MAX_LIST_OFFSET: Final = 10_000
"""The deepest offset the server pages to (``GET /api/memories``)."""
_FIELDS: Final = ("agent_id", "scope", "key", "value")
IMPORTED: Final[Provenance] = "imported"
"""The provenance of an imported line that carries none."""


@dataclass(frozen=True, kw_only=True)
class ImportResult:
    imported: int
    """Memories stored (created or updated)."""
    expired: int = 0
    """Lines skipped because their ``expires_at`` has passed."""


@dataclass(frozen=True, kw_only=True)
class Plan:
    """What an import will send, decided before anything is written."""

    calls: list[calls.Call[Memory]] = field(default_factory=list)
    result: ImportResult


def memory_line(memory: Memory) -> str:
    return json.dumps(memory, ensure_ascii=False, separators=(",", ":")) + "\n"


class Pager:
    """Offsets of a newest-first listing, and its memories without repeats (a page
    boundary moves when a memory is stored while the listing is read)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._offset: int | None = 0
        self._seen: set[str] = set()

    def next_offset(self) -> int | None:
        return self._offset

    def take(self, page: MemoryPage) -> Iterator[Memory]:
        if page["offset"] == 0 and page["total"] > MAX_LIST_OFFSET + self.limit:
            raise InvalidInput(
                f"{page['total']} memories match; the server pages through at most "
                f"{MAX_LIST_OFFSET + self.limit}. Export one agent (agent_id) or scope at a time.",
                field="agent_id",
            )
        done = len(page["memories"]) < self.limit or page["offset"] + self.limit >= page["total"]
        self._offset = None if done else page["offset"] + self.limit
        for memory in page["memories"]:
            if memory["id"] not in self._seen:
                self._seen.add(memory["id"])
                yield memory


def read_export(lines: Iterable[str], *, now: datetime | None = None) -> Plan:
    """Check every line of an export and plan its import; ``InvalidInput`` names the
    first malformed line (``field="line N"``) and nothing is written."""
    moment = now or datetime.now(UTC)
    planned: list[calls.Call[Memory]] = []
    expired = 0
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        call = _line_call(_parse(text, number), number, moment)
        if call is None:
            expired += 1
        else:
            planned.append(call)
    return Plan(calls=planned, result=ImportResult(imported=len(planned), expired=expired))


def _parse(text: str, number: int) -> dict[str, object]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _bad(number, f"is not JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(data, dict):
        raise _bad(number, "is not a JSON object; each line holds one exported memory")
    for name in _FIELDS:
        if not isinstance(data.get(name), str):
            raise _bad(number, f"needs {name} as a string, as `memstack memories export` writes")
    if data["scope"] not in get_args(Scope):
        raise _bad(number, f"has scope {data['scope']!r}; use session, agent or global")
    provenance = data.get("provenance")
    if provenance is not None and provenance not in get_args(Provenance):
        raise _bad(
            number,
            f"has provenance {provenance!r}; use {', '.join(get_args(Provenance))} or null",
        )
    for name in ("session_id", "expires_at", "provenance_detail"):
        if data.get(name) is not None and not isinstance(data[name], str):
            raise _bad(number, f"needs {name} as a string or null")
    if not isinstance(data.get("metadata") or {}, dict):
        raise _bad(number, "needs metadata as a JSON object")
    return data


def _line_call(data: dict[str, object], number: int, now: datetime) -> calls.Call[Memory] | None:
    expires_at = data.get("expires_at")
    if isinstance(expires_at, str):
        try:
            moment = datetime.fromisoformat(expires_at.replace("Z", "+00:00"))
        except ValueError:
            raise _bad(number, f"has expires_at {expires_at!r}, not an ISO 8601 time") from None
        if (moment if moment.tzinfo else moment.replace(tzinfo=UTC)) <= now:
            return None
    session = data.get("session_id")
    metadata = data.get("metadata") or {}
    detail = data.get("provenance_detail")
    return calls.store(
        str(data["agent_id"]),
        str(data["key"]),
        str(data["value"]),
        scope=data["scope"],  # type: ignore[arg-type]  # checked against Scope in _parse
        session_id=session if isinstance(session, str) else None,
        metadata=metadata,  # type: ignore[arg-type]  # a JSON object, checked in _parse
        ttl=expires_at if isinstance(expires_at, str) else None,
        provenance=data.get("provenance") or IMPORTED,  # type: ignore[arg-type]  # checked in _parse
        provenance_detail=detail if isinstance(detail, str) else None,
    )


def _bad(number: int, problem: str) -> InvalidInput:
    return InvalidInput(f"line {number} {problem}.", field=f"line {number}")
