"""LongTermMemory: durable, per-user memories recalled by a hybrid score."""

from __future__ import annotations

import asyncio
import math
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Final, TypedDict

import numpy as np

from memstack._json import JSON, to_json
from memstack.clock import Clock, SystemClock
from memstack.embeddings import Embedder
from memstack.errors import ConfigError, InvalidInput, WriteConflict
from memstack.longterm.calibration import calibrated, check_min_score
from memstack.longterm.collection import Collection
from memstack.longterm.extraction import build_extraction_messages, parse_candidates
from memstack.longterm.inherit import Carried, carried_candidates
from memstack.longterm.reconcile import (
    MAX_SIMILAR,
    Similar,
    build_reconcile_messages,
    needs_reconciliation,
    parse_decisions,
    shown_ids,
)
from memstack.longterm.scoring import (
    HALF_LIFE_DAYS,
    KEYWORD_WEIGHT,
    W_IMPORTANCE,
    W_RECENCY,
    ContextScores,
    ContextTerms,
    ContextWeights,
    ScoreBreakdown,
    final_scores,
    hybrid_score,
    recencies,
    recency,
)
from memstack.longterm.turns import (
    DEFAULT_RADIUS,
    MAX_SESSION_SCAN,
    MAX_SPEAKER_CHARS,
    Turn,
    check_turn,
    turn_text,
    with_context,
)
from memstack.longterm.types import (
    LTM_KINDS,
    PROVENANCES,
    Candidate,
    LongTermItem,
    LtmKind,
    Provenance,
    RecalledMemory,
    RememberOutcome,
)
from memstack.providers.base import ChatModel, Message
from memstack.secrets import find_secret, looks_like_secret
from memstack.storage import Cap, Expect, Filter, Record, RecordStore
from memstack.storage._vectors import top_k
from memstack.storage.types import own_metadata
from memstack.storage.versions import Closing, close_current, closed, history

__all__ = [
    "DEDUPE_THRESHOLD",
    "DEFAULT_MAX_ITEMS",
    "SIMILAR_FLOOR",
    "LongTermMemory",
    "long_term_item",
]

DEFAULT_MAX_ITEMS: Final = 500
DEDUPE_THRESHOLD: Final = 0.92
MAX_TEXT_CHARS: Final = 4_000
MAX_K: Final = 100
_MIN_POOL: Final = 50
_CLOSE_TRIES: Final = 3
"""Writes of a supersede tried while other writers change what it closes: past them, the
conflict is raised (a closed target is refused at once, naming its successor)."""
SIMILAR_FLOOR: Final = 0.4
"""Stored memories shown to reconciliation have at least this cosine to the candidate.
The gate errs towards showing: a memory not shown cannot be updated, while one shown in
vain costs a few tokens (the model decides). With all-MiniLM-L6-v2, nearly every (new
value, old value) pair of one fact on ``memstack bench updates``'s conversations clears
it, and so do many pairs of two different facts about one person: the model tells them
apart."""


