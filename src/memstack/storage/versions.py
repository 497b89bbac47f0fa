"""Every rule on the versions of a record, in one place: when a version starts, how it
is closed, the id and order of closed copies, how many are kept and read back.

A memory is never overwritten when its fact changes; the old version is closed:
``valid_to`` set (never before it started), ``superseded_by`` naming what replaced it,
``closed_reason`` saying why. Reads leave closed versions out unless they ask for them
(``Filter.as_of``, ``include_superseded``). Two layers keep versions so:

- long-term memories (``memstack.longterm``) store the new memory beside the old one
  and close the old one in place (``close_current``); ``history`` walks the
  ``superseded_by`` links back. Forgetting is the one way a memory's text really goes.
- service memories (``memstack.service.ltm``) keep the current version under the
  memory's id; a new value copies the old one to a record of its own (``closed_copy``:
  ``version_id``, ``metadata["version_of"]``) in the transaction that writes the new
  value, and the earliest closed beyond ``KEPT_VERSIONS`` are deleted (``beyond_kept``).
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Final

from memstack.errors import InvalidInput, NotFound
from memstack.storage.backend import Expect
from memstack.storage.base import RecordStore
from memstack.storage.types import Filter, Record

__all__ = [
    "KEPT_VERSIONS",
    "MAX_HISTORY_READ",
    "MAX_REPLACEMENTS",
    "VERSION_OF",
    "Closing",
    "as_version_of",
    "beyond_kept",
    "close_current",
    "closed",
    "closed_copy",
    "closed_order",
    "closing_time",
    "history",
    "memory_of",
    "starts",
    "valid_successors",
    "version_id",
]

MAX_HISTORY_READ: Final = 1_000
"""At most this many versions are read for one history: a bound on the walk, far above
what any cap keeps."""
MAX_REPLACEMENTS: Final = 64
"""``valid_successors`` follows a closed version through at most this many replacements
(a read for each step whose version is not in hand): a bound on the walk, far above the
changes one fact sees."""
KEPT_VERSIONS: Final = 20
"""Closed versions a service memory keeps beside its current one; the earliest closed go
first."""
VERSION_OF: Final = "version_of"
"""The metadata key of a closed copy naming the memory it is a version of."""
_LAST_US: Final = 16**14 - 1
"""The latest closing time a version id orders, in µs since the epoch (the year 4253)."""


def starts(record: Record) -> float:
    """When the record became valid: ``valid_from``, else ``created_at``."""
    return record.created_at if record.valid_from is None else record.valid_from


def closing_time(record: Record, at: float) -> float:
    """When ``record`` stops being valid if closed at ``at``: never before it started."""
    return max(at, starts(record))


def closed(record: Record, *, at: float, reason: str, by: str | None = None) -> Record:
    """``record`` closed in place at ``at`` (never before it started), replaced by ``by``."""
    return replace(
        record,
        valid_to=closing_time(record, at),
        superseded_by=by,
        closed_reason=reason,
        updated_at=at,
    )


def closed_order(record: Record) -> tuple[float, str]:
    """Earliest closed first; current (open) records last."""
    return (math.inf if record.valid_to is None else record.valid_to, record.id)


def beyond_kept(versions: Iterable[Record]) -> list[str]:
    """The ids of a memory's closed ``versions`` to delete so that, with the one being
    added, ``KEPT_VERSIONS`` remain: the earliest closed."""
    ordered = sorted(versions, key=closed_order)
    return [r.id for r in ordered[: max(0, len(ordered) - KEPT_VERSIONS + 1)]]


def version_id(memory_id: str, closed_at: float) -> str:
    """The record id of a closed copy of ``memory_id``: ``<memory id>~<µs from its
    closing to _LAST_US, hex><random>``. It sorts above the memory's own id (a prefix
    of it) and, among the memory's versions, the latest closed lowest; a newest-first
    listing of every version (equal times by id ascending) shows a memory, then its
    versions newest first (they share its ``created_at``). Versions closed before this
    scheme (``mem-<digest>~<µs>``, for the opposite tie order) sort below the memory."""
    stamp = min(max(0, round(closed_at * 1_000_000)), _LAST_US)
    return f"{memory_id}~{_LAST_US - stamp:014x}{uuid.uuid4().hex[:6]}"


def as_version_of(record: Record, memory_id: str, closed_at: float) -> Record:
    """``record`` under the id of a closed copy of ``memory_id``, naming it in
    ``metadata["version_of"]`` (``memory_of`` reads it back)."""
    return replace(
        record,
        id=version_id(memory_id, closed_at),
        metadata={**record.metadata, VERSION_OF: memory_id},
    )


def memory_of(record: Record) -> str:
    """The id of the memory ``record`` is a version of: the one a closed copy names,
    else the record's own id."""
    version_of = record.metadata.get(VERSION_OF)
    return version_of if isinstance(version_of, str) else record.id


def closed_copy(
    stored: Record, memory_id: str, *, at: float, reason: str, expires_at: float | None
) -> Record:
    """``stored`` kept as a closed copy of ``memory_id``, valid until ``at`` (never before
    it started). It never outlives ``expires_at``, the memory's TTL when it was replaced."""
    until = closing_time(stored, at)
    ends = [t for t in (stored.expires_at, expires_at) if t is not None]
    return replace(
        as_version_of(stored, memory_id, until),
        valid_from=starts(stored),
        valid_to=until,
        superseded_by=memory_id,
        closed_reason=reason,
        expires_at=min(ends) if ends else None,
    )


