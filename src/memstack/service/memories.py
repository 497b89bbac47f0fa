"""MemoryService: the two-tier memory service (short-term in Redis or in process,
long-term in a database), the one service every transport uses.

Writes go to the long-term tier (the source of truth) and then to the short-term tier.
Reads for prompt injection try the short-term tier first and fall back to the long-term
tier when a bucket there is cold, stale or unavailable (``TierSync`` decides, and fills
it back); search always uses the long-term tier. A Redis outage never fails a read, never
loses a write the long-term tier accepted, and leaves no partial or stale bucket behind.
"""

from __future__ import annotations

import asyncio
import builtins
import logging
import threading
import time
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Final, Literal

from memstack._json import JSON
from memstack.clock import Clock, SystemClock
from memstack.embeddings import Embedder
from memstack.errors import InvalidInput, NotFound
from memstack.longterm.calibration import CALIBRATION, check_min_score, coverage
from memstack.service.checks import (
    check_memory_id,
    check_metadata,
    check_provenance,
    check_provenance_detail,
    check_provenances,
    check_scope,
    check_validity,
    check_value,
)
from memstack.service.global_identity import migrate_global_identity
from memstack.service.knowledge import KnowledgeBase
from memstack.service.ltm import (
    LongTermTier,
    from_record,
    memory_filter,
    metadata_conditions,
    retried,
)
from memstack.service.metadata_filter import MetadataWanted, check_metadata_filter
from memstack.service.paging import decode_cursor, encode_cursor
from memstack.service.principal import Principal
from memstack.service.prompt import KNOWLEDGE_HITS, PromptContext, assemble, check_budget
from memstack.service.restore import (
    MAX_RESTORE_MEMORIES,
    MemoryIn,
    Restored,
    check_chain,
    refuse_chain_secrets,
)
from memstack.service.secret_fields import refuse_memory_secrets
from memstack.service.stm import ShortTermTier
from memstack.service.stm_sync import TierSync
from memstack.service.ttl import expiry_from_ttl
from memstack.service.types import (
    GLOBAL_BUCKET,
    MAX_VALUE_CHARS,
    Memory,
    Provenance,
    Scope,
    check_id_part,
)
from memstack.service.writes import (
    DEFAULT_SESSION,
    MemoryWrite,
    batch_memories,
    new_memory,
    refuse_batch_secrets,
)
from memstack.storage import Filter, Record, RecordStore
from memstack.storage._text import SEARCH_STOPWORDS, keyword_query, query_words
from memstack.storage.hybrid import KEYWORD_WEIGHT, fused_candidates

__all__ = [
    "DEFAULT_LTM_MAX_ENTRIES",
    "DEFAULT_SESSION",
    "AgentPage",
    "AgentSummary",
    "MemoryPage",
    "MemoryService",
    "SearchHit",
    "SearchMode",
]

DEFAULT_LTM_MAX_ENTRIES: Final = 200
MAX_LIST_LIMIT: Final = 500
MAX_LIST_OFFSET: Final = 10_000
"""Deepest ``offset`` a listing takes (each bucket's first ``offset + limit`` rows are
merged); ``cursor`` pages at any depth."""
_LIST_CHUNK: Final = 5_000
"""Rows read from a bucket at a time for a listing (a store reads at most 10,000)."""
MAX_SEARCH_LIMIT: Final = 100
PRUNE_EVERY_S: Final = 1.0
_DELETE_BATCH: Final = 500
_WRITE_LOCKS: Final = 64

SearchMode = Literal["hybrid", "text", "semantic"]
_log = logging.getLogger("memstack.service")
_UNSET: Final = object()


@dataclass(frozen=True, kw_only=True)
class _Where:
    """The filters of a list or search; ``agent_id`` only narrows the global bucket
    (an agent's own bucket holds nothing else). Current versions, unless ``as_of`` a
    moment or ``include_superseded``."""

    scope: Scope | None
    session_id: str | None
    key: str | None
    agent_id: str | None
    as_of: float | None = None
    include_superseded: bool = False
    provenances: tuple[Provenance, ...] | None = None
    metadata: MetadataWanted = field(default_factory=dict)
    """Each metadata key a memory must have, with the values it may hold."""

    def __post_init__(self) -> None:
        # An id no memory can have is refused, as a store refuses it (and the OpenAPI
        # document's pattern says), rather than matching nothing.
        if self.session_id is not None:
            check_id_part(self.session_id, "session_id")

    def filter_for(self, bucket: str) -> Filter | None:
        found = memory_filter(
            scope=self.scope,
            session_id=self.session_id,
            key=self.key,
            agent_id=self.agent_id if bucket == GLOBAL_BUCKET else None,
            as_of=self.as_of,
            include_superseded=self.include_superseded,
            provenances=self.provenances,
        )
        if not self.metadata:
            return found
        return replace(found or Filter(), metadata_in=metadata_conditions(self.metadata))