class LongTermMemory:
    """One user's memories in one collection: recall, remember, forget.

    Every write path (``remember``, ``remember_many``, ``remember_conversation``)
    runs the secret filter over the text and the metadata (keys and values), then
    near-duplicate dedupe, then upsert, then eviction.
    Storage and embedding work runs in a worker thread, off the event loop.
    """

    def __init__(
        self,
        *,
        collection: Collection,
        store: RecordStore,
        embedder: Embedder,
        extraction_provider: ChatModel | None = None,
        extraction_model: str | None = None,
        max_items: int = DEFAULT_MAX_ITEMS,
        clock: Clock | None = None,
        owns_store: bool = False,
        keyword_weight: float = KEYWORD_WEIGHT,
        context_weights: ContextWeights | None = None,
    ) -> None:
        if isinstance(max_items, bool) or not isinstance(max_items, int) or max_items < 0:
            raise InvalidInput(
                "max_items must be an int >= 0 (0 disables eviction).", field="max_items"
            )
        self.collection = collection
        self.store = store
        self.embedder = embedder
        self.extraction_provider = extraction_provider
        self.extraction_model = extraction_model
        self.max_items = max_items
        self.clock: Clock = clock or SystemClock()
        self._owns_store = owns_store
        if not 0 <= keyword_weight <= 1:
            raise InvalidInput("keyword_weight must be from 0 to 1.", field="keyword_weight")
        self.keyword_weight = keyword_weight
        self.context_weights = context_weights or ContextWeights()

    @property
    def namespace(self) -> str:
        return self.collection.name

    def is_ready(self) -> bool:
        """True when memories can be stored and recalled (a store and an embedder are set)."""
        return self.store is not None and self.embedder is not None

    # -- recall ------------------------------------------------------------------

    async def recall(
        self,
        query: str,
        k: int = 5,
        *,
        touch: bool = True,
        as_of: float | None = None,
        include_superseded: bool = False,
        provenances: Sequence[Provenance] | None = None,
        session_id: str | None = None,
        min_score: float | None = None,
    ) -> list[RecalledMemory]:
        """The ``k`` best memories for ``query``, best first (equal scores: the more
        relevant first, then the smaller id).

        Candidates are the nearest neighbours by embedding plus the best keyword (BM25)
        matches; each is scored 0.7·relevance + 0.2·recency + 0.1·importance, where
        relevance is cosine similarity blended with keyword relevance
        (``keyword_weight``, 0.3 by default; 0 gives pure cosine). Unless
        ``touch=False``, ``last_accessed_at`` is bumped on what is returned.

        Only current memories are recalled: ``as_of`` (seconds since the epoch, like
        ``created_at``) recalls those valid at that moment instead, and
        ``include_superseded`` every version; ``provenances`` keeps memories learned
        those ways. A memory is found through the versions it replaced: its relevance is
        at least theirs (``scores.inherited_from``), while they stay hidden
        (``longterm.inherit``). ``session_id`` names the conversation session the query comes from:
        its turns get the session bonus of the session that matched best (they are
        favoured, not kept alone). Recalling the past touches nothing.

        Each carries ``scores.calibrated``, the chance in [0, 1] that it answers the
        query, the same for every query (``longterm.calibration``); ``min_score`` keeps,
        of the ``k`` best, those whose calibrated relevance is at least that.
        """
        _check_text(query, "query")
        _check_k(k)
        wanted = _filter(as_of, include_superseded, provenances)
        if session_id is not None:
            _check_text(session_id, "session_id")
        touch = touch and as_of is None and not include_superseded
        cut = check_min_score(min_score)
        return await asyncio.to_thread(self._recall, query, k, touch, wanted, session_id, cut)

    def _recall(
        self,
        query: str,
        k: int,
        touch: bool,
        wanted: Filter | None,
        session_id: str | None,
        min_score: float | None = None,
    ) -> list[RecalledMemory]:
        found = self._candidates(query, wanted, pool=max(4 * k, _MIN_POOL))
        records, now = found.records, self.clock.now()
        metadata = [r.metadata for r in records]
        context = ContextScores.of_columns(
            query,
            relevance=found.relevance,
            texts=[r.text for r in records],
            sessions=[_text_or_none(m.get("session_id")) for m in metadata],
            speakers=[_text_or_none(m.get("speaker")) for m in metadata],
            weights=self.context_weights,
            current_session=session_id,
        )
        relevance = np.asarray(found.relevance, dtype=np.float64)
        scores = final_scores(
            relevance=relevance,
            lift=context.lifts,
            recency=recencies(
                created_at=[r.created_at for r in records],
                last_accessed_at=[r.last_accessed_at for r in records],
                now=now,
            ),
            importance=[r.importance for r in records],
        )
        # Best score first; ties go to the more relevant, then to the smaller id.
        best = top_k(scores, k, lambda i: (-relevance[i], records[i].id)).tolist()
        ranked = [
            _recalled(
                records[i],
                self._score(
                    records[i],
                    found.similarity[i],
                    None if found.keyword is None else found.keyword[i],
                    now,
                    context.terms(i),
                    None if found.via is None else found.via[i],
                ),
            )
            for i in best
        ]
        return self._handed(query, ranked, min_score, touch, now)

    def _candidates(self, query: str, wanted: Filter | None, *, pool: int) -> Carried:
        """A recall's candidates; a memory carries the match of the versions it replaced."""
        vector = self.embedder.embed_batch([query])[0]
        return carried_candidates(
            self.store,
            self.namespace,
            query=query,
            vector=vector,
            pool=pool,
            keyword_weight=self.keyword_weight,
            filter=wanted,
            model_id=self.embedder.model_id,
        )

    def _handed(
        self,
        query: str,
        ranked: list[RecalledMemory],
        min_score: float | None,
        touch: bool,
        now: float,
    ) -> list[RecalledMemory]:
        """What a recall returns of ``ranked``: each with its calibrated relevance, those
        under ``min_score`` left out, the rest touched (with ``touch``)."""
        kept = calibrated(query, ranked, min_score)
        if touch and kept:
            self.store.touch(self.namespace, [item.id for item in kept], now)
        return kept

    def _score(
        self,
        record: Record,
        similarity: float,
        keyword: float | None,
        now: float,
        context: ContextTerms,
        inherited_from: str | None = None,
    ) -> ScoreBreakdown:
        return hybrid_score(
            context=context,
            similarity=similarity,
            keyword=keyword,
            keyword_weight=self.keyword_weight,
            recency=recency(
                created_at=record.created_at, last_accessed_at=record.last_accessed_at, now=now
            ),
            importance=record.importance,
            provenance=record.provenance,
            inherited_from=inherited_from,
        )

    # -- writing -----------------------------------------------------------------

    async def remember(
        self,
        text: str,
        *,
        kind: LtmKind = "fact",
        importance: float = 0.5,
        created_at: float | None = None,
        metadata: dict[str, JSON] | None = None,
        supersedes: Sequence[str] = (),
        provenance: Provenance = "user_stated",
        provenance_detail: str | None = None,
    ) -> RememberOutcome:
        """Store one memory unless it looks like a secret or duplicates an existing one.

        ``supersedes`` names current memories this one replaces ("Bob moved to Berlin"
        replacing "Bob lives in Lisbon"): they are closed from ``created_at`` (now by
        default) and kept as history, never deleted; a memory that supersedes others is
        not checked for duplicates. ``provenance`` says how it was learned."""
        candidate = Candidate(
            text=text,
            kind=kind,
            importance=importance,
            created_at=created_at,
            metadata=metadata or {},
            supersedes=_check_ids(supersedes, "supersedes"),
            provenance=provenance,
            provenance_detail=provenance_detail,
        )
        (outcome,) = await self.remember_many([candidate])
        return outcome

    async def remember_many(
        self, candidates: Sequence[Candidate], *, dedupe: bool = True
    ) -> list[RememberOutcome]:
        """Run each candidate through the secret filter and dedupe, store the survivors
        in one batch, then evict down to ``max_items``. One outcome per candidate, in order."""
        checked = [_validated(c, i) for i, c in enumerate(candidates)]
        if not checked:
            return []
        return await asyncio.to_thread(self._remember_many, checked, dedupe)

    async def remember_conversation(
        self, messages: Sequence[Message], *, reconcile: bool = True
    ) -> list[RememberOutcome]:
        """Mine a finished turn for memories and store them.

        Tool and system messages never reach the extraction model; it sees at most
        12,000 characters and may propose at most 8 memories.

        Each candidate passes the secret filter as soon as it is extracted: one that
        looks like a secret (outcome ``secret``) is never embedded, compared, shown to
        the model or stored.

        With ``reconcile`` (the default), when some candidate has stored memories close
        to it (cosine >= ``SIMILAR_FLOOR``), a second call shows the model those memories
        (never one that looks like a secret) and it decides per candidate: ``add``;
        ``update <id>`` (the candidate supersedes that memory); ``delete <id>`` (that
        memory is closed, its text kept in history, outcome ``retired``); or ``none``
        (outcome ``unchanged``). A malformed decision reply is a ``ReconcileError`` and
        nothing is stored or changed. One outcome per candidate, in order.
        """
        if self.extraction_provider is None or not self.extraction_model:
            raise ConfigError(
                "remember_conversation needs an extraction_provider and an extraction_model; "
                "pass them to LongTermMemory or create_default_long_term_memory."
            )
        prompt = build_extraction_messages(messages)
        if prompt is None:
            return []
        reply = await self.extraction_provider.generate(
            prompt, model=self.extraction_model, json_output=True
        )
        candidates = [
            replace(c, provenance="extracted", provenance_detail=self.extraction_model)
            for c in parse_candidates(reply.content)
        ]
        # The secret filter first: nothing it refuses is embedded, deduped, shown to a
        # model or stored.
        refused = [_secret_outcome(c) for c in candidates]
        clean = [c for c, outcome in zip(candidates, refused, strict=True) if outcome is None]
        if not reconcile or not clean:
            kept = await self.remember_many(clean)
        else:
            kept = await self._reconciled(clean)
        rest = iter(kept)  # one outcome per clean candidate, in order
        return [next(rest) if outcome is None else outcome for outcome in refused]

    async def _reconciled(self, candidates: list[Candidate]) -> list[RememberOutcome]:
        """Show the model each candidate's similar stored memories and apply its decisions."""
        assert self.extraction_provider is not None and self.extraction_model
        vectors, similar = await asyncio.to_thread(self._similar, candidates)
        if not needs_reconciliation(similar):
            return await asyncio.to_thread(self._remember_many, candidates, True, vectors)
        reply = await self.extraction_provider.generate(
            build_reconcile_messages(candidates, similar),
            model=self.extraction_model,
            json_output=True,
        )
        provider = getattr(self.extraction_provider, "provider_name", None)
        decisions = parse_decisions(
            reply.content,
            len(candidates),
            shown_ids(similar),
            provider=provider if isinstance(provider, str) else "unknown",
        )
        outcomes: list[RememberOutcome | None] = [None] * len(candidates)
        keep: list[int] = []
        retire: list[str] = []
        for decision in decisions:
            i, target = decision.candidate, decision.target
            if decision.action == "none":
                outcomes[i] = RememberOutcome(status="unchanged", text=candidates[i].text)
            elif decision.action == "delete" and target is not None:
                outcomes[i] = RememberOutcome(status="retired", text=candidates[i].text, id=target)
                retire.append(target)
            else:
                if decision.action == "update" and target is not None:
                    candidates[i] = replace(candidates[i], supersedes=(target,))
                keep.append(i)
        stored = await asyncio.to_thread(
            self._remember_many,
            [candidates[i] for i in keep],
            True,
            vectors[keep],
            retire,
        )
        for i, outcome in zip(keep, stored, strict=True):
            outcomes[i] = outcome
        return [o for o in outcomes if o is not None]

    def _similar(self, candidates: list[Candidate]) -> tuple[np.ndarray, list[list[Similar]]]:
        """The candidates' vectors, and for each its closest current stored memories
        (leaving out any that looks like a secret: stored before the filter knew its
        shape, it is still never sent to a model)."""
        vectors = self.embedder.embed_batch([c.text for c in candidates])
        similar = [
            [
                Similar(id=hit.record.id, text=hit.record.text)
                for hit in self.store.vector_search(
                    self.namespace, vector, k=MAX_SIMILAR, model_id=self.embedder.model_id
                )
                if hit.score >= SIMILAR_FLOOR and not looks_like_secret(hit.record.text)
            ]
            for vector in vectors
        ]
        return vectors, similar

    async def remember_turns(
        self, turns: Sequence[Turn], *, context_radius: int = DEFAULT_RADIUS
    ) -> list[RememberOutcome]:
        """Store conversation turns verbatim, each as ``"<speaker>: <text>"`` with its
        session date and neighbouring turns as context (``longterm.turns``); no LLM.

        Turns may come one at a time or a whole conversation at once: a later turn
        updates the context of the ones before it. Each turn passes the secret filter
        (a refused one is stored nowhere, not even in a neighbour's context); turns are
        never deduplicated. ``context_radius`` turns before and after make a context
        (0: none). One outcome per turn, in order.
        """
        limit = MAX_TEXT_CHARS - MAX_SPEAKER_CHARS - 2
        checked = [check_turn(t, i, limit) for i, t in enumerate(turns)]
        if isinstance(context_radius, bool) or context_radius not in range(11):
            raise InvalidInput(
                f"context_radius must be an int from 0 to 10; got {context_radius!r}.",
                field="context_radius",
            )
        if not checked:
            return []
        return await asyncio.to_thread(self._remember_turns, checked, context_radius)

    def _remember_turns(self, turns: list[Turn], radius: int) -> list[RememberOutcome]:
        texts = [turn_text(turn) for turn in turns]
        outcomes: list[RememberOutcome | None] = [None] * len(turns)
        kept: list[int] = []
        for i, (turn, text) in enumerate(zip(turns, texts, strict=True)):
            found = find_secret({"text": text, "metadata": turn.metadata})
            if found is None:
                kept.append(i)
            else:
                outcomes[i] = RememberOutcome(status="secret", text=text, secret_kind=found.kind)
        if kept:
            vectors = self.embedder.embed_batch([texts[i] for i in kept])
            now = self.clock.now()
            records = [
                self._turn_record(turns[i], texts[i], vectors[row], now)
                for row, i in enumerate(kept)
            ]
            sessions: dict[str, list[Record]] = {}
            for record, i in zip(records, kept, strict=True):
                sessions.setdefault(turns[i].session_id, []).append(record)
                outcomes[i] = RememberOutcome(status="stored", text=texts[i], id=record.id)
            upserts = [
                r
                for session_id, new in sessions.items()
                for r in self._placed(session_id, new, radius)
            ]
            self.store.write(upserts=upserts, caps=self._caps(), model_id=self.embedder.model_id)
        return [o for o in outcomes if o is not None]

    def _turn_record(self, turn: Turn, text: str, vector: np.ndarray, now: float) -> Record:
        """A turn as the memory it becomes (its ``turn_seq`` is set by ``_placed``)."""
        return Record(
            id=turn.id or uuid.uuid4().hex,
            namespace=self.namespace,
            text=text,
            kind="event",
            metadata={**turn.metadata, "speaker": turn.speaker, "session_id": turn.session_id},
            created_at=float(turn.time),
            updated_at=now,
            embedding=vector,
            provenance="user_stated",
        )

    def _placed(self, session_id: str, new: list[Record], radius: int) -> list[Record]:
        """``new`` turns placed after the session's stored ones (a turn sent again keeps its
        place and number), with every turn whose neighbours changed, context made anew."""
        session = self._session_turns(session_id)
        at = {record.id: n for n, record in enumerate(session)}
        seq = 1 + max((_seq(r) for r in session), default=-1)
        changed: set[int] = set()
        for record in new:
            n = at.get(record.id)
            if n is None:
                n = at[record.id] = len(session)
                session.append(record)
                number, seq = seq, seq + 1
            else:
                number = _seq(session[n])
            session[n] = replace(record, metadata={**record.metadata, "turn_seq": number})
            changed.update(range(max(0, n - radius), min(len(session), n + radius + 1)))
        return with_context(session, sorted(changed), radius)

    def _session_turns(self, session_id: str) -> list[Record]:
        """The stored turns of a session (its latest ``MAX_SESSION_SCAN``), in arrival order."""
        found = self.store.list(
            self.namespace,
            filter=Filter(metadata={"session_id": session_id}),
            limit=MAX_SESSION_SCAN,
            order="created_desc",
        )
        return sorted((r for r in found if _seq(r) >= 0), key=_seq)

    def _remember_many(
        self,
        candidates: list[Candidate],
        dedupe: bool,
        vectors: np.ndarray | None = None,
        retire: Sequence[str] = (),
    ) -> list[RememberOutcome]:
        """Store the candidates that pass the secret filter and dedupe, close what they
        supersede and what ``retire`` names, and evict: one transaction. ``vectors`` are
        the candidates' embeddings when the caller has them already."""
        outcomes: list[RememberOutcome | None] = [_secret_outcome(c) for c in candidates]
        pending = [i for i, outcome in enumerate(outcomes) if outcome is None]
        records: list[Record] = []
        if pending:
            embedded = (
                self.embedder.embed_batch([candidates[i].text for i in pending])
                if vectors is None
                else vectors[pending]
            )
            duplicates: list[_Duplicate | None] = (
                self._duplicates(embedded) if dedupe else [None] * len(pending)
            )
            for row, i in enumerate(pending):
                if candidates[i].supersedes:  # a changed fact may read like the old one
                    duplicates[row] = None
            records = self._build(candidates, pending, embedded, duplicates, outcomes)
        for attempt in range(_CLOSE_TRIES):
            closing, expect = self._closing(candidates, outcomes, records, retire)
            if not records and not closing:
                break
            try:
                self.store.write(
                    upserts=records + closing,
                    caps=self._caps(),
                    model_id=self.embedder.model_id,
                    expect=expect,
                )
                break
            except WriteConflict:  # another writer closed or changed one: read again
                if attempt == _CLOSE_TRIES - 1:
                    raise
        return [o for o in outcomes if o is not None]

    def _closing(
        self,
        candidates: list[Candidate],
        outcomes: list[RememberOutcome | None],
        records: list[Record],
        retire: Sequence[str],
    ) -> tuple[list[Record], list[Expect]]:
        """The stored memories this write closes: those the new records supersede, and
        those ``retire`` names (closed now, ``closed_reason="deleted"``), with what the
        write expects of each (``close_current``)."""
        now = self.clock.now()
        starts = {r.id: r.valid_from or r.created_at for r in records}
        closings = [
            Closing(id=old, at=starts[outcome.id], reason="superseded", by=outcome.id)
            for candidate, outcome in zip(candidates, outcomes, strict=True)
            if outcome is not None and outcome.status == "stored" and outcome.id
            for old in candidate.supersedes
        ]
        closings += [Closing(id=old, at=now, reason="deleted") for old in retire]
        return close_current(self.store, self.namespace, closings)

    def _duplicates(self, vectors: np.ndarray) -> list[_Duplicate | None]:
        """Per vector, what it duplicates (cosine >= 0.92): the nearest stored item, found
        for the whole batch in one pass, or a kept earlier vector of the same batch."""
        stored = self.store.nearest(self.namespace, vectors, model_id=self.embedder.model_id)
        within = vectors @ vectors.T
        found: list[_Duplicate | None] = []
        for row, hit in enumerate(stored):
            best = None
            if hit is not None and hit[1] >= DEDUPE_THRESHOLD:
                best = _Duplicate(stored_id=hit[0], similarity=hit[1])
            kept = [j for j in range(row) if found[j] is None]
            if kept:
                j = kept[int(np.argmax(within[row, kept]))]
                similarity = float(within[row, j])
                if similarity >= DEDUPE_THRESHOLD and (
                    best is None or similarity > best.similarity
                ):
                    best = _Duplicate(batch_row=j, similarity=similarity)
            found.append(best)
        return found

    def _build(
        self,
        candidates: list[Candidate],
        pending: list[int],
        vectors: np.ndarray,
        duplicates: list[_Duplicate | None],
        outcomes: list[RememberOutcome | None],
    ) -> list[Record]:
        now = self.clock.now()
        records: list[Record] = []
        ids: dict[int, str] = {}  # batch row -> id of the record stored for it
        for row, i in enumerate(pending):
            candidate, duplicate = candidates[i], duplicates[row]
            if duplicate is not None:
                of = duplicate.stored_id
                outcomes[i] = RememberOutcome(
                    status="duplicate",
                    text=candidate.text,
                    duplicate_of=of if of is not None else ids[duplicate.batch_row or 0],
                    similarity=duplicate.similarity,
                )
                continue
            record = Record(
                id=uuid.uuid4().hex,
                namespace=self.namespace,
                text=candidate.text,
                kind=candidate.kind,
                importance=candidate.importance,
                metadata=candidate.metadata,
                created_at=candidate.created_at if candidate.created_at is not None else now,
                updated_at=now,
                embedding=vectors[row],
                provenance=candidate.provenance,
                provenance_detail=candidate.provenance_detail,
            )
            ids[row] = record.id
            records.append(record)
            outcomes[i] = RememberOutcome(status="stored", text=candidate.text, id=record.id)
        return records

    def _caps(self) -> list[Cap]:
        """Eviction down to ``max_items`` current memories, in the write's own
        transaction: the lowest retention score (0.2·recency + 0.1·importance) goes
        first. An evicted memory is closed (``closed_reason="evicted"``), not deleted, so
        history records it; at most ``max_items`` closed versions are kept, the earliest
        closed deleted first."""
        if self.max_items == 0:
            return []
        return [
            Cap(
                namespace=self.namespace,
                keep=self.max_items,
                recency_weight=W_RECENCY,
                importance_weight=W_IMPORTANCE,
                half_life_days=HALF_LIFE_DAYS,
                close=True,
                keep_closed=self.max_items,
            )
        ]

    # -- the rest ------------------------------------------------------------------

    async def forget(self, memory_id: str) -> bool:
        """Erase one memory, text and all (history keeps nothing of it); True when it
        existed. To say a fact stopped being true, ``retire`` it instead."""
        _check_text(memory_id, "memory_id")
        return await asyncio.to_thread(self.store.delete, self.namespace, [memory_id]) > 0

    async def retire(self, memory_id: str) -> bool:
        """Close a current memory's validity now (``closed_reason="deleted"``): recall
        stops returning it, ``history`` and ``as_of`` still show it. False when there is
        no current memory of that id."""
        _check_text(memory_id, "memory_id")
        return await asyncio.to_thread(self._retire, memory_id)

    def _retire(self, memory_id: str) -> bool:
        found = self.store.get(self.namespace, [memory_id])
        if not found or found[0].valid_to is not None:
            return False
        self.store.upsert([closed(found[0], at=self.clock.now(), reason="deleted")])
        return True

    async def history(self, memory_id: str) -> list[LongTermItem]:
        """Every version of a memory, oldest first: the memories it superseded, the ones
        that superseded it, each with its validity (``valid_from``/``valid_to``) and what
        replaced it (``superseded_by``, ``closed_reason``). ``NotFound`` for an unknown
        id (or one erased by ``forget``)."""
        _check_text(memory_id, "memory_id")
        versions = await asyncio.to_thread(history, self.store, self.namespace, memory_id)
        return [long_term_item(r) for r in versions]

    async def clear(self) -> int:
        """Drop the whole collection; returns how many items were removed."""
        return await asyncio.to_thread(self.store.delete_namespace, self.namespace)

    def close(self) -> None:
        """Close the store if this memory opened it."""
        if self._owns_store:
            self.store.close()

    async def count(self) -> int:
        """How many current memories there are (what the ``max_items`` cap counts)."""
        return await asyncio.to_thread(self.store.count, self.namespace)

    async def items(
        self,
        *,
        limit: int = 100,
        offset: int = 0,
        as_of: float | None = None,
        include_superseded: bool = False,
        provenances: Sequence[Provenance] | None = None,
    ) -> list[LongTermItem]:
        """Stored items, newest first, without touching them: the current ones, or those
        valid ``as_of`` a moment, or every version (``include_superseded``)."""
        wanted = _filter(as_of, include_superseded, provenances)
        records = await asyncio.to_thread(
            self.store.list, self.namespace, filter=wanted, limit=limit, offset=offset
        )
        return [long_term_item(r) for r in records]


