"""UserMemories: every tenant's users' long-term memory, for the server's doors.

A user's memories are a ``LongTermMemory`` over the shared store and embedder, in
``Collection(user_id=..., namespace="chat", tenant=caller.tenant)``: tenant A's user
``u1`` and tenant B's ``u1`` never share a record. Turns are stored verbatim with
their context, facts are remembered, and recall ranks exactly as a ``LongTermMemory``
used in process ranks the same memories (it is one). With an extraction model, each
write of turns queues a job (``user_jobs``) that mines them after the answer.

Opt-in, as for ``ChatSession``: a call uses long-term memory when the server does not
veto it (``MEMSTACK_MEMORY_ENABLED=0``), the server enables it for every key
(``MEMSTACK_MEMORY_ENABLED=1``) or the caller's key has the ``long_term`` right, and the
request does not veto it (``memory_enabled=False``). Off for the key:
``Forbidden`` naming the fix. Vetoed by the request: a write stores nothing (outcome
``skipped``), a read finds nothing. ``forget`` and ``erase`` need the key's right only
(or the server's opt-in), never the server's go-ahead: deleting stays possible after
memory was switched off.
"""

from __future__ import annotations

import asyncio
import bisect
import builtins
import dataclasses
from collections.abc import Mapping, Sequence
from typing import Final

from memstack._json import JSON, to_json
from memstack.clock import Clock, SystemClock
from memstack.embeddings import Embedder
from memstack.errors import Forbidden, InvalidInput, NotFound
from memstack.longterm.calibration import CONTEXT_MIN_SCORE, check_min_score
from memstack.longterm.collection import Collection
from memstack.longterm.memory import DEFAULT_MAX_ITEMS, LongTermMemory, long_term_item
from memstack.longterm.render import render_recalled
from memstack.longterm.turns import Turn, spoken
from memstack.longterm.types import (
    LTM_KINDS,
    LongTermItem,
    LtmKind,
    Provenance,
    RecalledMemory,
)
from memstack.providers.base import ChatModel
from memstack.secrets import refuse_secrets
from memstack.service.paging import (
    decode_cursor,
    decode_user_cursor,
    encode_cursor,
    encode_user_cursor,
)
from memstack.service.principal import Principal
from memstack.service.types import check_user_id
from memstack.service.user_export import check_items, exported, restored_record
from memstack.service.user_jobs import UserJobs
from memstack.service.user_turns import Checked, check_turns, conversation
from memstack.service.user_types import (
    AddTurnsResult,
    JobStatus,
    Page,
    RememberedFact,
    RestoreResult,
    TurnIn,
    TurnOutcome,
    UserPage,
)
from memstack.storage import Filter, Namespace, Record, RecordStore

__all__ = [
    "NAMESPACE",
    "ORIGIN_KEY",
    "AddTurnsResult",
    "JobStatus",
    "Page",
    "RememberedFact",
    "RestoreResult",
    "TurnIn",
    "TurnOutcome",
    "UserMemories",
    "UserPage",
]

NAMESPACE: Final = "chat"
"""The collection every served user's memories live in."""
MAX_PAGE: Final = 1_000
_MAX_CHAIN: Final = 64
"""How many ``superseded_by`` links ``get`` follows from an old id to the current one
before it looks the current one up by ``origin_id`` (one read by id per link is cheaper
than a metadata lookup for the few updates most memories get)."""
ORIGIN_KEY: Final = "origin_id"
"""The metadata key of a version ``update`` wrote: the id its memory was first stored
under, so a caller that holds that id (mem0's clients do) keeps finding it by it."""
_KEPT_FIELDS: Final = frozenset({"speaker", "session_id", "turn_seq", ORIGIN_KEY})
"""What a memory's metadata holds for memstack (a turn's place, its first id), kept by
``update``."""
_EXPORT_PAGE: Final = 1_000
OFF_MESSAGE: Final = (
    "long-term memory is off for this API key: switch it on for every key with "
    "MEMSTACK_MEMORY_ENABLED=1 on the server, or use a key created with `memstack keys "
    "create --long-term`."
)
VETO_MESSAGE: Final = (
    "long-term memory is switched off on this server (MEMSTACK_MEMORY_ENABLED=0), for "
    "every key; unset it or set MEMSTACK_MEMORY_ENABLED=1 to use it."
)


