"""``memstack bench ingest``: how fast memories go in, and how much of that is embedding.

For one set of texts, each in a fresh collection of one store (``max_items=0``, so
eviction never runs): the embedder alone (``embed_batch`` in batches) and
``remember_many`` in the same batches with dedupe on, taking turns batch by batch; then
``remember`` one text at a time; then ``store.upsert`` of ``UPSERT_ROWS`` records (the
same texts and their vectors, repeated as needed) in batches of 1000 into one namespace;
and the texts as conversation turns through
``remember_turns``, taking turns with the embedder alone on the turns' memory texts
(``<speaker>: <text>``, which is what it embeds). Rates are memories per second.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

from memstack.clock import Clock
from memstack.embeddings import Embedder
from memstack.longterm import Candidate, Collection, LongTermMemory
from memstack.longterm.turns import Turn, turn_text
from memstack.storage import Record, RecordStore

__all__ = ["IngestResult", "run_ingest"]

UPSERT_BATCH: Final = 1000
UPSERT_ROWS: Final = 10_000
"""Records the upsert rate is measured over, whatever ``n``: SQLite copies its write-ahead
log into the database every 1,000 pages (about every other batch of 1,000 LoCoMo turns
with vectors), so a single batch measured either that copy or none, and two runs of the
same code disagreed widely; ten batches take several copies in, as real writes do."""


@dataclass(frozen=True, kw_only=True)
class IngestResult:
    texts: str
    n: int
    mean_chars: float
    embed_per_s: float
    remember_many_per_s: float
    remember_per_s: float
    upsert_per_s: float
    upsert_n: int
    """How many records the upsert rate is measured over (``UPSERT_ROWS``)."""
    stored_many: int
    """How many ``remember_many`` stored (the rest were duplicates or secrets)."""
    stored_one: int
    turns_embed_per_s: float
    """The embedder alone on the turns' memory texts."""
    remember_turns_per_s: float

    @property
    def turns_to_embed(self) -> float:
        """``remember_turns`` as a share of the embedder alone on the same turns."""
        if not self.turns_embed_per_s:
            return 0.0
        return round(self.remember_turns_per_s / self.turns_embed_per_s, 3)

    @property
    def many_to_embed(self) -> float:
        """``remember_many`` as a share of the embedder alone: 1.0 means no overhead."""
        return round(self.remember_many_per_s / self.embed_per_s, 3) if self.embed_per_s else 0.0

    def to_json(self) -> dict[str, object]:
        return {
            **vars(self),
            "remember_many_to_embed": self.many_to_embed,
            "remember_turns_to_embed": self.turns_to_embed,
        }


async def run_ingest(
    name: str,
    texts: Sequence[str],
    *,
    store: RecordStore,
    embedder: Embedder,
    clock: Clock,
    batch: int = 64,
    progress: Callable[[int], None] = lambda n: None,
    turns: Sequence[Turn] | None = None,
    cleanup: bool = False,
) -> IngestResult:
    """Measure the ways in on ``texts`` (``name`` labels the set). ``turns`` are the same
    texts as conversation turns; by default two speakers take turns, 20 to a session.
    ``cleanup`` deletes the run's collections afterwards (for a database that outlives
    the run)."""
    user = f"bench-{uuid.uuid4().hex[:8]}"
    try:
        return await _measure(name, texts, user, store, embedder, clock, batch, progress, turns)
    finally:
        if cleanup:
            prefix = Collection(user_id=user, namespace="x").name.removesuffix("x")
            for namespace in store.namespaces(prefix):
                store.delete_namespace(namespace)


async def _measure(
    name: str,
    texts: Sequence[str],
    user: str,
    store: RecordStore,
    embedder: Embedder,
    clock: Clock,
    batch: int,
    progress: Callable[[int], None],
    turns: Sequence[Turn] | None,
) -> IngestResult:

    def memory(mode: str) -> LongTermMemory:
        collection = Collection(user_id=user, namespace=f"{name}-{mode}")
        return LongTermMemory(
            collection=collection, store=store, embedder=embedder, max_items=0, clock=clock
        )

    many = await _embed_and_many(memory("many"), embedder, texts, batch, progress)
    one_s, stored_one = await _one_by_one(memory("one"), texts, progress)
    upsert_s = _upsert(store, memory("upsert").namespace, texts, many.vectors, clock, progress)
    said = list(turns) if turns is not None else _as_turns(texts, clock.now())
    turns_embed_s, turns_s = await _turns(memory("turns"), embedder, said, batch, progress)
    return IngestResult(
        texts=name,
        n=len(texts),
        mean_chars=round(sum(map(len, texts)) / max(1, len(texts)), 1),
        embed_per_s=_rate(len(texts), many.embed_s),
        remember_many_per_s=_rate(len(texts), many.many_s),
        remember_per_s=_rate(len(texts), one_s),
        upsert_per_s=_rate(UPSERT_ROWS, upsert_s),
        upsert_n=UPSERT_ROWS,
        stored_many=many.stored,
        stored_one=stored_one,
        turns_embed_per_s=_rate(len(said), turns_embed_s),
        remember_turns_per_s=_rate(len(said), turns_s),
    )


