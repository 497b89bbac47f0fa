"""Global memories moved to their own identity per agent: ``(agent_id, scope, key)``.

Before, a global memory's id left its agent out, so two agents storing one key in global
scope wrote one memory (the last writer's agent shown on it). A store written then holds
each such memory under that old id, its closed versions under ids derived from it. Now each
agent's global memory is its own: ``migrate_global_identity`` moves every old one to the id
of the agent it shows (the one that wrote it last, the only owner the old data knows),
versions and index entry with it, each memory in one transaction, and nothing is lost: the
values, times, vectors and history are written back as they were, under the new ids.

It runs once per store: a marker beside the short-term tier's epoch says it ran. Several
processes may run it at once: each memory's move expects its records as read, so a second
mover finds them gone and moves nothing. Every run that found no marker, on a store with
global memories, makes every short-term bucket stale (``invalidate``, the caller's
``TierSync.invalidate``) before it writes the marker, whether it moved anything or not:
another mover may have moved them all and stopped before its own invalidation, and a
bucket filled meanwhile holds the old ids.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import partial
from typing import Final

from memstack.service.ltm import LongTermTier, retried
from memstack.service.types import GLOBAL_BUCKET, memory_id
from memstack.storage import Expect, Filter, Namespace, Record
from memstack.storage.versions import VERSION_OF, memory_of

__all__ = ["MIGRATED_ID", "legacy_global_id", "migrate_global_identity"]

MIGRATED_ID: Final = "migrated:global-identity"
"""The marker's record id in ``LongTermTier.epoch_namespace()``."""
_EVERY: Final = Filter(include_superseded=True, include_expired=True)
_PAGE: Final = 1_000


def legacy_global_id(tenant: str, key: str) -> str:
    """The id a global memory had before its agent was part of its identity."""
    return memory_id(tenant=tenant, scope="global", agent_id="", session_id=None, key=key)


def migrate_global_identity(
    long_term: LongTermTier, now: float, invalidate: Callable[[float], object] | None = None
) -> int:
    """Move every global memory stored under its old id to the id of its agent, then make
    every short-term bucket stale (``invalidate``, else ``bump_epoch``); returns how many
    this call moved (0 at once when the store was migrated before)."""
    records = long_term.records
    marker = long_term.epoch_namespace()
    if records.get(marker, [MIGRATED_ID]):
        return 0
    moved = 0
    tenants = _tenants_with_global_memories(long_term)
    for tenant in tenants:
        moved += retried(partial(_move_tenant, long_term, tenant), f"global memories of {tenant!r}")
    if tenants:  # a bucket can hold an old id only of a global memory stored (or moved)
        (invalidate or long_term.bump_epoch)(now)  # before the marker: a crash runs again
    done = Record(
        id=MIGRATED_ID, namespace=marker.encode(), text="done", created_at=now, updated_at=now
    )
    records.write(upserts=[done])
    return moved


def _tenants_with_global_memories(long_term: LongTermTier) -> list[str]:
    prefix = Namespace("mem").prefix()
    found = (Namespace.decode(ns) for ns in long_term.records.namespaces(prefix))
    return [ns.parts[0] for ns in found if ns.parts[1:] == (GLOBAL_BUCKET,)]


def _move_tenant(long_term: LongTermTier, tenant: str) -> int:
    """Move the tenant's old global memories, one transaction each."""
    namespace = long_term.namespace(tenant, GLOBAL_BUCKET)
    by_memory: dict[str, list[Record]] = {}
    for record in _every_record(long_term, namespace):
        by_memory.setdefault(memory_of(record), []).append(record)
    renames = {
        old_id: new_id
        for old_id, versions in by_memory.items()
        if (new_id := _new_id(tenant, old_id, versions)) is not None
    }
    # One read for every memory already under its new id: those stay as they are (the
    # old one readable and erasable by its id); the move's Expect catches a later one.
    taken = long_term.records.fetch(namespace, list(renames.values()), _EVERY)
    moves = [(old, new) for old, new in renames.items() if new not in taken]
    for old_id, new_id in moves:
        _move(long_term, namespace, old_id, new_id, by_memory[old_id])
    return len(moves)


def _every_record(long_term: LongTermTier, namespace: Namespace) -> list[Record]:
    """Every record of ``namespace``, a page at a time after the last one read (an offset
    would read every page before it again)."""
    out: list[Record] = []
    after: tuple[float, str] | None = None
    while page := long_term.records.list(
        namespace, filter=_EVERY, limit=_PAGE, order="created_asc", after=after
    ):
        out.extend(page)
        if len(page) < _PAGE:
            break
        after = (page[-1].created_at, page[-1].id)
    return out


def _new_id(tenant: str, old_id: str, versions: Sequence[Record]) -> str | None:
    """The id the memory moves to, or None when it has its new id already (or is not a
    memory of this tier)."""
    head = next((r for r in versions if r.id == old_id), None)
    latest = head or max(versions, key=lambda r: r.updated_at)
    key, agent_id = latest.metadata.get("key"), latest.metadata.get("agent_id")
    if not isinstance(key, str) or not isinstance(agent_id, str) or not agent_id:
        return None
    if old_id != legacy_global_id(tenant, key):
        return None
    return memory_id(tenant=tenant, scope="global", agent_id=agent_id, session_id=None, key=key)


def _move(
    long_term: LongTermTier,
    namespace: Namespace,
    old_id: str,
    new_id: str,
    versions: Sequence[Record],
) -> None:
    """Write the memory's records under ``new_id`` and delete the old ones, in one
    transaction that expects them as read and ``new_id`` free (else ``WriteConflict``)."""
    records = long_term.records
    index = long_term.index_namespace(namespace.parts[0])
    moved = [_renamed(r, old_id, new_id) for r in versions]
    head = next((r for r in moved if r.id == new_id), None)
    entries = [] if head is None or head.valid_to is not None else [_index_entry(index, head)]
    records.write(
        upserts=[*moved, *entries],
        deletes={namespace: [r.id for r in versions], index: [old_id]},
        expect=[
            *(Expect(namespace=namespace.encode(), id=r.id, seen=r) for r in versions),
            Expect(namespace=namespace.encode(), id=new_id, seen=None),
        ],
    )


def _renamed(record: Record, old_id: str, new_id: str) -> Record:
    """``record`` under the new id: the memory's own record, or a closed copy (its id
    ``<memory id>~...``, naming the memory in ``superseded_by`` and ``version_of``)."""
    if record.id == old_id:
        return replace(record, id=new_id)
    suffix = record.id[len(old_id) :] if record.id.startswith(old_id) else f"~{record.id}"
    return replace(
        record,
        id=new_id + suffix,
        superseded_by=new_id if record.superseded_by == old_id else record.superseded_by,
        metadata={**record.metadata, VERSION_OF: new_id},
    )


def _index_entry(index: Namespace, head: Record) -> Record:
    return Record(
        id=head.id,
        namespace=index.encode(),
        text=GLOBAL_BUCKET,
        created_at=head.created_at,
        updated_at=head.updated_at,
        expires_at=head.expires_at,
    )