class UserMemories:
    """Per tenant, per user: turns, facts, recall, history, jobs, export. Every method
    takes the caller first and the user's id (a tenant, agent or session id's rules)."""

    def __init__(
        self,
        *,
        records: RecordStore,
        embedder: Embedder,
        extraction_provider: ChatModel | None = None,
        extraction_model: str | None = None,
        memory_enabled: bool | None = None,
        max_items: int = DEFAULT_MAX_ITEMS,
        clock: Clock | None = None,
    ) -> None:
        if (extraction_provider is None) != (not extraction_model):
            raise InvalidInput(
                "give extraction_provider and extraction_model together, or neither.",
                field="extraction_model",
            )
        if isinstance(max_items, bool) or not isinstance(max_items, int) or max_items < 0:
            raise InvalidInput("max_items must be an int >= 0 (0: no cap).", field="max_items")
        self.records = records
        self.embedder = embedder
        self.extraction_provider = extraction_provider
        self.extraction_model = extraction_model
        self.memory_enabled = memory_enabled
        self.max_items = max_items
        self.clock: Clock = clock or SystemClock()
        self.jobs = UserJobs(records, self.clock)

    # -- the rules ------------------------------------------------------------------

    def memory(self, caller: Principal, user_id: str) -> LongTermMemory:
        """The user's ``LongTermMemory`` (no opt-in check: the methods make it)."""
        check_user_id(user_id)
        return LongTermMemory(
            collection=Collection(user_id=user_id, namespace=NAMESPACE, tenant=caller.tenant),
            store=self.records,
            embedder=self.embedder,
            extraction_provider=self.extraction_provider,
            extraction_model=self.extraction_model,
            max_items=self.max_items,
            clock=self.clock,
        )

    def enabled(self, caller: Principal, memory_enabled: bool | None = None) -> bool:
        """True when the call uses long-term memory, False when the request vetoes it;
        ``Forbidden`` (field ``memory_enabled``) when it is off for the caller's key."""
        if memory_enabled is not None and not isinstance(memory_enabled, bool):
            raise InvalidInput(
                "memory_enabled must be true, false or null.", field="memory_enabled"
            )
        if memory_enabled is False:
            return False
        if self.memory_enabled is False:
            raise Forbidden(VETO_MESSAGE, field="memory_enabled")
        if self.memory_enabled is True or caller.long_term:
            return True
        raise Forbidden(OFF_MESSAGE, field="memory_enabled")

    def _may_delete(self, caller: Principal) -> None:
        if not (caller.long_term or self.memory_enabled is True):
            raise Forbidden(OFF_MESSAGE, field="memory_enabled")

    # -- writing --------------------------------------------------------------------

    async def add_turns(
        self,
        caller: Principal,
        user_id: str,
        turns: Sequence[TurnIn],
        *,
        memory_enabled: bool | None = None,
        extract: bool = True,
    ) -> AddTurnsResult:
        """Store conversation turns verbatim, with their context, as
        ``LongTermMemory.remember_turns`` does; one outcome per turn, in order. A turn sent
        again with its ``id`` is ``duplicate`` and left as stored; one the secret filter
        refuses is ``refused`` (the others are stored). With an extraction model, the
        stored turns are mined after the answer by the job ``job_id`` names, unless
        ``extract`` is False (the turns are all the caller wants kept)."""
        memory = self.memory(caller, user_id)
        use = self.enabled(caller, memory_enabled)
        checked = check_turns(turns, self.clock.now())
        if not use:
            return AddTurnsResult(turns=[TurnOutcome(id=c.id, outcome="skipped") for c in checked])
        outcomes = await self._stored(memory, checked)
        stored = [
            c.turn
            for c, o in zip(checked, outcomes, strict=True)
            if o.outcome == "stored" and c.turn is not None
        ]
        queue = stored and extract
        job_id = await self._queue(caller.tenant, user_id, memory, stored) if queue else None
        return AddTurnsResult(turns=outcomes, job_id=job_id)

    async def _stored(self, memory: LongTermMemory, checked: list[Checked]) -> list[TurnOutcome]:
        given = [c.id for c in checked if c.turn is not None]
        held = await asyncio.to_thread(self.records.get, memory.namespace, given)
        seen = {r.id for r in held}
        outcomes: list[TurnOutcome | None] = [None] * len(checked)
        new: list[tuple[int, Turn]] = []
        for i, c in enumerate(checked):
            if c.turn is None:
                outcomes[i] = TurnOutcome(id=c.id, outcome="refused", reason=c.refused)
            elif c.id in seen:
                outcomes[i] = TurnOutcome(id=c.id, outcome="duplicate")
            else:
                seen.add(c.id)
                new.append((i, c.turn))
        done = await memory.remember_turns([turn for _, turn in new])
        for (i, turn), outcome in zip(new, done, strict=True):
            assert turn.id is not None
            if outcome.status == "stored":
                outcomes[i] = TurnOutcome(id=turn.id, outcome="stored")
            else:  # the filter of remember_turns: nothing check_turns let through
                reason = f"not stored: it looks like a secret ({outcome.secret_kind})."
                outcomes[i] = TurnOutcome(id=turn.id, outcome="refused", reason=reason)
        return [o for o in outcomes if o is not None]

    async def _queue(
        self, tenant: str, user_id: str, memory: LongTermMemory, turns: list[Turn]
    ) -> str | None:
        """The id of the job that mines ``turns`` after the answer; None without a model."""
        if self.extraction_provider is None:
            return None
        job = await asyncio.to_thread(self.jobs.create, tenant, user_id)

        async def run() -> list[str]:
            outcomes = await memory.remember_conversation(conversation(turns))
            return [o.id for o in outcomes if o.status == "stored" and o.id]

        self.jobs.start(tenant, user_id, job, run)
        return job.id

    async def remember(
        self,
        caller: Principal,
        user_id: str,
        text: str,
        *,
        kind: LtmKind = "fact",
        importance: float = 0.5,
        supersedes: Sequence[str] = (),
        metadata: dict[str, JSON] | None = None,
        memory_enabled: bool | None = None,
    ) -> RememberedFact:
        """Store one fact, as ``LongTermMemory.remember`` does: ``duplicate`` (with the
        stored fact's id) when one close to it is stored, ``refused`` when it holds a
        secret; ``supersedes`` closes the facts it replaces, kept as history."""
        memory = self.memory(caller, user_id)
        if not self.enabled(caller, memory_enabled):
            return RememberedFact(id=None, outcome="skipped")
        done = await memory.remember(
            text, kind=kind, importance=importance, supersedes=supersedes, metadata=metadata
        )
        if done.status == "duplicate":
            return RememberedFact(id=done.duplicate_of, outcome="duplicate")
        if done.status == "secret":
            reason = (
                f"not stored: it looks like a secret ({(done.secret_kind or '').replace('_', ' ')}"
                "); credentials are never kept in long-term memory."
            )
            return RememberedFact(id=None, outcome="refused", reason=reason)
        return RememberedFact(id=done.id, outcome="stored")

    # -- reading --------------------------------------------------------------------

    async def recall(
        self,
        caller: Principal,
        user_id: str,
        query: str,
        *,
        k: int = 10,
        touch: bool = True,
        as_of: float | None = None,
        include_superseded: bool = False,
        provenances: Sequence[Provenance] | None = None,
        session_id: str | None = None,
        memory_enabled: bool | None = None,
        min_score: float | None = None,
    ) -> list[RecalledMemory]:
        """The ``k`` best memories for ``query``, ranked as ``LongTermMemory.recall``
        ranks them; ``session_id``, the conversation the query comes from, favours its
        turns (the context bonuses) without leaving the others out; ``min_score`` keeps
        those whose calibrated relevance is at least that. [] when vetoed."""
        memory = self.memory(caller, user_id)
        check_min_score(min_score)
        if not self.enabled(caller, memory_enabled):
            return []
        return await memory.recall(
            query,
            k,
            touch=touch,
            as_of=as_of,
            include_superseded=include_superseded,
            provenances=provenances,
            session_id=session_id,
            min_score=min_score,
        )

    async def context(
        self,
        caller: Principal,
        user_id: str,
        query: str,
        *,
        k: int = 10,
        session_id: str | None = None,
        memory_enabled: bool | None = None,
        min_score: float | None = None,
    ) -> str:
        """The ``<recalled-memories>`` block of ``recall``, as ``ChatSession`` injects
        it: the memories whose calibrated relevance is at least ``min_score``
        (``CONTEXT_MIN_SCORE`` when None; 0 keeps all ``k``); "" when none is."""
        found = await self.recall(
            caller,
            user_id,
            query,
            k=k,
            session_id=session_id,
            memory_enabled=memory_enabled,
            min_score=CONTEXT_MIN_SCORE if min_score is None else min_score,
        )
        return render_recalled(found)

    async def memories(
        self,
        caller: Principal,
        user_id: str,
        *,
        limit: int = 50,
        cursor: str | None = None,
        include_superseded: bool = False,
    ) -> Page:
        """A page of the user's memories (turns and facts), newest first, untouched."""
        memory = self.memory(caller, user_id)
        self.enabled(caller)
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_PAGE:
            raise InvalidInput(f"limit must be an int from 1 to {MAX_PAGE}.", field="limit")
        after = None if cursor is None else decode_cursor(cursor)
        wanted = Filter(include_superseded=True) if include_superseded else None
        found = await asyncio.to_thread(
            self.records.list, memory.namespace, filter=wanted, limit=limit + 1, after=after
        )
        more = len(found) > limit
        return Page(
            items=[long_term_item(r) for r in found[:limit]],
            next_cursor=encode_cursor(found[limit - 1]) if more else None,
        )

    async def history(
        self, caller: Principal, user_id: str, memory_id: str
    ) -> builtins.list[LongTermItem]:
        """Every version of a memory, oldest first; ``NotFound`` for an unknown id."""
        memory = self.memory(caller, user_id)
        self.enabled(caller)
        return await memory.history(memory_id)

    async def get(self, caller: Principal, user_id: str, memory_id: str) -> LongTermItem:
        """The current version of a memory: the memory itself, or the version that
        replaced it (a memory that was updated keeps answering to its first id).
        ``NotFound`` for an unknown id, or one deleted or evicted."""
        memory = self.memory(caller, user_id)
        self.enabled(caller)
        found = await asyncio.to_thread(self._current, memory.namespace, memory_id)
        return long_term_item(found)

    async def get_many(
        self, caller: Principal, user_id: str, memory_ids: Sequence[str]
    ) -> builtins.list[LongTermItem]:
        """The memories of these ids as stored (any version), in one read; an unknown id
        is left out."""
        memory = self.memory(caller, user_id)
        self.enabled(caller)
        found = await asyncio.to_thread(self.records.get, memory.namespace, list(memory_ids))
        return [long_term_item(r) for r in found]

    def _current(self, namespace: str, memory_id: str) -> Record:
        """The record ``memory_id`` is now: itself, or where its ``superseded_by`` links
        lead; past ``_MAX_CHAIN`` links, the current version ``update`` wrote for the id
        the memory was first stored under (its ``origin_id``), however many updates ago."""
        found = self.records.get(namespace, [memory_id]) if memory_id else []
        origin = found[0].metadata.get(ORIGIN_KEY, memory_id) if found else memory_id
        for _ in range(_MAX_CHAIN):
            if not found:
                break
            record = found[0]
            if record.valid_to is None:
                return record
            if record.superseded_by is None:
                break
            found = self.records.get(namespace, [record.superseded_by])
        else:
            newest = self.records.list(
                namespace, filter=Filter(metadata={ORIGIN_KEY: origin}), limit=1
            )
            if newest:
                return newest[0]
        raise NotFound(
            f"no current memory with this id ({len(memory_id)} characters) for this user.",
            field="memory_id",
        )

    async def update(
        self,
        caller: Principal,
        user_id: str,
        memory_id: str,
        *,
        text: str | None = None,
        metadata: dict[str, JSON] | None = None,
    ) -> LongTermItem:
        """Change a memory. A new ``text`` is a new version: it supersedes the current
        one, which ``history`` keeps; ``metadata`` alone is rewritten in place. Both pass
        the secret filter; the fields memstack keeps in a turn's metadata (its speaker,
        session and place in the session) are kept. Returns the current version."""
        memory = self.memory(caller, user_id)
        self.enabled(caller)
        if text is None and metadata is None:
            raise InvalidInput("give text or metadata to change.", field="text")
        if metadata is not None:
            to_json(metadata, field="metadata")
            refuse_secrets({"metadata": metadata}, where="long-term memory")
        current = await asyncio.to_thread(self._current, memory.namespace, memory_id)
        kept = {k: v for k, v in current.metadata.items() if k in _KEPT_FIELDS}
        merged = {**(current.metadata if metadata is None else metadata), **kept}
        said = spoken(current.text, current.metadata)
        if text is None or text == (current.text if said is None else said):
            changed = dataclasses.replace(current, metadata=merged, updated_at=self.clock.now())
            await asyncio.to_thread(self.records.upsert, [changed], model_id=self.embedder.model_id)
            return long_term_item(changed)
        merged.pop("turn_seq", None)  # the new version is not a turn of its session
        merged[ORIGIN_KEY] = current.metadata.get(ORIGIN_KEY, current.id)
        speaker = current.metadata.get("speaker")
        done = await memory.remember(
            text if said is None else f"{speaker}: {text}",
            kind=current.kind if current.kind in LTM_KINDS else "fact",
            importance=current.importance,
            metadata=merged,
            supersedes=[current.id],
        )
        if done.status == "secret":
            raise InvalidInput(
                f"not stored: text looks like a secret ({done.secret_kind}); credentials "
                "are never kept in long-term memory.",
                field="text",
            )
        assert done.id is not None
        return await self.get(caller, user_id, done.id)

    async def retire(self, caller: Principal, user_id: str, memory_id: str) -> LongTermItem:
        """Close a memory's current version now (``closed_reason="deleted"``): recall and
        listings leave it out, ``history`` keeps it. Returns the version closed;
        ``NotFound`` when there is no current version."""
        memory = self.memory(caller, user_id)
        self._may_delete(caller)
        current = await asyncio.to_thread(self._current, memory.namespace, memory_id)
        if not await memory.retire(current.id):
            raise NotFound("this memory was closed meanwhile.", field="memory_id")
        return long_term_item(current)

    async def job(self, caller: Principal, user_id: str, job_id: str) -> JobStatus:
        """An extraction job of the user; ``NotFound`` for another user's or tenant's."""
        check_user_id(user_id)
        self.enabled(caller)
        if not isinstance(job_id, str) or not job_id or len(job_id) > 128:
            raise NotFound(f"no job {str(job_id)[:40]!r}.", field="job_id")
        found = await asyncio.to_thread(self.jobs.get, caller.tenant, user_id, job_id)
        if found is None:
            raise NotFound(f"no job {job_id!r} for user {user_id!r}.", field="job_id")
        return found

    async def users(
        self, caller: Principal, *, limit: int = 50, cursor: str | None = None
    ) -> UserPage:
        """The caller's tenant's users that hold a memory, by id, ``limit`` at a time."""
        self.enabled(caller)
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_PAGE:
            raise InvalidInput(f"limit must be an int from 1 to {MAX_PAGE}.", field="limit")
        after = None if cursor is None else decode_user_cursor(cursor)
        root = Namespace("users", caller.tenant)
        names = await asyncio.to_thread(self.records.namespaces, root.prefix())
        ids = sorted({Namespace.decode(name).parts[1] for name in names})
        if after is not None:
            ids = ids[bisect.bisect_right(ids, after) :]
        more = len(ids) > limit
        return UserPage(
            users=ids[:limit], next_cursor=encode_user_cursor(ids[limit - 1]) if more else None
        )

    # -- erasing, export and restore ----------------------------------------------------

    async def forget(self, caller: Principal, user_id: str, memory_id: str) -> bool:
        """Erase one memory (history keeps nothing of it); True when it existed."""
        memory = self.memory(caller, user_id)
        self._may_delete(caller)
        return await memory.forget(memory_id)

    async def erase(self, caller: Principal, user_id: str) -> int:
        """Erase the user: every turn, fact, version and job; how many records went."""
        memory = self.memory(caller, user_id)
        self._may_delete(caller)
        self.jobs.cancel(caller.tenant, user_id)
        erased = await memory.clear()
        return erased + await asyncio.to_thread(self.jobs.erase, caller.tenant, user_id)

    async def export(self, caller: Principal, user_id: str) -> builtins.list[dict[str, JSON]]:
        """Every memory of the user, every version, oldest first (``user_export``)."""
        memory = self.memory(caller, user_id)
        self.enabled(caller)
        return await asyncio.to_thread(self._export, memory.namespace)

    def _export(self, namespace: str) -> builtins.list[dict[str, JSON]]:
        out: builtins.list[dict[str, JSON]] = []
        wanted = Filter(include_superseded=True)
        after: tuple[float, str] | None = None
        while True:
            page = self.records.list(
                namespace, filter=wanted, limit=_EXPORT_PAGE, order="created_desc", after=after
            )
            out.extend(exported(r) for r in page)
            if len(page) < _EXPORT_PAGE:
                return out[::-1]
            after = (page[-1].created_at, page[-1].id)

    async def restore(
        self,
        caller: Principal,
        user_id: str,
        items: Sequence[Mapping[str, object]],
        *,
        replace: bool = False,
    ) -> RestoreResult:
        """Write back what ``export`` listed, in one transaction, every item checked
        first; an id the user holds already is left as it is (``skipped``) unless
        ``replace``."""
        memory = self.memory(caller, user_id)
        self.enabled(caller)
        now = self.clock.now()
        given = check_items(items)
        records = [
            restored_record(item, i, namespace=memory.namespace, now=now)
            for i, item in enumerate(given)
        ]
        return await asyncio.to_thread(self._restore, memory.namespace, records, replace)

    def _restore(self, namespace: str, records: list[Record], replace: bool) -> RestoreResult:
        unique = list({r.id: r for r in records}.values())
        held = (
            set()
            if replace
            else {r.id for r in self.records.get(namespace, [r.id for r in unique])}
        )
        new = [r for r in unique if r.id not in held]
        if new:
            vectors = self.embedder.embed_batch([r.text for r in new])
            embedded = [
                dataclasses.replace(r, embedding=v) for r, v in zip(new, vectors, strict=True)
            ]
            self.records.write(upserts=embedded, model_id=self.embedder.model_id)
        return RestoreResult(stored=len(new), skipped=len(records) - len(new))

    async def wait_for_jobs(self) -> None:
        """Wait for the extraction jobs started so far (for tests)."""
        await self.jobs.wait()

    async def stop_jobs(self) -> None:
        """Stop the running extraction jobs, each recorded as interrupted (shutdown)."""
        await self.jobs.stop()
