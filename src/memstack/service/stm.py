"""The short-term tier: the last N memories of each bucket, newest first.

A bucket is ``(tenant, bucket_of(scope, agent_id))``: an agent's own memories, or the
tenant's global ones. Entries are keyed by memory id (which derives from the memory's
identity), so storing a memory again replaces it; they are ordered by ``updated_at``,
newest first (exact ties by id ascending), and each bucket keeps only its first
``max_entries`` in that order.

Two tiers implement the protocol: ``InProcessTier`` here (one process, no server) and
``RedisTier`` in ``stm_redis`` (shared by every server process).

Beside its entries each bucket keeps a small state, so a reader can tell a complete bucket
from a partial one (``TierSync`` in ``stm_sync`` decides what to trust):

- ``epoch``: the long-term tier's epoch the bucket was last filled at, or ``None`` when
  the bucket is *cold*: never filled, filled before the server last restarted (in any
  way: empty, from an AOF, from an RDB snapshot), or emptied of entries the long-term
  tier may still hold beyond ``max_entries``. A put into a cold bucket is kept but never
  makes it complete.
- ``version``: an opaque token that every ``put``, ``remove`` and ``replace`` changes, and
  every restart of the server too. A filler reads it before reading the long-term tier,
  and ``replace(..., if_version=...)`` fills only if no write and no restart came in
  between (a write after the long-term read would otherwise be wiped, or lost with the
  restart under a bucket the fill marks complete).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final, Protocol, runtime_checkable

from memstack.errors import InvalidInput, StoreUnavailable
from memstack.service.types import Memory

__all__ = ["DEFAULT_MAX_ENTRIES", "BucketRead", "InProcessTier", "ShortTermTier"]

DEFAULT_MAX_ENTRIES: Final = 20
"""The server's ``STM_MAX_ENTRIES``."""


@dataclass(frozen=True, kw_only=True)
class BucketRead:
    """A bucket's newest memories with its state (see the module docstring)."""

    memories: list[Memory]
    epoch: str | None
    version: str


@runtime_checkable
class ShortTermTier(Protocol):
    """The last ``max_entries`` memories per bucket, newest first, deduplicated by id.

    Implementations are synchronous and safe to call from several threads at once.
    Each call is atomic: a reader never sees a half-done write. When the backing
    service is down, every call raises ``StoreUnavailable``; nothing is swallowed.
    """

    @property
    def max_entries(self) -> int:
        """How many memories each bucket keeps (at least 1)."""
        ...

    def put(self, memory: Memory) -> None:
        """Add ``memory`` to bucket ``(memory.tenant, memory.bucket)``, or replace the entry
        with its id; then drop the bucket's oldest entries beyond ``max_entries``."""
        ...

    def recent(
        self, tenant: str, bucket: str, *, now: float, limit: int | None = None
    ) -> list[Memory]:
        """The bucket's newest ``limit`` (default ``max_entries``) memories, newest first.

        Memories with ``expires_at <= now`` are never returned: this call deletes them.
        """
        ...

    def read(self, tenant: str, bucket: str, *, now: float, limit: int | None = None) -> BucketRead:
        """``recent`` and the bucket's state, in one atomic step. Pruning expired entries
        from a full bucket makes it cold (older live ones may exist elsewhere)."""
        ...

    def remove(self, tenant: str, bucket: str, ids: Sequence[str]) -> int:
        """Delete these ids from the bucket; return how many were there. Removing one from
        a full bucket makes it cold."""
        ...

    def replace(
        self,
        tenant: str,
        bucket: str,
        memories: Sequence[Memory],
        *,
        epoch: str | None = None,
        if_version: str | None = None,
    ) -> bool:
        """Make the bucket hold exactly ``memories`` (the newest ``max_entries`` of them;
        if an id repeats, the last one wins) and set its ``epoch``, in one step; with
        ``if_version``, only if the bucket's version is still that. Returns whether it did."""
        ...

    def clear_tenant(self, tenant: str) -> int:
        """Delete every bucket of ``tenant``; return how many memories they held."""
        ...

    def ping(self) -> None:
        """Return if the tier is usable; raise ``StoreUnavailable`` saying why if not."""
        ...

    def close(self) -> None:
        """Release the tier's connections; later calls raise ``StoreUnavailable``."""
        ...