@dataclass(frozen=True, kw_only=True)
class _Duplicate:
    """What a candidate duplicates: a stored item, or a kept row of the same batch."""

    stored_id: str | None = None
    batch_row: int | None = None
    similarity: float


def _seq(record: Record) -> int:
    """A stored turn's number in its session (-1 for a memory that is not a turn)."""
    seq = record.metadata.get("turn_seq")
    return seq if isinstance(seq, int) and not isinstance(seq, bool) else -1


def _text_or_none(value: JSON | None) -> str | None:
    """A metadata value the context terms read (``session_id``, ``speaker``): text only."""
    return value if isinstance(value, str) else None


def _filter(
    as_of: float | None, include_superseded: bool, provenances: Sequence[Provenance] | None
) -> Filter | None:
    """The record filter of a read that asks for the past or for some provenances."""
    if as_of is not None and (
        isinstance(as_of, bool) or not isinstance(as_of, int | float) or not math.isfinite(as_of)
    ):
        raise InvalidInput(
            f"as_of must be seconds since the epoch (like created_at); got {as_of!r}.",
            field="as_of",
        )
    if as_of is not None and include_superseded:
        raise InvalidInput(
            "as_of and include_superseded exclude each other: as_of recalls what was valid "
            "at one moment, include_superseded every version.",
            field="as_of",
        )
    if provenances is not None:
        for value in provenances:
            if value not in PROVENANCES:
                raise InvalidInput(
                    f"provenances holds {value!r}; use {', '.join(PROVENANCES)}.",
                    field="provenances",
                )
    if as_of is None and not include_superseded and provenances is None:
        return None
    return Filter(
        as_of=None if as_of is None else float(as_of),
        include_superseded=bool(include_superseded),
        provenances=None if provenances is None else tuple(provenances),
    )


