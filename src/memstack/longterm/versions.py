"""Versions of long-term memories: closing the ones a new memory replaces, and reading a
memory's history back.

A memory is never overwritten when a fact changes. The new memory is stored beside the
old one, and the old one is closed: ``valid_to`` set to when the new one starts,
``superseded_by`` pointing to it, ``closed_reason="superseded"``. Recall and listings
leave closed memories out; ``as_of`` and ``history`` bring them back. Forgetting
(``LongTermMemory.forget``) is the one way a memory's text really goes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Final

from memstack.errors import InvalidInput, NotFound
from memstack.storage import Filter, Record, RecordStore

__all__ = ["MAX_VERSIONS", "Closing", "close_current", "closed", "history"]

MAX_VERSIONS: Final = 1_000
"""At most this many versions are read for one history (caps keep far fewer)."""


def closed(record: Record, *, at: float, reason: str, by: str | None = None) -> Record:
    """``record`` closed at ``at`` (never before it started), replaced by ``by``."""
    start = record.valid_from if record.valid_from is not None else record.created_at
    return replace(
        record, valid_to=max(at, start), superseded_by=by, closed_reason=reason, updated_at=at
    )


@dataclass(frozen=True, kw_only=True)
class Closing:
    """A current memory to close: at ``at``, for ``reason``, replaced by ``by`` (if any)."""

    id: str
    at: float
    reason: str
    by: str | None = None


def close_current(store: RecordStore, namespace: str, closings: Sequence[Closing]) -> list[Record]:
    """The stored records ``closings`` name, closed as they say, in one read. Every id
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
    return [closed(found[c.id], at=c.at, reason=c.reason, by=c.by) for c in closings]


def history(store: RecordStore, namespace: str, memory_id: str) -> list[Record]:
    """Every version linked to ``memory_id`` by ``superseded_by``, in either direction,
    oldest first (by when each started). ``NotFound`` when there is no such memory."""
    start = store.get(namespace, [memory_id])
    if not start:
        raise NotFound(f"no memory {memory_id!r} in this collection.", field="memory_id")
    versions = {start[0].id: start[0]}
    frontier = [start[0]]
    while frontier and len(versions) < MAX_VERSIONS:
        later = [r.superseded_by for r in frontier if r.superseded_by not in (None, *versions)]
        found = store.get(namespace, [i for i in later if i is not None])
        everything = Filter(include_superseded=True, superseded_by=tuple(r.id for r in frontier))
        found += store.list(namespace, filter=everything, limit=MAX_VERSIONS)
        frontier = list({r.id: r for r in found if r.id not in versions}.values())
        versions.update((r.id, r) for r in frontier)
    after = {r.id: _successors(r, versions) for r in versions.values()}
    return sorted(versions.values(), key=lambda r: (*_started(r), -after[r.id], r.id))


def _started(record: Record) -> tuple[float, float]:
    start = record.valid_from if record.valid_from is not None else record.created_at
    return (start, record.created_at)


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
