"""JSONL export and import of memories with their history: one version of a memory a
line, as ``GET /api/memories?include_superseded=true`` lists it (``id``, ``agent_id``,
``scope``, ``key``, ``value``, ``session_id``, ``metadata``, ``expires_at``,
``created_at``, ``updated_at``, ``valid_from``, ``valid_to``, ``superseded_by``,
``closed_reason``, ``version_id``, ``provenance``, ``provenance_detail``): every current and closed
version, newest first, paged by cursor, however many there are.

Importing groups the lines by memory (agent, scope, session, key) and writes each memory
back with all its versions through ``POST /api/memories/restore``: values, times,
validity and history come back as exported, and the ids too within one tenant (an id
follows from the tenant and the identity), so exporting the restored store gives the
same lines. A memory the store holds already is left as it is (``skipped``: an old
export never overwrites newer versions) unless ``replace``. Importing again changes
nothing. A version
whose ``expires_at`` has passed is skipped (counted as ``expired``). A line without a
provenance (null, or left out) is stored as ``imported``; a line without times is
stamped at import."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Final, cast, get_args

from memstack._json import JSON
from memstack.client import _calls as calls
from memstack.client import types as t
from memstack.errors import InvalidInput
from memstack.secrets import find_secret

__all__ = ["EXPORT_PAGE", "ImportResult", "memory_line", "read_export"]

EXPORT_PAGE: Final = 500
"""Memories a page of an export (the listing's largest ``limit``)."""
IMPORTED: Final[t.Provenance] = "imported"
"""The provenance of an imported line that carries none."""
MAX_VERSIONS: Final = 21
"""Versions the server keeps of one memory: 20 closed beside the current one."""
_BATCH_MEMORIES: Final = 500
_BATCH_BYTES: Final = 512 * 1024
"""A restore call's memories and size: within the server's limits (500; 1 MiB bodies)."""
_FIELDS: Final = ("agent_id", "scope", "key", "value")
_STORED: Final = ("agent_id", "session_id", "key", "value", "metadata", "provenance_detail")
_IDENTITY: Final = ("agent_id", "scope", "session_id", "key")
_TIMES: Final = ("created_at", "updated_at", "valid_from", "valid_to")
_VERSION: Final = (
    "value",
    "agent_id",
    "metadata",
    *_TIMES,
    "expires_at",
    "superseded_by",
    "closed_reason",
    "version_id",
    "provenance_detail",
)
"""A line's fields that ``restore`` takes as a version's (``provenance`` apart)."""


@dataclass(frozen=True, kw_only=True)
class ImportResult:
    imported: int
    """Memories written, each with all its versions."""
    expired: int = 0
    """Lines skipped because their ``expires_at`` has passed."""
    versions: int = 0
    """Versions written, current and closed."""
    skipped: int = 0
    """Memories the server held already, left as they were (no ``replace``)."""


@dataclass(frozen=True, kw_only=True)
class Plan:
    """What an import will send, decided before anything is written."""

    calls: list[calls.Call[t.Restored]] = field(default_factory=list)
    expired: int = 0

    def tally(self, answers: Iterable[t.Restored]) -> ImportResult:
        """The result of the import from the server's answers to ``calls``."""
        done = list(answers)
        return ImportResult(
            imported=sum(a["restored"] for a in done),
            versions=sum(a["versions"] for a in done),
            skipped=sum(a["skipped"] for a in done),
            expired=self.expired,
        )


def memory_line(memory: t.Memory) -> str:
    return json.dumps(memory, ensure_ascii=False, separators=(",", ":")) + "\n"


def read_export(
    lines: Iterable[str], *, now: datetime | None = None, replace: bool = False
) -> Plan:
    """Check every line of an export and plan its import; ``InvalidInput`` names the
    first malformed line (``field="line N"``) and nothing is written."""
    moment = now or datetime.now(UTC)
    memories: dict[tuple[object, ...], dict[str, object]] = {}
    versions: dict[tuple[object, ...], list[dict[str, object]]] = {}
    expired = 0
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        data = _parse(text, number)
        if _expired(data, moment):
            expired += 1
            continue
        identity = _identity(data)
        memories.setdefault(identity, {name: data.get(name) for name in _IDENTITY})
        held = versions.setdefault(identity, [])
        if len(held) == MAX_VERSIONS:
            raise _bad(number, f"is one more version of a memory with {MAX_VERSIONS} already")
        held.append(_version(data))
    bodies = [{**memory, "versions": versions[identity]} for identity, memory in memories.items()]
    return Plan(
        calls=[calls.restore(batch, replace=replace) for batch in _batches(bodies)],
        expired=expired,
    )


def _identity(data: dict[str, object]) -> tuple[object, ...]:
    """What makes a line's memory the same as another's: the memory ``id`` an export
    lists on each version (a global memory written before its agent was part of its
    identity may hold versions of several agents); without one, its identity: agent,
    scope, session and key (the ``(agent_id, scope, key)`` identity)."""
    if isinstance(data.get("id"), str):
        return ("id", data["id"])
    return (data["scope"], data["agent_id"], data.get("session_id"), data["key"])


def _parse(text: str, number: int) -> dict[str, object]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _bad(number, f"is not JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(data, dict):
        raise _bad(number, "is not a JSON object; each line holds one exported memory")
    problem = _identity_problem(data) or _version_problem(data) or _secret_problem(data)
    if problem is not None:
        raise _bad(number, problem)
    return data


def _secret_problem(data: dict[str, object]) -> str | None:
    """A credential in a field the server stores: the server refuses it too, but here it
    stops the import before any of it is written."""
    stored = cast("dict[str, JSON]", {name: data.get(name) for name in _STORED})
    found = find_secret(stored)
    return None if found is None else "is " + found.message("memory").removesuffix(".")


def _identity_problem(data: dict[str, object]) -> str | None:
    for name in _FIELDS:
        if not isinstance(data.get(name), str):
            return f"needs {name} as a string, as `memstack memories export` writes"
    if data["scope"] not in get_args(t.Scope):
        return f"has scope {data['scope']!r}; use session, agent or global"
    if data["scope"] == "session" and not isinstance(data.get("session_id"), str):
        return "has scope session; it needs its session_id as a string"
    if data["scope"] != "session" and data.get("session_id") is not None:
        return f"has scope {data['scope']}; only a session memory has a session_id (null)"
    return None


def _version_problem(data: dict[str, object]) -> str | None:
    provenance = data.get("provenance")
    if provenance is not None and provenance not in get_args(t.Provenance):
        return f"has provenance {provenance!r}; use {', '.join(get_args(t.Provenance))} or null"
    strings = ("session_id", "expires_at", "provenance_detail", "superseded_by", "version_id")
    for name in (*strings, *_TIMES):
        if data.get(name) is not None and not isinstance(data[name], str):
            return f"needs {name} as a string or null"
    for name in ("expires_at", *_TIMES):
        text = data.get(name)
        if isinstance(text, str) and _time(text) is None:
            return f"has {name} {text!r}, not an ISO 8601 time"
    if not isinstance(data.get("metadata") or {}, dict):
        return "needs metadata as a JSON object"
    return None


def _expired(data: dict[str, object], now: datetime) -> bool:
    expires_at = data.get("expires_at")
    moment = _time(expires_at) if isinstance(expires_at, str) else None
    return moment is not None and moment <= now


def _time(text: str) -> datetime | None:
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _version(data: dict[str, object]) -> dict[str, object]:
    """The version a line holds, as ``restore`` takes it (a field left out or null takes
    the server's default)."""
    version = {name: data[name] for name in _VERSION if data.get(name) is not None}
    version["provenance"] = data.get("provenance") or IMPORTED
    return version


def _batches(memories: Iterable[dict[str, object]]) -> Iterator[list[dict[str, object]]]:
    """The memories in restore calls of at most ``_BATCH_MEMORIES`` and, unless one
    memory alone is larger, ``_BATCH_BYTES``."""
    batch: list[dict[str, object]] = []
    size = 0
    for memory in memories:
        weight = len(json.dumps(memory, ensure_ascii=False).encode())
        if batch and (len(batch) == _BATCH_MEMORIES or size + weight > _BATCH_BYTES):
            yield batch
            batch, size = [], 0
        batch.append(memory)
        size += weight
    if batch:
        yield batch


def _bad(number: int, problem: str) -> InvalidInput:
    return InvalidInput(f"line {number} {problem}.", field=f"line {number}")