def _check_ids(ids: object, field: str) -> tuple[str, ...]:
    if isinstance(ids, str) or not isinstance(ids, Sequence):
        raise InvalidInput(f"{field} must be a list of memory ids, not {ids!r}.", field=field)
    for i, value in enumerate(ids):
        if not isinstance(value, str) or not value:
            raise InvalidInput(f"{field}[{i}] must be a memory id; got {value!r}.", field=field)
    return tuple(ids)


class _ItemFields(TypedDict):
    id: str
    text: str
    kind: str
    importance: float
    created_at: float
    updated_at: float
    last_accessed_at: float | None
    metadata: dict[str, JSON]
    context: str | None
    valid_from: float
    valid_to: float | None
    superseded_by: str | None
    closed_reason: str | None
    provenance: str | None
    provenance_detail: str | None


def long_term_item(record: Record) -> LongTermItem:
    """A stored record as the memory a listing or a history shows."""
    return LongTermItem(**_item_fields(record))


def _recalled(record: Record, scores: ScoreBreakdown) -> RecalledMemory:
    """The recalled memory of ``record``, with metadata of its own (a candidate may be the
    store's own record)."""
    fields = _item_fields(record)
    fields["metadata"] = own_metadata(record.metadata)
    return RecalledMemory(**fields, scores=scores)


