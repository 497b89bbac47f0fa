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
from memstack.errors import ConfigError, InvalidInput
from memstack.longterm.collection import Collection
from memstack.longterm.extraction import build_extraction_messages, parse_candidates
from memstack.longterm.scoring import (
    HALF_LIFE_DAYS,
    KEYWORD_WEIGHT,
    W_IMPORTANCE,
    W_RECENCY,
    ContextCandidate,
    ContextTerms,
    ContextWeights,
    ScoreBreakdown,
    context_terms,
    final_score,
    hybrid_score,
    recency,
)
from memstack.longterm.secrets import find_secret
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
    Candidate,
    LongTermItem,
    LtmKind,
    RecalledMemory,
    RememberOutcome,
)
from memstack.providers.base import ChatModel, Message
from memstack.storage import Cap, Filter, Record, RecordStore
from memstack.storage.hybrid import HybridHit, hybrid_candidates

__all__ = ["DEDUPE_THRESHOLD", "DEFAULT_MAX_ITEMS", "LongTermMemory"]

DEFAULT_MAX_ITEMS: Final = 500
DEDUPE_THRESHOLD: Final = 0.92
MAX_TEXT_CHARS: Final = 4_000
MAX_K: Final = 100
_MIN_POOL: Final = 50


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

    async def recall(self, query: str, k: int = 5, *, touch: bool = True) -> list[RecalledMemory]:
        """The ``k`` best memories for ``query``, best first.

        Candidates are the nearest neighbours by embedding plus the best keyword (BM25)
        matches; each is scored 0.7·relevance + 0.2·recency + 0.1·importance, where
        relevance is cosine similarity blended with keyword relevance
        (``keyword_weight``, 0.3 by default; 0 gives pure cosine). Unless
        ``touch=False``, ``last_accessed_at`` is bumped on what is returned.
        """
        _check_text(query, "query")
        _check_k(k)
        return await asyncio.to_thread(self._recall, query, k, touch)

    def _recall(self, query: str, k: int, touch: bool) -> list[RecalledMemory]:
        vector = self.embedder.embed_batch([query])[0]
        hits = hybrid_candidates(
            self.store,
            [self.namespace],
            query=query,
            vector=vector,
            pool=max(4 * k, _MIN_POOL),
            keyword_weight=self.keyword_weight,
            model_id=self.embedder.model_id,
        )
        now = self.clock.now()
        terms = context_terms(query, [_context_candidate(h) for h in hits], self.context_weights)
        scores = [
            final_score(
                relevance=hit.relevance,
                context=term,
                recency=recency(
                    created_at=hit.record.created_at,
                    last_accessed_at=hit.record.last_accessed_at,
                    now=now,
                ),
                importance=hit.record.importance,
            )
            for hit, term in zip(hits, terms, strict=True)
        ]
        best = sorted(range(len(hits)), key=scores.__getitem__, reverse=True)[:k]
        ranked = [
            RecalledMemory(
                **_item_fields(hits[i].record), scores=self._score(hits[i], now, terms[i])
            )
            for i in best
        ]
        if touch and ranked:
            self.store.touch(self.namespace, [item.id for item in ranked], now)
        return ranked

    def _score(self, hit: HybridHit, now: float, context: ContextTerms) -> ScoreBreakdown:
        record = hit.record
        return hybrid_score(
            context=context,
            similarity=hit.similarity,
            keyword=hit.keyword,
            keyword_weight=self.keyword_weight,
            recency=recency(
                created_at=record.created_at, last_accessed_at=record.last_accessed_at, now=now
            ),
            importance=record.importance,
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
    ) -> RememberOutcome:
        """Store one memory unless it looks like a secret or duplicates an existing one."""
        candidate = Candidate(
            text=text,
            kind=kind,
            importance=importance,
            created_at=created_at,
            metadata=metadata or {},
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

    async def remember_conversation(self, messages: Sequence[Message]) -> list[RememberOutcome]:
        """Mine a finished turn for memories and store them.

        Tool and system messages never reach the extraction model; it sees at most
        12,000 characters and may propose at most 8 memories.
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
        return await self.remember_many(parse_candidates(reply.content))

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

    def _remember_many(self, candidates: list[Candidate], dedupe: bool) -> list[RememberOutcome]:
        outcomes: list[RememberOutcome | None] = [None] * len(candidates)
        pending: list[int] = []
        for i, candidate in enumerate(candidates):
            found = find_secret({"text": candidate.text, "metadata": candidate.metadata})
            if found is not None:
                outcomes[i] = RememberOutcome(
                    status="secret", text=candidate.text, secret_kind=found.kind
                )
            else:
                pending.append(i)
        if pending:
            vectors = self.embedder.embed_batch([candidates[i].text for i in pending])
            duplicates: list[_Duplicate | None] = (
                self._duplicates(vectors) if dedupe else [None] * len(pending)
            )
            records = self._build(candidates, pending, vectors, duplicates, outcomes)
            if records:
                self.store.write(
                    upserts=records, caps=self._caps(), model_id=self.embedder.model_id
                )
        return [o for o in outcomes if o is not None]

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
            )
            ids[row] = record.id
            records.append(record)
            outcomes[i] = RememberOutcome(status="stored", text=candidate.text, id=record.id)
        return records

    def _caps(self) -> list[Cap]:
        """Eviction down to ``max_items``, in the write's own transaction: the lowest
        retention score (0.2·recency + 0.1·importance) goes first."""
        if self.max_items == 0:
            return []
        return [
            Cap(
                namespace=self.namespace,
                keep=self.max_items,
                recency_weight=W_RECENCY,
                importance_weight=W_IMPORTANCE,
                half_life_days=HALF_LIFE_DAYS,
            )
        ]

    # -- the rest ------------------------------------------------------------------

    async def forget(self, memory_id: str) -> bool:
        """Remove one item; True when it existed."""
        _check_text(memory_id, "memory_id")
        return await asyncio.to_thread(self.store.delete, self.namespace, [memory_id]) > 0

    async def clear(self) -> int:
        """Drop the whole collection; returns how many items were removed."""
        return await asyncio.to_thread(self.store.delete_namespace, self.namespace)

    def close(self) -> None:
        """Close the store if this memory opened it."""
        if self._owns_store:
            self.store.close()

    async def count(self) -> int:
        return await asyncio.to_thread(self.store.count, self.namespace)

    async def items(self, *, limit: int = 100, offset: int = 0) -> list[LongTermItem]:
        """Stored items, newest first, without touching them."""
        records = await asyncio.to_thread(
            self.store.list, self.namespace, limit=limit, offset=offset
        )
        return [LongTermItem(**_item_fields(r)) for r in records]


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


def _context_candidate(hit: HybridHit) -> ContextCandidate:
    metadata = hit.record.metadata
    session, speaker = metadata.get("session_id"), metadata.get("speaker")
    return ContextCandidate(
        relevance=hit.relevance,
        text=hit.record.text,
        session_id=session if isinstance(session, str) else None,
        speaker=speaker if isinstance(speaker, str) else None,
    )


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
    return candidate