@dataclass(frozen=True, kw_only=True)
class _Many:
    embed_s: float
    many_s: float
    stored: int
    vectors: npt.NDArray[np.float32]
    """Every text's vector, for the upsert that follows."""


async def _embed_and_many(
    many: LongTermMemory,
    embedder: Embedder,
    texts: Sequence[str],
    batch: int,
    progress: Callable[[int], None],
) -> _Many:
    """The embedder alone and ``remember_many`` taking turns batch by batch, so a machine
    that slows down or speeds up during the run weighs on both alike."""
    embed_s = many_s = 0.0
    stored = 0
    parts: list[npt.NDArray[np.float32]] = []
    for lo in range(0, len(texts), batch):
        started = time.perf_counter()
        parts.append(np.asarray(embedder.embed_batch(texts[lo : lo + batch]), dtype=np.float32))
        embed_s += time.perf_counter() - started
        chunk = [Candidate(text=t) for t in texts[lo : lo + batch]]
        started = time.perf_counter()
        outcomes = await many.remember_many(chunk, dedupe=True)
        many_s += time.perf_counter() - started
        stored += sum(o.status == "stored" for o in outcomes)
        progress(2 * len(chunk))
    return _Many(embed_s=embed_s, many_s=many_s, stored=stored, vectors=np.vstack(parts))


async def _one_by_one(
    one: LongTermMemory, texts: Sequence[str], progress: Callable[[int], None]
) -> tuple[float, int]:
    """Seconds ``remember`` took on every text, one at a time, and how many it stored."""
    started = time.perf_counter()
    stored = 0
    for text in texts:
        stored += (await one.remember(text)).status == "stored"
        progress(1)
    return time.perf_counter() - started, stored


async def _turns(
    spoken: LongTermMemory,
    embedder: Embedder,
    said: Sequence[Turn],
    batch: int,
    progress: Callable[[int], None],
) -> tuple[float, float]:
    """Seconds of the embedder alone on the turns' memory texts and of ``remember_turns``,
    taking turns batch by batch."""
    embed_s = turns_s = 0.0
    for lo in range(0, len(said), batch):
        started = time.perf_counter()
        embedder.embed_batch([turn_text(t) for t in said[lo : lo + batch]])
        embed_s += time.perf_counter() - started
        started = time.perf_counter()
        await spoken.remember_turns(said[lo : lo + batch])
        turns_s += time.perf_counter() - started
        progress(2 * len(said[lo : lo + batch]))
    return embed_s, turns_s


def _as_turns(texts: Sequence[str], now: float) -> list[Turn]:
    return [
        Turn(speaker="AB"[i % 2], text=text, time=now, session_id=f"s{i // 20}")
        for i, text in enumerate(texts)
    ]


def _rate(n: int, seconds: float) -> float:
    return round(n / seconds, 1) if seconds > 0 else 0.0


def _upsert(
    store: RecordStore,
    namespace: str,
    texts: Sequence[str],
    vectors: npt.NDArray[np.float32],
    clock: Clock,
    progress: Callable[[int], None],
) -> float:
    """Seconds spent in ``store.upsert`` of ``UPSERT_ROWS`` records, row ``i`` holding text
    and vector ``i % len(texts)`` (building the records is not counted)."""
    now = clock.now()
    spent = 0.0
    for lo in range(0, UPSERT_ROWS, UPSERT_BATCH):
        records = [
            Record(
                id=f"u{i}",
                namespace=namespace,
                text=texts[i % len(texts)],
                kind="fact",
                created_at=now,
                updated_at=now,
                embedding=vectors[i % len(texts)],
            )
            for i in range(lo, min(UPSERT_ROWS, lo + UPSERT_BATCH))
        ]
        started = time.perf_counter()
        store.upsert(records)
        spent += time.perf_counter() - started
        progress(len(records))
    return spent
