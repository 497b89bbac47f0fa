"""``memstack bench recall``: recall latency against the number of stored memories.

Synthesized memories (``bench.synth``) are loaded into a store in growing steps
(1k, then up to 10k, ...) with their vectors given; at each size, for every query,
the full hybrid recall of LongTermMemory is timed beside its floor (``bench.floor``:
the same real query embedding plus an exact numpy scan of the namespace), twice: right
after the load returns, as a caller that loads and then asks at once sees it, and once the
store's search indexes are ready (``RecordStore.ready``, polled). Between them, the seconds
from the end of the load until the approximate index serves (asked of the backend's
read-only ``index_serves`` where it has one, PostgreSQL; else until ``ready``) and until
``ready``. Then recall is timed right after a write, and the store's own
``vector_search`` is scored against the exact top 10 in both states (recall@10 of any
approximate index).

Shapes: ``one-namespace`` keeps all rows in one collection; ``many-namespaces``
spreads them over one collection per ``PER_NAMESPACE`` rows and recalls inside a few
target collections.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Final, Literal

import numpy as np
import numpy.typing as npt

from memstack.bench.floor import recall_at_k, timed_floor
from memstack.bench.proc import rss_mb
from memstack.bench.report import percentiles, ratio
from memstack.bench.synth import Phrases, synth_rows
from memstack.clock import Clock
from memstack.embeddings import Embedder
from memstack.longterm import Collection, LongTermMemory
from memstack.storage import Record, RecordStore

__all__ = [
    "PER_NAMESPACE",
    "SHAPES",
    "RecallBench",
    "RecallPoint",
    "RecallRun",
    "Shape",
    "run_recall",
]

Shape = Literal["one-namespace", "many-namespaces"]
SHAPES: Final[tuple[Shape, ...]] = ("one-namespace", "many-namespaces")
PER_NAMESPACE: Final = 100
UPSERT_BATCH: Final = 1000
TARGETS: Final = 5
"""Collections the many-namespaces shape recalls in, spread over those loaded."""
READY_LIMIT_S: Final = 1800.0
"""How long a step waits for its indexes before it measures anyway."""


@dataclass(frozen=True, kw_only=True)
class RecallBench:
    """What every store is measured with: the same rows, queries and writes."""

    embedder: Embedder
    phrases: Phrases
    sizes: tuple[int, ...]
    shape: Shape
    queries: tuple[str, ...]
    writes: tuple[str, ...]
    """New sentences remembered one at a time, each followed by one timed recall."""
    clock: Clock
    seed: int = 7
    user: str = field(default_factory=lambda: f"bench-{uuid.uuid4().hex[:8]}")
    """The collections' user id: unique per run, so a shared database is never mixed up."""

    @property
    def namespace_prefix(self) -> str:
        return Collection(user_id=self.user, namespace="x").name.removesuffix("x")

    def collection(self, index: int) -> Collection:
        name = "scale" if self.shape == "one-namespace" else f"n{index:06d}"
        return Collection(user_id=self.user, namespace=name)

    def namespace_of(self, row: int) -> int:
        return 0 if self.shape == "one-namespace" else row // PER_NAMESPACE

    def rows_of(self, index: int, size: int) -> tuple[int, int]:
        if self.shape == "one-namespace":
            return 0, size
        return index * PER_NAMESPACE, min(size, (index + 1) * PER_NAMESPACE)

    def targets(self, size: int) -> list[int]:
        if self.shape == "one-namespace":
            return [0]
        full = max(1, size // PER_NAMESPACE)
        return sorted({int(i) for i in np.linspace(0, full - 1, min(TARGETS, full)).round()})


@dataclass(frozen=True, kw_only=True)
class RecallPoint:
    size: int
    namespaces: int
    recall_p50_ms: float
    recall_p95_ms: float
    floor_p50_ms: float
    floor_p95_ms: float
    ratio_p50: float | None
    ratio_p95: float | None
    after_write_p50_ms: float | None
    after_write_p95_ms: float | None
    after_write_ratio_p50: float | None
    after_write_ratio_p95: float | None
    writes_stored: int
    ann_recall_at_10: float
    ingest_per_s: float
    """Rows per second of ``store.upsert`` in batches of 1000, vectors given."""
    rss_mb: float
    """This process's resident memory after loading this size."""
    vectors_mb: float
    """The raw vectors: size x dim x 4 bytes (the harness keeps one copy for the floor)."""
    after_load_p50_ms: float | None = None
    """Recall right after the load returned, before anything waited for an index."""
    after_load_p95_ms: float | None = None
    after_load_floor_p50_ms: float | None = None
    after_load_floor_p95_ms: float | None = None
    after_load_ratio_p50: float | None = None
    after_load_ratio_p95: float | None = None
    after_load_ann_recall_at_10: float | None = None
    index_serves_s: float | None = None
    """Seconds from the end of the load until the approximate index serves searches (or
    none is needed); None when it did not within ``READY_LIMIT_S``."""
    index_wait_s: float = 0.0
    """Seconds from the end of the load until ``RecordStore.ready`` (every index built
    and fitting the rows, statistics fresh)."""
    storage: dict[str, float] | None = None
    """What the rows weigh in the store once it is ready (``bench.footprint``), where
    the run was given a way to read it."""


@dataclass(kw_only=True)
class RecallRun:
    store: str
    shape: Shape
    rss_start_mb: float
    points: list[RecallPoint] = field(default_factory=list)


async def run_recall(
    bench: RecallBench,
    *,
    store: RecordStore,
    store_name: str,
    cleanup: bool = False,
    progress: Callable[[int], None] = lambda n: None,
    footprint: Callable[[Sequence[str]], dict[str, float]] | None = None,
) -> RecallRun:
    """Load ``store`` step by step and measure at each size; ``cleanup`` deletes the
    run's collections afterwards (for a database that outlives the run); ``footprint``
    reads what the target namespaces weigh once the store is ready."""
    run = RecallRun(store=store_name, shape=bench.shape, rss_start_mb=round(rss_mb(), 1))
    matrix = np.empty((max(bench.sizes), bench.phrases.dim), dtype=np.float32)
    done = 0
    try:
        for size in sorted(bench.sizes):
            seconds = _load(bench, store, matrix, done, size, progress)
            point = await _measure(bench, store, matrix, size, (size - done) / seconds, progress)
            if footprint is not None:
                names = [bench.collection(t).name for t in bench.targets(size)]
                point = replace(point, storage=footprint(names))
            run.points.append(point)
            done = size
    finally:
        if cleanup:
            for namespace in store.namespaces(bench.namespace_prefix):
                store.delete_namespace(namespace)
    return run


def _load(
    bench: RecallBench,
    store: RecordStore,
    matrix: npt.NDArray[np.float32],
    start: int,
    stop: int,
    progress: Callable[[int], None],
) -> float:
    """Add rows ``start`` to ``stop``; returns the seconds spent in ``store.upsert``."""
    now = bench.clock.now()
    newest = max(bench.sizes)
    names: dict[int, str] = {}
    spent = 0.0
    for lo in range(start, stop, UPSERT_BATCH):
        rows = synth_rows(bench.phrases, lo, min(stop, lo + UPSERT_BATCH), seed=bench.seed)
        matrix[lo : lo + len(rows.vectors)] = rows.vectors
        last = bench.namespace_of(lo + len(rows.vectors) - 1)
        for index in range(bench.namespace_of(lo), last + 1):
            names.setdefault(index, bench.collection(index).name)
        records = [
            Record(
                id=f"m{lo + i}",
                namespace=names[bench.namespace_of(lo + i)],
                text=text,
                kind="fact",
                created_at=now - (newest - lo - i) * 60.0,
                updated_at=now,
                embedding=rows.vectors[i],
            )
            for i, text in enumerate(rows.texts())
        ]
        started = time.perf_counter()
        store.upsert(records)
        spent += time.perf_counter() - started
        progress(len(records))
    return max(spent, 1e-9)


async def _measure(
    bench: RecallBench,
    store: RecordStore,
    matrix: npt.NDArray[np.float32],
    size: int,
    ingest_per_s: float,
    progress: Callable[[int], None],
) -> RecallPoint:
    loaded = time.perf_counter()
    names = [bench.collection(t).name for t in bench.targets(size)]
    serves = _Watch(_serving(store, names), loaded)
    memories = {
        t: LongTermMemory(
            collection=bench.collection(t),
            store=store,
            embedder=bench.embedder,
            max_items=0,
            clock=bench.clock,
        )
        for t in bench.targets(size)
    }
    first, first_floor, first_vectors = await _recall_and_floor(
        bench, memories, matrix, size, progress
    )
    first_ann = [_ann_recall(bench, store, matrix, size, t, v) for t, v in first_vectors]
    progress(len(first_ann))
    index_serves_s = serves.wait()
    _wait_ready(store, names)
    index_wait_s = time.perf_counter() - loaded
    recall, floor, vectors = await _recall_and_floor(bench, memories, matrix, size, progress)
    rss = rss_mb()  # after recalls: every search index (vectors, HNSW, keywords) is loaded
    after, stored = await _after_writes(bench, memories, progress)
    ann = [_ann_recall(bench, store, matrix, size, target, vector) for target, vector in vectors]
    progress(len(ann))
    r, f, a = percentiles(recall, (50, 95)), percentiles(floor, (50, 95)), _maybe(after)
    r0, f0 = percentiles(first, (50, 95)), percentiles(first_floor, (50, 95))
    return RecallPoint(
        size=size,
        namespaces=bench.namespace_of(size - 1) + 1,
        recall_p50_ms=r["p50"],
        recall_p95_ms=r["p95"],
        floor_p50_ms=f["p50"],
        floor_p95_ms=f["p95"],
        ratio_p50=ratio(r["p50"], f["p50"]),
        ratio_p95=ratio(r["p95"], f["p95"]),
        after_write_p50_ms=a.get("p50"),
        after_write_p95_ms=a.get("p95"),
        after_write_ratio_p50=ratio(a.get("p50"), f["p50"]),
        after_write_ratio_p95=ratio(a.get("p95"), f["p95"]),
        writes_stored=stored,
        ann_recall_at_10=round(float(np.mean(ann)), 4),
        ingest_per_s=round(ingest_per_s, 1),
        rss_mb=round(rss, 1),
        vectors_mb=round(size * bench.phrases.dim * 4 / 2**20, 2),
        after_load_p50_ms=r0["p50"],
        after_load_p95_ms=r0["p95"],
        after_load_floor_p50_ms=f0["p50"],
        after_load_floor_p95_ms=f0["p95"],
        after_load_ratio_p50=ratio(r0["p50"], f0["p50"]),
        after_load_ratio_p95=ratio(r0["p95"], f0["p95"]),
        after_load_ann_recall_at_10=round(float(np.mean(first_ann)), 4),
        index_serves_s=None if index_serves_s is None else round(index_serves_s, 1),
        index_wait_s=round(index_wait_s, 1),
    )


def _serving(store: RecordStore, namespaces: Sequence[str]) -> Callable[[], bool]:
    """Whether every namespace's vector searches are served by their index (or need
    none): the backend's read-only ``index_serves`` where it has one, else ``ready``."""
    probe = getattr(store.backend, "index_serves", None)
    if probe is None:
        return lambda: all(store.ready(ns) for ns in namespaces)
    return lambda: all(probe(ns) for ns in namespaces)


class _Watch:
    """Polls ``holds`` on a thread from now on; ``wait`` gives the seconds from
    ``since`` (a ``perf_counter``) until it first held, or None past ``READY_LIMIT_S``."""

    def __init__(self, holds: Callable[[], bool], since: float) -> None:
        self._holds = holds
        self._since = since
        self._seconds: float | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="bench-index-watch", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            while time.perf_counter() - self._since < READY_LIMIT_S:
                if self._holds():
                    self._seconds = time.perf_counter() - self._since
                    return
                time.sleep(0.05)
        except Exception as exc:  # raised by wait(), in the bench's own thread
            self._error = exc

    def wait(self) -> float | None:
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._seconds


def _wait_ready(
    store: RecordStore, namespaces: Sequence[str], limit_s: float = READY_LIMIT_S
) -> None:
    """Wait until every namespace's search indexes are built (a large one's vector index
    builds in the background after a load); the timed recalls then measure steady state."""
    started = time.perf_counter()
    while not all(store.ready(ns) for ns in namespaces):
        if time.perf_counter() - started > limit_s:
            break
        time.sleep(0.25)


def _maybe(values: Sequence[float]) -> dict[str, float | None]:
    return dict(percentiles(values, (50, 95))) if values else {}


async def _recall_and_floor(
    bench: RecallBench,
    memories: dict[int, LongTermMemory],
    matrix: npt.NDArray[np.float32],
    size: int,
    progress: Callable[[int], None],
) -> tuple[list[float], list[float], list[tuple[int, npt.NDArray[np.float32]]]]:
    """Each query's recall and floor milliseconds, taken in turns (alternating which
    goes first), and the query vectors the floor computed."""
    targets = sorted(memories)
    recall: list[float] = []
    floor: list[float] = []
    vectors = []
    for n, query in enumerate(bench.queries):
        target = targets[n % len(targets)]
        lo, hi = bench.rows_of(target, size)
        if n % 2:
            vector, floor_ms = timed_floor(bench.embedder, query, matrix[lo:hi])
            recall_ms = await _timed_recall(memories[target], query)
        else:
            recall_ms = await _timed_recall(memories[target], query)
            vector, floor_ms = timed_floor(bench.embedder, query, matrix[lo:hi])
        recall.append(recall_ms)
        floor.append(floor_ms)
        vectors.append((target, vector))
        progress(1)
    return recall, floor, vectors


async def _after_writes(
    bench: RecallBench, memories: dict[int, LongTermMemory], progress: Callable[[int], None]
) -> tuple[list[float], int]:
    """Remember one new sentence, time one recall, repeat; then delete what was written
    so the next step and the ANN check see the synthesized rows only."""
    targets = sorted(memories)
    written: dict[int, list[str]] = defaultdict(list)
    latencies = []
    for n, sentence in enumerate(bench.writes):
        target = targets[n % len(targets)]
        outcome = await memories[target].remember(sentence)
        if outcome.id is not None:
            written[target].append(outcome.id)
        latencies.append(
            await _timed_recall(memories[target], bench.queries[n % len(bench.queries)])
        )
        progress(1)
    for target, ids in written.items():
        memories[target].store.delete(memories[target].namespace, ids)
    return latencies, sum(len(ids) for ids in written.values())


async def _timed_recall(memory: LongTermMemory, query: str) -> float:
    """Milliseconds of one full hybrid recall of 10 (embedding the query included)."""
    started = time.perf_counter()
    await memory.recall(query, 10, touch=False)
    return (time.perf_counter() - started) * 1000


def _ann_recall(
    bench: RecallBench,
    store: RecordStore,
    matrix: npt.NDArray[np.float32],
    size: int,
    target: int,
    vector: npt.NDArray[np.float32],
) -> float:
    lo, hi = bench.rows_of(target, size)
    hits = store.vector_search(bench.collection(target).name, vector, k=10)
    rows = [int(hit.record.id.removeprefix("m")) - lo for hit in hits]
    return recall_at_k(rows, matrix[lo:hi], vector, 10)
