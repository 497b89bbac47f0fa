"""How a memory's versions are kept as records: the closed copy of a replaced version,
its id, and the order of versions.

The current version of a memory is the record with the memory's id. A new value closes
it: the old record is copied to a record of its own (``version_id``) with ``valid_to``,
``superseded_by`` (the memory id), ``closed_reason`` and ``metadata["version_of"]``, in
the transaction that writes the new value (``LongTermTier.upsert``).
"""

from __future__ import annotations

import math
import uuid
from dataclasses import replace
from typing import Final

from memstack.service.types import (
    DEFAULT_PROVENANCE,
    ClosedReason,
    Memory,
    as_closed_reason,
    as_provenance,
)
from memstack.storage import Record

__all__ = ["MAX_VERSIONS", "VERSION_OF", "closed_order", "next_version", "starts", "version_id"]

MAX_VERSIONS: Final = 20
"""Closed versions kept per memory beside its current one; the earliest closed go first."""
VERSION_OF: Final = "version_of"
"""The metadata key of a closed version naming the memory it is a version of."""


def version_id(memory_id: str, closed_at: float) -> str:
    """The record id of a closed version of ``memory_id``: ``<memory id>~<µs from its
    closing to _LAST_US, hex><random>``. It sorts above the memory's own id (a prefix
    of it) and, among the memory's versions, the latest closed lowest; a newest-first
    listing of every version (equal times by id ascending) shows a memory, then its
    versions newest first (they share its ``created_at``). Versions closed before this
    scheme (``mem-<digest>~<µs>``, for the opposite tie order) sort below the memory."""
    stamp = min(max(0, round(closed_at * 1_000_000)), _LAST_US)
    return f"{memory_id}~{_LAST_US - stamp:014x}{uuid.uuid4().hex[:6]}"


_LAST_US: Final = 16**14 - 1
"""The latest closing time a version id orders, in µs since the epoch (the year 4253)."""


def next_version(memory: Memory, stored: Record | None) -> tuple[Memory, Record | None]:
    """The memory to write over ``stored`` (the record with its id, if any), and the
    closed version of ``stored`` to keep beside it (None: overwrite in place). A closed
    version keeps the provenance it had."""
    memory = replace(memory, valid_to=None, superseded_by=None, closed_reason=None)
    memory = _with_provenance(memory, stored if stored and stored.valid_to is None else None)
    if stored is None:
        return replace(memory, valid_from=memory.created_at), None
    if stored.valid_to is not None:  # evicted: kept as it was, the memory starts anew
        reason = as_closed_reason(stored.closed_reason) or "evicted"
        at = max(stored.valid_to, starts(stored))
        return (
            replace(memory, valid_from=memory.created_at),
            _closed(stored, memory, at=at, reason=reason),
        )
    memory = replace(memory, created_at=stored.created_at)
    if stored.metadata.get("value") == memory.value:
        return replace(memory, valid_from=starts(stored)), None
    at = max(memory.updated_at, starts(stored))
    return replace(memory, valid_from=at), _closed(stored, memory, at=at, reason="superseded")


def _with_provenance(memory: Memory, current: Record | None) -> Memory:
    """A memory written without a provenance keeps the current version's (and its detail,
    unless it gives one of its own); a new one gets ``DEFAULT_PROVENANCE``."""
    if memory.provenance is not None:
        return memory
    kept = as_provenance(current.provenance) if current is not None else None
    if current is None or kept is None:
        return replace(memory, provenance=DEFAULT_PROVENANCE)
    detail = memory.provenance_detail
    return replace(
        memory,
        provenance=kept,
        provenance_detail=current.provenance_detail if detail is None else detail,
    )


def _closed(stored: Record, memory: Memory, *, at: float, reason: ClosedReason) -> Record:
    """``stored`` kept as a closed version of ``memory``, valid until ``at``."""
    ends = [t for t in (stored.expires_at, memory.expires_at) if t is not None]
    return replace(
        stored,
        id=version_id(memory.id, at),
        metadata={**stored.metadata, VERSION_OF: memory.id},
        valid_from=starts(stored),
        valid_to=at,
        superseded_by=memory.id,
        closed_reason=reason,
        expires_at=min(ends) if ends else None,
    )


def starts(record: Record) -> float:
    """When the record became valid: ``valid_from``, else ``created_at``."""
    return record.created_at if record.valid_from is None else record.valid_from


def closed_order(record: Record) -> tuple[float, str]:
    """Earliest closed first; current (open) records last."""
    return (math.inf if record.valid_to is None else record.valid_to, record.id)
