"""``memstack bench recall``: recall latency and ingest rate against the number of memories.

Synthetic but realistic memories (templated sentences over a few thousand words) are
embedded once with the benchmark's embedder and ingested into each backend in
growing steps; at each size, hybrid recall through LongTermMemory is timed over a
fixed set of queries.
"""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Final

import numpy as np

from memstack.clock import Clock
from memstack.embeddings import Embedder
from memstack.longterm import Collection, LongTermMemory
from memstack.storage import Record, RecordStore

__all__ = ["ScalePoint", "ScaleRun", "embed_corpus", "run_scale", "synthetic_memories"]

_SUBJECTS: Final = (
    "The user",
    "Alice",
    "Bob",
    "My sister",
    "The team",
    "Our client",
    "The manager",
)
_VERBS: Final = (
    "prefers",
    "dislikes",
    "bought",
    "visited",
    "is learning",
    "wrote about",
    "talked about",
    "recommended",
    "plans to try",
    "keeps forgetting",
)
_TOPICS: Final = (
    "green tea",
    "espresso",
    "hiking boots",
    "Rust",
    "PostgreSQL",
    "jazz records",
    "Kyoto",
    "the Oslo office",
    "sourdough bread",
    "marathon training",
    "a vegetable garden",
    "chess openings",
    "vintage cameras",
    "the quarterly report",
    "a trip to Lisbon",
    "Python type hints",
    "watercolour painting",
    "a new bicycle",
    "the piano",
    "climbing shoes",
    "oat milk",
    "board games",
    "a science fiction novel",
    "the database migration",
    "Spanish lessons",
)
_DETAILS: Final = (
    "last week",
    "every morning",
    "since 2019",
    "with friends",
    "for work",
    "on weekends",
    "after the conference",
    "before the move",
    "twice a month",
)


def synthetic_memories(n: int, *, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    return [
        f"{rng.choice(_SUBJECTS)} {rng.choice(_VERBS)} {rng.choice(_TOPICS)} "
        f"{rng.choice(_DETAILS)} (note {i})"
        for i in range(n)
    ]


def embed_corpus(
    embedder: Embedder,
    texts: Sequence[str],
    batch: int = 512,
    progress: Callable[[int], None] = lambda n: None,
) -> tuple[np.ndarray, float]:
    """Embeddings of ``texts`` and the seconds it took."""
    started = time.perf_counter()
    parts = []
    for i in range(0, len(texts), batch):
        parts.append(embedder.embed_batch(texts[i : i + batch]))
        progress(len(texts[i : i + batch]))
    return np.vstack(parts), time.perf_counter() - started


@dataclass(frozen=True, kw_only=True)
class ScalePoint:
    size: int
    recall_p50_ms: float
    recall_p95_ms: float
    store_per_s: float
    """Records written per second at this step, embedding excluded."""


@dataclass(kw_only=True)
class ScaleRun:
    store: str
    points: list[ScalePoint] = field(default_factory=list)


async def run_scale(
    *,
    store: RecordStore,
    store_name: str,
    embedder: Embedder,
    texts: Sequence[str],
    vectors: np.ndarray,
    sizes: Sequence[int],
    queries: Sequence[str],
    clock: Clock,
    progress: Callable[[int], None] = lambda n: None,
) -> ScaleRun:
    memory = LongTermMemory(
        collection=Collection(user_id="bench", namespace="scale"),
        store=store,
        embedder=embedder,
        max_items=0,
        clock=clock,
    )
    await memory.clear()
    run = ScaleRun(store=store_name)
    done = 0
    now = clock.now()
    for size in sorted(sizes):
        started = time.perf_counter()
        for lo in range(done, size, 1000):
            hi = min(size, lo + 1000)
            store.upsert(
                [
                    Record(
                        id=f"m{i}",
                        namespace=memory.namespace,
                        text=texts[i],
                        kind="fact",
                        created_at=now - (size - i) * 60.0,
                        updated_at=now,
                        embedding=vectors[i],
                    )
                    for i in range(lo, hi)
                ]
            )
        written = size - done
        store_seconds = time.perf_counter() - started
        done = size
        latencies = []
        for query in queries:
            t0 = time.perf_counter()
            await memory.recall(query, 10, touch=False)
            latencies.append((time.perf_counter() - t0) * 1000)
        cuts = statistics.quantiles(latencies, n=100, method="inclusive")
        run.points.append(
            ScalePoint(
                size=size,
                recall_p50_ms=round(cuts[49], 2),
                recall_p95_ms=round(cuts[94], 2),
                store_per_s=round(written / store_seconds, 1) if store_seconds else 0.0,
            )
        )
        progress(1)
    await memory.clear()
    return run