def _item_fields(record: Record) -> _ItemFields:
    return {
        "id": record.id,
        "text": record.text,
        "kind": record.kind or "fact",
        "importance": record.importance,
        "created_at": record.created_at,
        "updated_at": record.updated_at,
        "last_accessed_at": record.last_accessed_at,
        "metadata": record.metadata,
        "context": record.context,
        "valid_from": record.valid_from if record.valid_from is not None else record.created_at,
        "valid_to": record.valid_to,
        "superseded_by": record.superseded_by,
        "closed_reason": record.closed_reason,
        "provenance": record.provenance,
        "provenance_detail": record.provenance_detail,
    }


def _check_text(value: object, field: str) -> None:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(f"{field} must be a non-empty string.", field=field)
    if len(value) > MAX_TEXT_CHARS:
        raise InvalidInput(
            f"{field} is {len(value)} characters; the limit is {MAX_TEXT_CHARS}. "
            "Store a shorter, self-contained fact.",
            field=field,
        )


def _check_k(k: object) -> None:
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
        raise InvalidInput(f"k must be an int from 1 to {MAX_K}; got {k!r}.", field="k")


def _secret_outcome(candidate: Candidate) -> RememberOutcome | None:
    """The ``secret`` outcome when a string the candidate stores (its text, its metadata,
    its provenance detail) looks like a secret."""
    found = find_secret(
        {
            "text": candidate.text,
            "metadata": candidate.metadata,
            "provenance_detail": candidate.provenance_detail,
        }
    )
    if found is None:
        return None
    return RememberOutcome(status="secret", text=candidate.text, secret_kind=found.kind)


def _validated(candidate: Candidate, index: int) -> Candidate:
    where = f"candidates[{index}]"
    if not isinstance(candidate, Candidate):
        raise InvalidInput(f"{where} must be a Candidate.", field=where)
    _check_text(candidate.text, "text")
    if candidate.kind not in LTM_KINDS:
        raise InvalidInput(
            f"kind must be one of {', '.join(LTM_KINDS)}; got {candidate.kind!r}.", field="kind"
        )
    importance = candidate.importance
    if (
        isinstance(importance, bool)
        or not isinstance(importance, int | float)
        or not math.isfinite(importance)
        or not 0 <= importance <= 1
    ):
        raise InvalidInput(
            f"importance must be a number from 0 to 1; got {importance!r}.", field="importance"
        )
    if candidate.created_at is not None and not math.isfinite(candidate.created_at):
        raise InvalidInput("created_at must be a finite timestamp in seconds.", field="created_at")
    to_json(candidate.metadata, field="metadata")
    if candidate.provenance not in PROVENANCES:
        raise InvalidInput(
            f"provenance must be one of {', '.join(PROVENANCES)}; got {candidate.provenance!r}.",
            field="provenance",
        )
    _check_ids(candidate.supersedes, f"{where}.supersedes")
    return candidate