@dataclass(frozen=True, kw_only=True)
class Closing:
    """A current memory to close: at ``at``, for ``reason``, replaced by ``by`` (if any)."""

    id: str
    at: float
    reason: str
    by: str | None = None


def close_current(
    store: RecordStore, namespace: str, closings: Sequence[Closing]
) -> tuple[list[Record], list[Expect]]:
    """The stored records ``closings`` name, closed as they say, in one read, and the
    ``Expect`` of each as it was read: a write of them with ``expect`` closes nothing
    another writer closed or changed meanwhile (``WriteConflict``: call again). Every id
    must name a current memory of ``namespace`` and be closed once; otherwise
    ``InvalidInput`` (field ``supersedes``) and nothing is closed."""
    wanted = [c.id for c in closings]
    if len(set(wanted)) != len(wanted):
        twice = sorted({old for old in wanted if wanted.count(old) > 1})
        raise InvalidInput(
            f"supersedes names {twice[0]!r} for two new memories; a memory is replaced once.",
            field="supersedes",
        )
    found = {r.id: r for r in store.get(namespace, wanted)}
    for old in wanted:
        record = found.get(old)
        if record is None:
            raise InvalidInput(
                f"supersedes names {old!r}, which is not a memory of this collection; "
                "pass ids returned by remember or recall.",
                field="supersedes",
            )
        if record.valid_to is not None:
            raise InvalidInput(
                f"supersedes names {old!r}, which was already {record.closed_reason or 'closed'}"
                f"{f' by {record.superseded_by!r}' if record.superseded_by else ''}; supersede "
                "the current version instead.",
                field="supersedes",
            )
    return (
        [closed(found[c.id], at=c.at, reason=c.reason, by=c.by) for c in closings],
        [Expect(namespace=namespace, id=c.id, seen=found[c.id]) for c in closings],
    )


def history(store: RecordStore, namespace: str, memory_id: str) -> list[Record]:
    """Every version linked to ``memory_id`` by ``superseded_by``, in either direction,
    oldest first (by when each started); the walk stops once ``MAX_HISTORY_READ`` are
    found. ``NotFound`` when there is no such memory."""
    start = store.get(namespace, [memory_id])
    if not start:
        raise NotFound(f"no memory {memory_id!r} in this collection.", field="memory_id")
    versions = {start[0].id: start[0]}
    frontier = [start[0]]
    while frontier and len(versions) < MAX_HISTORY_READ:
        later = [r.superseded_by for r in frontier if r.superseded_by not in (None, *versions)]
        found = store.get(namespace, [i for i in later if i is not None])
        everything = Filter(include_superseded=True, superseded_by=tuple(r.id for r in frontier))
        found += store.list(namespace, filter=everything, limit=MAX_HISTORY_READ)
        frontier = list({r.id: r for r in found if r.id not in versions}.values())
        versions.update((r.id, r) for r in frontier)
    after = {r.id: _successors(r, versions) for r in versions.values()}
    return sorted(versions.values(), key=lambda r: (starts(r), r.created_at, -after[r.id], r.id))


def _successors(record: Record, versions: Mapping[str, Record]) -> int:
    """How many versions follow ``record`` along ``superseded_by``: among versions that
    started at the same moment, the one replaced comes first."""
    count, seen = 0, {record.id}
    following = record.superseded_by
    while following is not None and following in versions and following not in seen:
        seen.add(following)
        following = versions[following].superseded_by
        count += 1
    return count


def valid_successors(
    store: RecordStore,
    namespace: str,
    closed: Sequence[Record],
    *,
    at: float,
    as_of: bool,
    known: Mapping[str, Record] | None = None,
) -> dict[str, Record]:
    """For each of the ``closed`` versions (by id), the version that replaced it and is
    valid at ``at``: now, or the moment ``as_of`` reads (then it must have started by
    ``at`` too). The walk follows ``superseded_by`` through the versions closed by ``at``;
    a chain that ends in a version closed without a successor (deleted, evicted), or in
    one erased or expired, gives none. ``known``: records in hand by id, not read again."""

    def valid(record: Record) -> bool:
        started = not as_of or starts(record) <= at
        return started and (record.valid_to is None or record.valid_to > at)

    seen = dict(known or {})
    following = {r.id: r.superseded_by for r in closed if r.superseded_by is not None}
    found: dict[str, Record] = {}
    for _ in range(MAX_REPLACEMENTS):
        unread = [i for i in dict.fromkeys(following.values()) if i not in seen]
        if unread:
            seen.update((r.id, r) for r in store.get(namespace, unread))
        step: dict[str, str] = {}
        for origin, next_id in following.items():
            record = seen.get(next_id)
            if record is None:
                continue
            if valid(record):
                found[origin] = record
            elif record.valid_to is not None and record.valid_to <= at:
                if record.superseded_by is not None:
                    step[origin] = record.superseded_by
        if not step:
            break
        following = step
    return found
