"""TierSync: the short-term tier kept in step with the long-term tier, through outages.

The long-term tier is the truth; the short-term tier (Redis) is a cache of each bucket's
newest ``max_entries`` that may come back from an outage empty, or with old data (an AOF
cut short, an RDB snapshot older than the last writes), or having missed writes. A bucket
is served from the short-term tier only when it is *complete* and *current*; anything
else is read from the long-term tier and filled back.

**Complete**: a bucket carries a state beside its entries (``stm``): the epoch it was
filled at, or none (*cold*). Only a fill from the long-term tier sets an epoch, and only
for the run of the server that took the fill: ``RedisTier`` keeps the server's
``run_id`` (new at every start) beside the epoch and compares it in the script that
reads the bucket. So a Redis that restarted, in any way and whether or not a process
saw it go, holds only cold buckets, and a write into one (the first write per agent
after the restart) never makes it look complete. Removing an entry from a full bucket,
or pruning an expired one, makes it cold too (older live entries exist in the long-term
tier only).

**Current**: the long-term tier owns an *epoch* (one token, ``LongTermTier.epoch``). It
changes (``bump_epoch``, a new random token) when the short-term tier may have missed a
write:

- a write or delete reached the long-term tier but its short-term call failed;
- this process saw the short-term tier fail and now sees it answer again (what it could
  not see meanwhile is refilled; a restart is caught per bucket regardless, above).

A bucket filled at another epoch is stale and is filled again. Filling reads the epoch,
then the bucket's version, then the long-term rows, and writes them only if the version
did not move (``replace(..., if_version=...)``): a write that landed in between is never
wiped, a write that failed in between bumped the epoch after the fill read it, and a
restart in between changed the version (it carries the server's ``run_id``), so the fill
never marks complete a bucket whose last writes the restart lost.

**Cheap**: a warm read is the one Redis round trip it always was (entries, state and the
server's ``run_id`` come back from one script; ``INFO server`` in it is a small share of
the script's time on a full bucket, and of the client's time for a read). Each process
caches the epoch for ``epoch_ttl`` seconds (1 s) of its clock, forgets it the moment it
sees the short-term tier fail, and takes the bump it made itself at once. A miss costs
one epoch read, one long-term list and one fill; after a restart, every bucket misses
once.

**What holds**: after a Redis restart of any kind (empty, from an AOF whole or cut short,
from an RDB snapshot of any age, a replica promoted), no process serves a stale, missing
or erased memory, from the first read after it, whether or not any process saw Redis
fail: every bucket it holds is cold until filled again from the long-term tier. So an
erasure (``delete``, ``delete_many``) holds through every restart. What remains: a
process cut off from a Redis that keeps running (a partition) bumps the epoch for the
writes it missed, and the others see the bump within ``epoch_ttl``. A dataset sent back
in time inside a running server (``DEBUG RELOAD`` of an older snapshot, a failover to a
lagging replica behind one address) is reported by ``RedisTier`` as a failure once, by
the tenant's generation, to the first process that wrote after the point it went back to
and then to every other: a process that saw nothing newer serves the older buckets until
that first process calls for a tenant it wrote to after that point and the bump
reaches it
(``epoch_ttl``). Data replaced piecemeal (``RESTORE`` of old keys, ``maxmemory-policy
allkeys-*``; ``volatile-*`` evicts only state keys, which leaves buckets cold) goes unseen.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import Final

from memstack.clock import Clock
from memstack.errors import StoreUnavailable
from memstack.service.ltm import LongTermTier
from memstack.service.stm import ShortTermTier
from memstack.service.types import Memory

__all__ = ["DEFAULT_EPOCH_TTL_S", "TierSync"]

DEFAULT_EPOCH_TTL_S: Final = 1.0
_log = logging.getLogger("memstack.service")


class TierSync:
    """Reads, writes and fills of the short-term tier that never serve a partial or
    stale bucket (see the module docstring). Safe to call from several threads."""

    def __init__(
        self,
        short_term: ShortTermTier,
        long_term: LongTermTier,
        clock: Clock,
        *,
        epoch_ttl: float = DEFAULT_EPOCH_TTL_S,
    ) -> None:
        self.short_term = short_term
        self.long_term = long_term
        self.clock = clock
        self.epoch_ttl = epoch_ttl
        self._lock = threading.Lock()
        self._epoch: tuple[str, float] | None = None  # (token, read at)
        self._failing = False

    # -- reads -------------------------------------------------------------------------

    def recent(self, tenant: str, bucket: str, now: float) -> list[Memory]:
        """The bucket's newest memories, as the long-term tier holds them."""
        epoch = self._current_epoch(now)
        try:
            got = self.short_term.read(tenant, bucket, now=now)
        except StoreUnavailable as exc:
            self._failed(exc, f"reading {tenant}/{bucket} from long-term")
            return self._long_term_rows(tenant, bucket, now)
        if self._recovered(now) or got.epoch != epoch:
            epoch = self._current_epoch(now, fresh=True)  # another process may have moved on
        if got.epoch == epoch:
            return got.memories
        rows = self._long_term_rows(tenant, bucket, now)
        try:
            self.short_term.replace(tenant, bucket, rows, epoch=epoch, if_version=got.version)
        except StoreUnavailable as exc:
            self._failed(exc, f"{tenant}/{bucket} left to fill later")
        return rows

    def fill(self, tenant: str, bucket: str, now: float) -> int:
        """Fill the bucket from the long-term tier at the current epoch (warmup);
        returns how many memories it holds."""
        epoch = self._current_epoch(now, fresh=True)
        version = self.short_term.read(tenant, bucket, now=now).version
        rows = self._long_term_rows(tenant, bucket, now)
        self.short_term.replace(tenant, bucket, rows, epoch=epoch, if_version=version)
        return len(rows)

    # -- writes, after the long-term tier took them -------------------------------------

    def put(self, memory: Memory) -> None:
        try:
            self.short_term.put(memory)
        except StoreUnavailable as exc:
            self._missed(exc, f"{memory.id} stored in long-term only")
            return
        self._recovered(self.clock.now())

    def remove(self, tenant: str, bucket: str, ids: Sequence[str]) -> None:
        try:
            self.short_term.remove(tenant, bucket, ids)
        except StoreUnavailable as exc:
            self._missed(exc, f"removal of {len(ids)} ids kept in long-term only")
            return
        self._recovered(self.clock.now())

    # -- the epoch ---------------------------------------------------------------------

    def invalidate(self, now: float) -> None:
        """Every bucket filled before is stale from now on, in every process (this one at
        once): the long-term tier changed in a way no write told the short-term tier."""
        self._bump(now)

    def _current_epoch(self, now: float, *, fresh: bool = False) -> str:
        with self._lock:
            cached = self._epoch
        if not fresh and cached is not None and now - cached[1] < self.epoch_ttl:
            return cached[0]
        token = self.long_term.epoch()
        with self._lock:
            self._epoch = (token, now)
        return token

    def _bump(self, now: float) -> None:
        token = self.long_term.bump_epoch(now)
        with self._lock:
            self._epoch = (token, now)

    def _failed(self, exc: StoreUnavailable, what: str) -> None:
        """The short-term tier failed: trust no cached epoch until it answers again."""
        with self._lock:
            self._failing = True
            self._epoch = None
        _log.warning("short-term tier unavailable; %s: %s", what, exc)

    def _missed(self, exc: StoreUnavailable, what: str) -> None:
        """A write reached the long-term tier only: every bucket filled before is stale."""
        self._failed(exc, what)
        self._bump(self.clock.now())

    def _recovered(self, now: float) -> bool:
        """After a failure, the first answer bumps the epoch (the tier may have come back
        from an old snapshot); returns whether this call did."""
        with self._lock:
            if not self._failing:
                return False
            self._failing = False
        self._bump(now)
        _log.warning("short-term tier answers again; its buckets are filled anew")
        return True

    def _long_term_rows(self, tenant: str, bucket: str, now: float) -> list[Memory]:
        rows = self.long_term.list(
            tenant, bucket, limit=self.short_term.max_entries, order="updated_desc"
        )
        return [m for m in rows if not m.is_expired(now)]