class InProcessTier:
    """A ``ShortTermTier`` in this process's memory, for when no Redis is configured."""

    def __init__(self, max_entries: int = DEFAULT_MAX_ENTRIES) -> None:
        self.max_entries = check_max_entries(max_entries)
        self._buckets: dict[tuple[str, str], dict[str, Memory]] = {}
        self._states: dict[tuple[str, str], _State] = {}
        self._lock = threading.Lock()
        self._closed = False

    def put(self, memory: Memory) -> None:
        with self._lock:
            self._check_open()
            entries = self._buckets.setdefault((memory.tenant, memory.bucket), {})
            entries[memory.id] = memory
            for old in newest_first(entries.values())[self.max_entries :]:
                del entries[old.id]
            self._state(memory.tenant, memory.bucket).version += 1

    def recent(
        self, tenant: str, bucket: str, *, now: float, limit: int | None = None
    ) -> list[Memory]:
        return self.read(tenant, bucket, now=now, limit=limit).memories

    def read(self, tenant: str, bucket: str, *, now: float, limit: int | None = None) -> BucketRead:
        count = check_limit(limit, self.max_entries)
        with self._lock:
            self._check_open()
            entries = self._buckets.get((tenant, bucket), {})
            expired = [m for m in entries.values() if m.is_expired(now)]
            state = self._state(tenant, bucket)
            if expired and len(entries) >= self.max_entries:
                state.epoch = None
            for memory in expired:
                del entries[memory.id]
            self._drop_if_empty(tenant, bucket)
            memories = newest_first(entries.values())[:count]
            return BucketRead(memories=memories, epoch=state.epoch, version=str(state.version))

    def remove(self, tenant: str, bucket: str, ids: Sequence[str]) -> int:
        with self._lock:
            self._check_open()
            entries = self._buckets.get((tenant, bucket), {})
            full = len(entries) >= self.max_entries
            removed = sum(entries.pop(memory_id, None) is not None for memory_id in set(ids))
            state = self._state(tenant, bucket)
            state.version += 1
            if removed and full:
                state.epoch = None
            self._drop_if_empty(tenant, bucket)
            return removed

    def replace(
        self,
        tenant: str,
        bucket: str,
        memories: Sequence[Memory],
        *,
        epoch: str | None = None,
        if_version: str | None = None,
    ) -> bool:
        kept = {m.id: m for m in newest_first(latest_by_id(memories))[: self.max_entries]}
        epoch = check_epoch(epoch)
        check_version(if_version)
        with self._lock:
            self._check_open()
            state = self._state(tenant, bucket)
            if if_version is not None and str(state.version) != if_version:
                return False
            self._buckets[(tenant, bucket)] = kept
            state.version += 1
            state.epoch = epoch
            self._drop_if_empty(tenant, bucket)
            return True

    def clear_tenant(self, tenant: str) -> int:
        with self._lock:
            self._check_open()
            for key in [key for key in self._states if key[0] == tenant]:
                del self._states[key]
            keys = [key for key in self._buckets if key[0] == tenant]
            return sum(len(self._buckets.pop(key)) for key in keys)

    def ping(self) -> None:
        with self._lock:
            self._check_open()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._buckets.clear()
            self._states.clear()

    def _check_open(self) -> None:
        if self._closed:
            raise StoreUnavailable("this InProcessTier is closed; make a new one.")

    def _state(self, tenant: str, bucket: str) -> _State:
        return self._states.setdefault((tenant, bucket), _State())

    def _drop_if_empty(self, tenant: str, bucket: str) -> None:
        if (tenant, bucket) in self._buckets and not self._buckets[(tenant, bucket)]:
            del self._buckets[(tenant, bucket)]


@dataclass
class _State:
    epoch: str | None = None
    version: int = 0


# -- helpers both tiers share -------------------------------------------------------------


def newest_first(memories: Iterable[Memory]) -> list[Memory]:
    """The tiers' one order: ``updated_at`` descending, then id ascending (a Redis sorted
    set orders equal scores by UTF-8 bytes, which order strings as their code points do,
    so the ids compare as they are)."""
    return sorted(memories, key=lambda m: (-m.updated_at, m.id))


def latest_by_id(memories: Iterable[Memory]) -> list[Memory]:
    """One memory per id: the last one given."""
    return list({m.id: m for m in memories}.values())


def check_max_entries(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidInput(
            f"max_entries must be an integer of at least 1 (STM_MAX_ENTRIES), not {value!r}.",
            field="max_entries",
        )
    return value


def check_limit(value: object, default: int) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidInput(
            f"limit must be an integer of at least 1, or None for max_entries; not {value!r}.",
            field="limit",
        )
    return value


def check_epoch(value: object) -> str | None:
    if value is None or (isinstance(value, str) and 0 < len(value) <= 64):
        return value
    raise InvalidInput(
        f"epoch must be None (a cold bucket) or a string of 1 to 64 characters, not {value!r}.",
        field="epoch",
    )


def check_version(value: object) -> str:
    """``if_version`` as the Redis script takes it: ``""`` for none."""
    if value is None:
        return ""
    if not isinstance(value, str) or not 0 < len(value) <= 128:
        raise InvalidInput(
            f"if_version must be None or a version read from the bucket, not {value!r}.",
            field="if_version",
        )
    return value