@dataclass(frozen=True, kw_only=True)
class MemoryPage:
    memories: builtins.list[Memory]
    total: int
    limit: int
    offset: int
    next_cursor: str | None = None
    """Pass it as ``cursor`` for the page after this one; None on the last page."""


@dataclass(frozen=True, kw_only=True)
class AgentSummary:
    agent_id: str
    memories: int
    """Its current memories of its own (agent and session scope; 0 when only closed or
    expired ones are left)."""


@dataclass(frozen=True, kw_only=True)
class AgentPage:
    agents: builtins.list[AgentSummary]
    total: int
    limit: int
    offset: int


@dataclass(frozen=True, kw_only=True)
class SearchHit:
    memory: Memory
    score: float
    similarity: float
    keyword: float
    provenance: Provenance | None
    """How the memory was learned, beside the scores that ranked it."""
    calibrated: float = 0.0
    """``score`` read as the chance, in [0, 1], that the memory answers the query, the
    same for every query (``longterm.calibration``): what ``min_score`` cuts at."""


class MemoryService:
    """Memories of agents, scoped by tenant, in a short-term and a long-term tier.

    ``ltm_max_entries`` caps each agent's current memories (its agent and session scopes)
    and, separately, the tenant's global ones; every store evicts the oldest beyond it
    from every tier and index. An evicted memory is closed, not deleted: ``history``
    still shows it (``closed_reason="evicted"``); ``get``, ``update`` and ``delete`` do
    not find it. The short-term tier keeps its own ``max_entries`` per agent
    (``STM_MAX_ENTRIES``), of current memories only.
    """

    def __init__(
        self,
        *,
        records: RecordStore,
        embedder: Embedder,
        short_term: ShortTermTier,
        ltm_max_entries: int = DEFAULT_LTM_MAX_ENTRIES,
        clock: Clock | None = None,
        knowledge: KnowledgeBase | None = None,
    ) -> None:
        if (
            isinstance(ltm_max_entries, bool)
            or not isinstance(ltm_max_entries, int)
            or ltm_max_entries < 0
        ):
            raise InvalidInput(
                "ltm_max_entries must be an int >= 0 (0 = unlimited).", field="ltm_max_entries"
            )
        self.long_term = LongTermTier(records)
        self.short_term = short_term
        self.embedder = embedder
        self.ltm_max_entries = ltm_max_entries
        self.knowledge = knowledge
        """Searched for the ``<knowledge>`` block of ``prompt_context`` (None: no block)."""
        self.clock: Clock = clock or SystemClock()
        self._sync = TierSync(short_term, self.long_term, self.clock)
        self._pruned_at = float("-inf")
        # Writes of one memory from this process's threads take turns (a contention
        # guard, not what keeps the history linear: the store checks that, see ltm.py).
        # Without it they race each other's read-then-write and retry, so threads storing
        # one memory write far fewer a second, and some run out of tries.
        self._write_locks = [threading.Lock() for _ in range(_WRITE_LOCKS)]
        self._migrated = False
        self._migrating = threading.Lock()

    # -- writing -----------------------------------------------------------------------

    async def store(
        self,
        principal: Principal,
        *,
        agent_id: str,
        key: str,
        value: str,
        scope: Scope = "agent",
        session_id: str | None = None,
        metadata: dict[str, JSON] | None = None,
        ttl: object = None,
        provenance: Provenance | None = None,
        provenance_detail: str | None = None,
    ) -> Memory:
        """Store a memory, or update the one with the same identity (upsert). A session
        memory without a ``session_id`` belongs to the session ``DEFAULT_SESSION``.

        A new value closes the current one, which stays in ``history`` (see ``update``).
        ``provenance`` says how it was learned (``PROVENANCES``), ``provenance_detail``
        the model, tool or source; without a ``provenance`` an upsert keeps the current
        one's, and a new memory is ``user_stated`` (an agent stores what it was told)."""
        given = MemoryWrite(
            agent_id=agent_id,
            key=key,
            value=value,
            scope=scope,
            session_id=session_id,
            metadata=metadata,
            ttl=ttl,
            provenance=provenance,
            provenance_detail=provenance_detail,
        )
        memory = new_memory(principal, given, now=self.clock.now())
        return await asyncio.to_thread(self._write, memory)

    async def store_many(
        self, principal: Principal, memories: Sequence[MemoryWrite]
    ) -> builtins.list[Memory]:
        """Store up to ``MAX_BATCH_MEMORIES`` memories, each as ``store`` stores it, all
        or none: each is checked (its secrets refused) before anything is written, an
        error naming it (``memories[3].value``), and they are written in one transaction
        (an ``InvalidInput`` for the same memory twice). Returns them as stored, in order."""
        checked = batch_memories(principal, memories, now=self.clock.now())
        return await asyncio.to_thread(self._write_many, checked)

    def _write_many(self, memories: builtins.list[Memory]) -> builtins.list[Memory]:
        refuse_batch_secrets(memories)  # here, in the worker thread, off the loop
        self._migrate_once()
        vectors = self.embedder.embed_batch([f"{m.key}: {m.value}" for m in memories])
        written = self.long_term.upsert_many(
            memories, list(vectors), keep=self.ltm_max_entries, model_id=self.embedder.model_id
        )
        for memory in written.memories:
            self._stm_put(memory)
        for bucket, ids in written.evicted.items():
            self._stm_remove(memories[0].tenant, bucket, ids)
        return written.memories

    async def update(
        self,
        principal: Principal,
        memory_id: str,
        *,
        value: str | None = None,
        metadata: dict[str, JSON] | None = None,
        ttl: object = _UNSET,
        provenance: Provenance | None = None,
        provenance_detail: str | None = None,
    ) -> Memory:
        """Change a memory's value, metadata, TTL or provenance in every tier and index.
        ``ttl=None`` removes the TTL; leaving it out keeps the current one. Leaving out
        ``provenance`` keeps it; a new one without a ``provenance_detail`` drops the old
        detail.

        A new value supersedes the current version: it is kept, closed, in ``history``,
        and the memory is valid from now. A change of metadata or TTL alone rewrites the
        current version in place (its ``valid_from`` stays); so does storing the same
        value again. The fields left out keep what the memory holds when the change is
        written: an update computed from a version another writer replaced meanwhile is
        computed again (``WriteConflict`` after ``TRIES`` tries)."""
        provenance = check_provenance(provenance)
        provenance_detail = check_provenance_detail(provenance_detail)
        value = check_value(value) if value is not None else None
        metadata = check_metadata(metadata) if metadata is not None else None
        check_memory_id(memory_id)

        def attempt() -> Memory:  # over the current version as read now
            current = self.long_term.get(principal.tenant, memory_id)
            if current is None or not principal.may_see(current):
                raise NotFound(f"no memory {memory_id!r}.", field="id")
            if current.scope == "global":
                principal.check_global_write(field="id")
            now = self.clock.now()
            detail = provenance_detail
            if detail is None and provenance in (None, current.provenance):
                detail = current.provenance_detail
            changed = replace(
                current,
                value=current.value if value is None else value,
                metadata=current.metadata if metadata is None else metadata,
                expires_at=current.expires_at if ttl is _UNSET else expiry_from_ttl(ttl, now=now),
                updated_at=now,
                provenance=provenance or current.provenance,
                provenance_detail=detail,
            )
            return self._write(changed, over=current)

        return await asyncio.to_thread(retried, attempt, f"memory {memory_id!r}")

    def _migrate_once(self) -> None:
        """Move global memories a store kept under their old ids (``global_identity``)
        before this service writes the first memory: a write under the new id must find
        the memory it updates. Once per service (and, through its marker, per store)."""
        if self._migrated:
            return
        with self._migrating:
            if not self._migrated:  # buckets may hold the old ids: it invalidates them
                migrate_global_identity(self.long_term, self.clock.now(), self._sync.invalidate)
                self._migrated = True

    def _write(self, memory: Memory, over: Memory | None = None) -> Memory:
        refuse_memory_secrets(memory)  # here, in the worker thread, off the loop
        self._migrate_once()
        vector = self.embedder.embed_batch([f"{memory.key}: {memory.value}"])[0]
        with self._write_locks[zlib.crc32(memory.id.encode()) % _WRITE_LOCKS]:
            written = self.long_term.upsert(
                memory,
                vector,
                keep=self.ltm_max_entries,
                model_id=self.embedder.model_id,
                over=over,
            )
        self._stm_put(written.memory)
        if written.evicted:
            self._stm_remove(memory.tenant, memory.bucket, written.evicted)
        return written.memory

    async def delete(self, principal: Principal, memory_id: str) -> Memory:
        """Erase a memory and every version of it from every tier and index; returns
        what was removed (the current version, or the evicted one). Nothing of it stays
        in ``history``: a delete is an erasure, so a memory the cap evicted, which ``get``
        no longer returns, can still be erased by its id."""
        try:
            memory = await self.get(principal, memory_id)
        except NotFound:
            memory = (await self.history(principal, memory_id))[-1]
        if memory.scope == "global":
            principal.check_global_write(field="id")
        await asyncio.to_thread(self._remove, memory.tenant, memory.bucket, [memory.id])
        return memory

    async def delete_many(
        self,
        principal: Principal,
        *,
        agent_id: str | None = None,
        session_id: str | None = None,
        scope: Scope | None = None,
    ) -> int:
        """Erase every memory ``list`` would show for these filters (expired ones too),
        with every version of them, and the closed versions and evicted memories the same
        filters select, from every tier and index; returns how many current memories
        were deleted. An erasure needs ``agent_id`` or ``session_id``: the whole tenant is
        never one call away."""
        if agent_id is None and session_id is None:
            raise InvalidInput(
                "give agent_id or session_id to say whose memories to delete.", field="agent_id"
            )
        if session_id is not None:
            check_id_part(session_id, "session_id")
        buckets = await asyncio.to_thread(self._buckets, principal, agent_id, scope)
        where = _Where(scope=scope, session_id=session_id, key=None, agent_id=agent_id)
        if GLOBAL_BUCKET in buckets and not principal.may_write_global:
            # Refused when it would erase a global memory; an agent's own ones are its to erase.
            shared = await asyncio.to_thread(
                self.long_term.count, principal.tenant, GLOBAL_BUCKET, _erased(where, GLOBAL_BUCKET)
            )
            if scope == "global" or shared:
                principal.check_global_write(field="scope")
        return await asyncio.to_thread(self._delete_where, principal.tenant, buckets, where)

    def _delete_where(self, tenant: str, buckets: builtins.list[str], where: _Where) -> int:
        deleted = 0
        for bucket in buckets:
            selector = _erased(where, bucket)
            while found := self.long_term.records_page(
                tenant, bucket, selector, limit=_DELETE_BATCH
            ):
                deleted += sum(1 for r in found if r.valid_to is None)  # versions are closed
                memory_ids = [from_record(tenant, r).id for r in found]
                self._remove(
                    tenant, bucket, [*dict.fromkeys([*memory_ids, *(r.id for r in found)])]
                )
        return deleted

    async def restore(
        self, principal: Principal, memories: Sequence[MemoryIn], *, replace: bool = False
    ) -> Restored:
        """Write back memories an export listed, each with every version of it (history,
        validity, times and provenance as given: see ``restore``), in one transaction;
        every memory is checked first, and a bad one writes nothing. A memory the store
        already holds is left as it is (``Restored.skipped``), so an old export never
        overwrites newer versions, unless ``replace``: then what the store holds of it is
        replaced. Each bucket's cap (``ltm_max_entries``) applies as for ``store``.
        Running it again with the same memories changes nothing."""
        if not 1 <= len(memories) <= MAX_RESTORE_MEMORIES:
            raise InvalidInput(
                f"give 1 to {MAX_RESTORE_MEMORIES} memories a call; got {len(memories)}.",
                field="memories",
            )
        now = self.clock.now()
        chains = [
            check_chain(principal, m, at=f"memories[{i}]", now=now) for i, m in enumerate(memories)
        ]
        first: dict[str, int] = {}
        for i, chain in enumerate(chains):
            if (seen := first.setdefault(chain[0].id, i)) != i:
                raise InvalidInput(
                    f"memories[{i}] is the memory of memories[{seen}] again; give each memory "
                    "once, with all its versions.",
                    field=f"memories[{i}]",
                )
        return await asyncio.to_thread(self._restore, chains, replace)

    def _restore(self, chains: builtins.list[builtins.list[Memory]], replace: bool) -> Restored:
        refuse_chain_secrets(chains)  # here, in the worker thread, off the loop
        self._migrate_once()
        texts = [f"{m.key}: {m.value}" for chain in chains for m in chain]
        vectors = iter(self.embedder.embed_batch(texts))
        embeddings = [[next(vectors) for _ in chain] for chain in chains]
        done = self.long_term.restore(
            chains,
            embeddings,
            keep=self.ltm_max_entries,
            model_id=self.embedder.model_id,
            replace=replace,
        )
        skipped = set(done.skipped)
        now = self.clock.now()
        for chain in (c for c in chains if c[0].id not in skipped):
            latest = chain[-1]
            if latest.valid_to is None and not latest.is_expired(now):
                self._stm_put(latest)
            else:
                self._stm_remove(latest.tenant, latest.bucket, [latest.id])
        tenant = chains[0][0].tenant
        for bucket, ids in done.evicted.items():
            if ids:
                self._stm_remove(tenant, bucket, ids)
        written = [c for c in chains if c[0].id not in skipped]
        return Restored(
            memories=len(written),
            versions=sum(len(c) for c in written),
            skipped=len(skipped),
        )

    def _remove(self, tenant: str, bucket: str, ids: Sequence[str]) -> None:
        self.long_term.delete(tenant, bucket, ids)
        self._stm_remove(tenant, bucket, ids)

    def _stm_remove(self, tenant: str, bucket: str, ids: Sequence[str]) -> None:
        self._sync.remove(tenant, bucket, ids)

    def _stm_put(self, memory: Memory) -> None:
        self._sync.put(memory)

    # -- reading -----------------------------------------------------------------------

    async def get(self, principal: Principal, memory_id: str) -> Memory:
        """The current version of a memory (``NotFound`` when there is none, or the
        caller may not see it; a memory evicted by the cap has no current version)."""
        check_memory_id(memory_id)
        memory = await asyncio.to_thread(self.long_term.get, principal.tenant, memory_id)
        if memory is None or not principal.may_see(memory):
            raise NotFound(f"no memory {memory_id!r}.", field="id")
        return memory

    async def history(self, principal: Principal, memory_id: str) -> builtins.list[Memory]:
        """Every version of a memory, oldest first, each with its validity and what
        replaced it (``superseded_by``, ``closed_reason``); the last is the current one,
        or the evicted one (``closed_reason="evicted"``) after the cap evicted it. At
        most ``KEPT_VERSIONS`` closed versions are kept. ``NotFound`` as for ``get``:
        another tenant's memory, one the caller's key may not see, one deleted."""
        check_memory_id(memory_id)
        versions = await asyncio.to_thread(self._history, principal, memory_id)
        if not versions or not all(principal.may_see(m) for m in versions):
            raise NotFound(f"no memory {memory_id!r}.", field="id")
        return versions

    def _history(self, principal: Principal, memory_id: str) -> builtins.list[Memory] | None:
        buckets = self._buckets(principal, None, None)
        return self.long_term.history(principal.tenant, memory_id, buckets)

    async def list(
        self,
        principal: Principal,
        *,
        agent_id: str | None = None,
        scope: Scope | None = None,
        session_id: str | None = None,
        key: str | None = None,
        limit: int = 50,
        offset: int = 0,
        as_of: float | None = None,
        include_superseded: bool = False,
        provenances: Sequence[Provenance] | None = None,
        cursor: str | None = None,
    ) -> MemoryPage:
        """A page of memories, newest first, filtered by agent, scope, session, key and
        provenance (any of ``provenances``). ``cursor``: the ``next_cursor`` of the page
        before, to start right after it (at any depth, and stable while memories are
        stored meanwhile: see ``paging``); ``offset`` skips that many more.

        Current versions only, unless ``as_of`` (seconds since the epoch, like
        ``created_at``) asks for the versions valid at that moment, or
        ``include_superseded`` for every version, current or closed (a memory, then its
        closed versions newest first). A version carries the ``id`` of its memory. Not
        both."""
        limit, offset = _check_page(limit, offset, MAX_LIST_LIMIT)
        after = None if cursor is None else decode_cursor(cursor)
        as_of, include_superseded = check_validity(as_of, include_superseded)
        wanted = check_provenances(provenances)
        where = _Where(
            scope=scope,
            session_id=session_id,
            key=key,
            agent_id=agent_id,
            as_of=as_of,
            include_superseded=include_superseded,
            provenances=wanted,
        )

        def listed() -> MemoryPage:  # one thread hop for the buckets and the page
            buckets = self._buckets(principal, agent_id, scope)
            return self._list(principal.tenant, buckets, where, limit, offset, after)

        return await asyncio.to_thread(listed)

    async def agents(self, principal: Principal, *, limit: int = 50, offset: int = 0) -> AgentPage:
        """A page of the tenant's agents that have memories of their own (agent or session
        scope), by agent id, each with how many are current; a key bound to agents sees
        those only. Global memories are the tenant's: they count under no agent."""
        limit, offset = _check_page(limit, offset, MAX_LIST_LIMIT)

        def listed() -> AgentPage:
            known = sorted(b for b in self._buckets(principal, None, None) if b != GLOBAL_BUCKET)
            page = [
                AgentSummary(agent_id=b, memories=self.long_term.count(principal.tenant, b))
                for b in known[offset : offset + limit]
            ]
            return AgentPage(agents=page, total=len(known), limit=limit, offset=offset)

        return await asyncio.to_thread(listed)

    def _buckets(
        self, principal: Principal, agent_id: str | None, scope: Scope | None
    ) -> builtins.list[str]:
        scope = check_scope(scope) if scope is not None else None
        if agent_id is not None:
            check_id_part(agent_id, "agent_id")
            principal.check_agent(agent_id)
            if scope == "global":
                return [GLOBAL_BUCKET]
            return [agent_id] if scope else [agent_id, GLOBAL_BUCKET]
        if scope == "global":
            return [GLOBAL_BUCKET]
        known = self.long_term.buckets(principal.tenant)
        allowed = [
            b
            for b in known
            if b == GLOBAL_BUCKET or principal.agents is None or b in principal.agents
        ]
        return [b for b in allowed if scope is None or b != GLOBAL_BUCKET]

    def _list(
        self,
        tenant: str,
        buckets: builtins.list[str],
        where: _Where,
        limit: int,
        offset: int,
        after: tuple[float, str] | None,
    ) -> MemoryPage:
        wanted = offset + limit
        merged: builtins.list[Record] = []
        total = 0
        for bucket in buckets:
            selector = where.filter_for(bucket)
            total += self.long_term.count(tenant, bucket, selector)
            # One row more than the page: whether another page follows.
            merged.extend(self._head(tenant, bucket, selector, wanted + 1, after))
        # The store's own order (ties by record id ascending), so pages never overlap.
        merged.sort(key=lambda r: (-r.created_at, r.id))
        shown = merged[offset:wanted]
        return MemoryPage(
            memories=[from_record(tenant, r) for r in shown],
            total=total,
            limit=limit,
            offset=offset,
            next_cursor=encode_cursor(shown[-1]) if shown and len(merged) > wanted else None,
        )

    def _head(
        self,
        tenant: str,
        bucket: str,
        selector: Filter | None,
        count: int,
        after: tuple[float, str] | None,
    ) -> builtins.list[Record]:
        """The bucket's first ``count`` records of the listing after ``after``, read
        ``_LIST_CHUNK`` at a time, each read after the last record of the one before."""
        out: builtins.list[Record] = []
        while len(out) < count:
            size = min(count - len(out), _LIST_CHUNK)
            rows = self.long_term.records_page(tenant, bucket, selector, limit=size, after=after)
            out.extend(rows)
            if len(rows) < size:
                break
            after = (rows[-1].created_at, rows[-1].id)
        return out

    async def search(
        self,
        principal: Principal,
        query: str,
        *,
        agent_id: str | None = None,
        scope: Scope | None = None,
        session_id: str | None = None,
        key: str | None = None,
        mode: SearchMode = "hybrid",
        limit: int = 10,
        as_of: float | None = None,
        provenances: Sequence[Provenance] | None = None,
        min_score: float | None = None,
        metadata: Mapping[str, JSON] | None = None,
    ) -> builtins.list[SearchHit]:
        """Full-text, semantic or hybrid search of the long-term tier, best first; of the
        current versions, or with ``as_of`` of the versions valid at that moment (each
        carries the ``id`` of its memory); of any provenance, or of ``provenances``; of
        the memories whose metadata ``metadata`` matches (each key equal to a value, or
        one of ``{"$in": [values]}``: ``metadata_filter``), selected in the database.

        Each hit's ``calibrated`` is its ``score`` (the hybrid relevance) read through
        the calibration of long-term recall, comparable across queries; ``min_score``
        keeps, of the ``limit`` best, those whose ``calibrated`` is at least that. In
        ``text`` mode there is no cosine: the keyword relevance (1 for the best match)
        stands in for the relevance, so the cut there is rougher."""
        if not isinstance(query, str) or not query.strip():
            raise InvalidInput("query must be a non-empty string.", field="query")
        if len(query) > MAX_VALUE_CHARS:
            raise InvalidInput(f"query is over {MAX_VALUE_CHARS} characters.", field="query")
        if mode not in ("hybrid", "text", "semantic"):
            raise InvalidInput("mode must be one of hybrid, text, semantic.", field="mode")
        limit, _ = _check_page(limit, 0, MAX_SEARCH_LIMIT)
        as_of, _ = check_validity(as_of, False)
        cut = check_min_score(min_score)
        wanted = check_provenances(provenances)
        where = _Where(
            scope=scope,
            session_id=session_id,
            key=key,
            agent_id=agent_id,
            as_of=as_of,
            provenances=wanted,
            metadata=check_metadata_filter(metadata),
        )

        def searched() -> builtins.list[SearchHit]:  # one thread hop for buckets and search
            buckets = self._buckets(principal, agent_id, scope)
            return self._search(principal.tenant, buckets, where, query, mode, limit)

        found = await asyncio.to_thread(searched)
        return found if cut is None else [hit for hit in found if hit.calibrated >= cut]

    def _search(
        self,
        tenant: str,
        buckets: builtins.list[str],
        where: _Where,
        query: str,
        mode: SearchMode,
        limit: int,
    ) -> builtins.list[SearchHit]:
        vector = None if mode == "text" else self.embedder.embed_batch([query])[0]
        # One fusion over every bucket's candidates: keyword scores share one scale. The
        # embedding reads the whole question; the keywords leave out its generic words.
        hits = fused_candidates(
            self.long_term.records,
            [self.long_term.namespace(tenant, bucket) for bucket in buckets],
            query=keyword_query(query, SEARCH_STOPWORDS),
            vector=vector,
            pool=max(4 * limit, 40),
            keyword_weight=0.0 if mode == "semantic" else KEYWORD_WEIGHT,
            filters=[where.filter_for(bucket) for bucket in buckets],
            model_id=self.embedder.model_id,
        ).ranked()
        out: list[SearchHit] = []
        words = query_words(query)
        for hit in hits:
            if mode == "text" and not hit.keyword:
                continue
            memory = from_record(tenant, hit.record)
            calibrated = CALIBRATION.of(hit.relevance, coverage(words, hit.record.text))
            out.append(
                SearchHit(
                    memory=memory,
                    score=round(hit.relevance, 6),
                    similarity=round(hit.similarity, 6),
                    keyword=round(hit.keyword or 0.0, 6),
                    provenance=memory.provenance,
                    calibrated=round(calibrated, 6),
                )
            )
            if len(out) == limit:
                break
        return out

    # -- prompt injection --------------------------------------------------------------

    async def context(
        self, principal: Principal, *, agent_id: str, session_id: str | None = None
    ) -> builtins.list[Memory]:
        """The memories injected before an agent runs: its session's, its own and the
        global ones, newest first within each group. Short-term tier first; the long-term
        tier when a bucket is empty there or the tier is down. Expired ones are pruned.
        Without a ``session_id`` the session is ``DEFAULT_SESSION``."""
        check_id_part(agent_id, "agent_id")
        principal.check_agent(agent_id)
        session_id = DEFAULT_SESSION if session_id is None else session_id
        check_id_part(session_id, "session_id")
        return await asyncio.to_thread(self._context, principal.tenant, agent_id, session_id)

    def _context(self, tenant: str, agent_id: str, session_id: str | None) -> builtins.list[Memory]:
        now = self.clock.now()
        self._prune_if_due(now)
        own = self._recent(tenant, agent_id, now)
        shared = self._recent(tenant, GLOBAL_BUCKET, now)
        session = [m for m in own if m.scope == "session" and m.session_id == session_id]
        agent = [m for m in own if m.scope == "agent"]
        return session + agent + shared

    def _prune_if_due(self, now: float) -> None:
        """Delete expired memories from the long-term tier before an injection, at most
        once per second of clock time (one indexed DELETE; reads hide them regardless)."""
        if now - self._pruned_at < PRUNE_EVERY_S:
            return
        self._pruned_at = now
        self.long_term.records.prune_expired(now)

    def _recent(self, tenant: str, bucket: str, now: float) -> builtins.list[Memory]:
        return self._sync.recent(tenant, bucket, now)

    async def prompt_context(
        self,
        principal: Principal,
        *,
        agent_id: str,
        session_id: str | None = None,
        query: str | None = None,
        budget: int | None = None,
        knowledge: KnowledgeBase | None = None,
    ) -> PromptContext:
        """What to inject before an agent runs, built here once for every transport: the
        ``<memories>`` block of the agent's memories (its session's, its own, the global
        ones: every one, or within ``budget`` characters when
        one is given, with a line saying how many it left out) and, for a ``query``, the
        ``<knowledge>`` block of the best passages within half of the budget (of
        ``DEFAULT_BUDGET`` without one; ``knowledge`` overrides the service's)."""
        budget = check_budget(budget)
        found = await self.context(principal, agent_id=agent_id, session_id=session_id)
        base = knowledge or self.knowledge
        hits = await base.search(principal, query, limit=KNOWLEDGE_HITS) if base and query else []
        return assemble(found, hits, budget)

    async def render_memories(
        self,
        principal: Principal,
        *,
        agent_id: str,
        session_id: str | None = None,
        budget_chars: int | None = None,
    ) -> str:
        """The ``<memories>`` block of ``prompt_context`` alone (``""`` when empty)."""
        found = await self.prompt_context(
            principal, agent_id=agent_id, session_id=session_id, budget=budget_chars
        )
        return found.memories_block

    # -- lifecycle ---------------------------------------------------------------------

    async def warmup(self) -> int:
        """Load each agent's most recent memories from the long-term tier into the
        short-term tier, for every tenant; returns how many were loaded."""
        return await asyncio.to_thread(self._warmup)

    def _warmup(self) -> int:
        self._migrate_once()
        loaded = 0
        now = self.clock.now()
        started = time.perf_counter()
        for tenant in self.long_term.tenants():
            for bucket in self.long_term.buckets(tenant):
                loaded += self._sync.fill(tenant, bucket, now)
        _log.info(
            "warmed %d memories into the short-term tier in %.2fs",
            loaded,
            time.perf_counter() - started,
        )
        return loaded

    async def prune_expired(self) -> int:
        """Delete expired memories from the long-term tier (reads already hide them)."""
        return await asyncio.to_thread(self.long_term.records.prune_expired, self.clock.now())


def _erased(where: _Where, bucket: str) -> Filter:
    """What ``delete_many`` erases of ``bucket``: expired and closed versions too."""
    return replace(
        where.filter_for(bucket) or Filter(), include_expired=True, include_superseded=True
    )


def _check_page(limit: object, offset: object, max_limit: int) -> tuple[int, int]:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= max_limit:
        raise InvalidInput(f"limit must be an int from 1 to {max_limit}.", field="limit")
    if (
        isinstance(offset, bool)
        or not isinstance(offset, int)
        or not 0 <= offset <= MAX_LIST_OFFSET
    ):
        raise InvalidInput(
            f"offset must be an int from 0 to {MAX_LIST_OFFSET}; to page deeper, pass the "
            "next_cursor of the page before as cursor.",
            field="offset",
        )
    return limit, offset
