"""VectorRows: one namespace's unit embeddings, kept in step with writes, searched exactly
or, once large, through an in-process HNSW index.

Rows live in float32 chunks that are never moved or reallocated: a write appends a row
(a replaced or removed key leaves a dead slot behind), so an ``AnnIndex`` can read the
rows in place and the vectors are in memory once. Dead slots are compacted away once
they are a quarter of the rows (the index is then rebuilt). Beside each slot: its key
(the backend's record id, None when dead; the way back from keys to slots is a compact
``KeyMap``) and its expiry (``inf`` for never).

From ``ann_min_rows`` live rows on, the index is built in a background thread (a cold
build of a large namespace takes far longer than any search should wait); searches scan
exactly until it is ready, then it catches up with the writes made meanwhile and
answers unfiltered searches. A search with a filter that keeps only some rows stays exact
(filters never cost recall). The caller serializes every call; only the build runs
beside it, on rows nobody writes.

A build is stopped and joined by ``close`` and, for rows nobody closed, when the
interpreter exits (``BackgroundBuild``): a daemon thread still inside the index's C++
code while Python finalizes is torn down with ``pthread_exit``, which aborts the whole
process (``terminate called without an active exception``, SIGABRT).
"""

from __future__ import annotations

import atexit
import bisect
import threading
from array import array
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

import numpy as np
import numpy.typing as npt

from memstack.storage._ann import ANN_MIN_ROWS, AnnIndex
from memstack.storage._keymap import KeyMap
from memstack.storage._vectors import normalized, top_k
from memstack.storage.types import Vector

__all__ = ["VectorRows", "load_rows"]

K = TypeVar("K", bound=Hashable)
_MAX_CHUNK = 16_384
_BUILD_STEP = 256  # rows per call while building, so closing stops a build promptly
Mask = npt.NDArray[np.bool_]


class BackgroundBuild:
    """One index build on a daemon thread, with the flag that stops it.

    Every build in progress is listed in ``running`` so that ``stop_all``, registered
    with ``atexit``, stops and joins them before the interpreter finalizes. The list is
    process-wide because interpreter exit is: it holds only builds still running."""

    running: set[BackgroundBuild] = set()
    _guard = threading.Lock()

    def __init__(self, work: Callable[[threading.Event], None]) -> None:
        self.stopped = threading.Event()
        self._work = work
        self._thread = threading.Thread(target=self._run, name="memstack-ann-build", daemon=True)

    def start(self) -> None:
        with self._guard:
            self.running.add(self)
        self._thread.start()

    def stop(self, *, wait: bool = True) -> None:
        """Ask the build to stop; with ``wait``, return once its thread has ended."""
        self.stopped.set()
        if wait and self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join()

    def _run(self) -> None:
        try:
            self._work(self.stopped)
        finally:
            with self._guard:
                self.running.discard(self)

    @classmethod
    def stop_all(cls) -> None:
        with cls._guard:
            builds = list(cls.running)
        for build in builds:
            build.stop(wait=False)
        for build in builds:
            build.stop()


atexit.register(BackgroundBuild.stop_all)


@dataclass(frozen=True, kw_only=True)
class _Built:
    generation: int
    index: AnnIndex
    upto: int
    """Slots below this were indexed (dead ones among them too: searches mask them)."""


class VectorRows(Generic[K]):
    def __init__(
        self,
        dim: int,
        capacity: int = 0,
        *,
        ann_min_rows: int = ANN_MIN_ROWS,
        background: bool = True,
    ) -> None:
        self.dim = dim
        self._chunks: list[npt.NDArray[np.float32]] = []
        self._starts: list[int] = []  # first slot of each chunk
        self._first = capacity
        self._ids: KeyMap[K] = KeyMap()
        self._alive = bytearray()
        self._expires = array("d")
        self._soonest = np.inf  # no slot expires before it (a removed one may still count)
        self._ann_min_rows = ann_min_rows
        self._background = background
        self._ann: AnnIndex | None = None
        self._generation = 0  # bumped when compaction renumbers the slots
        self._building: BackgroundBuild | None = None
        self._built: _Built | None = None  # handed over by the build thread

    def __len__(self) -> int:
        return len(self._ids)

    def __contains__(self, key: K) -> bool:
        return key in self._ids

    @property
    def keys(self) -> list[K | None]:
        """Each slot's key; None: a dead slot."""
        return self._ids.keys

    def held(self, keys: Sequence[K]) -> list[K]:
        """Each key object held equal to one of ``keys``, else that key (``KeyMap.held``)."""
        return self._ids.held(keys)

    def close(self) -> None:
        """Stop a build in progress (and wait for its thread) and drop the index (the
        rows stay searchable)."""
        building = self._drop_index()
        if building is not None:
            building.stop()

    def _drop_index(self) -> BackgroundBuild | None:
        """Forget the index and any build in progress, which stops at its next step;
        return that build."""
        building = self._building
        self._generation += 1
        self._ann, self._building, self._built = None, None, None
        if building is not None:
            building.stop(wait=False)
        return building

    def ready(self) -> bool:
        """Whether searches run at full speed: the namespace is small enough to scan, or
        its index is built (a build is started here when one is due)."""
        return len(self._ids) < self._ann_min_rows or self._use_index()

    @property
    def ann_ready(self) -> bool:
        """Whether unfiltered searches go through the HNSW index now."""
        self._adopt()
        return self._ann is not None

    # -- writes -------------------------------------------------------------------

    def put(self, key: K, vector: Vector, expires_at: float | None, *, unit: bool = False) -> None:
        """Add ``key``'s vector, or replace it; ``unit=True`` when already of length 1."""
        self.remove(key)
        self._add(key, vector, expires_at, unit=unit)

    def _add(self, key: K, vector: Vector, expires_at: float | None, *, unit: bool) -> None:
        """``put`` of a key not held."""
        chunk, row = self._place(len(self.keys))
        chunk[row] = vector if unit else normalized(vector)
        slot = self._ids.append(key)
        self._alive.append(1)
        self._expires.append(np.inf if expires_at is None else expires_at)
        if expires_at is not None:
            self._soonest = min(self._soonest, expires_at)
        if self._ann is not None:
            self._ann.add([slot], chunk[row : row + 1])

    def remove(self, key: K) -> bool:
        slot = self._ids.pop(key)
        if slot is None:
            return False
        self._alive[slot] = 0  # searches of the index mask it from now on
        if len(self.keys) - len(self._ids) > max(1_024, len(self._ids) // 4):
            self._compact()
        return True

    # -- reads --------------------------------------------------------------------

    def search(
        self, query: Vector, k: int, allowed: Mask | None = None, *, exact: bool = False
    ) -> list[tuple[K, float]]:
        """The ``k`` best ``(key, cosine)`` among live slots where ``allowed`` (a mask over
        slots; None: all), equal cosines by key (``top_k``). ``exact=True`` (a selective
        filter) never uses the index."""
        return self.search_scoring(query, k, allowed, exact=exact)[0]

    def search_scoring(
        self,
        query: Vector,
        k: int,
        allowed: Mask | None = None,
        *,
        exact: bool = False,
        keys: Sequence[K] = (),
    ) -> tuple[list[tuple[K, float]], dict[K, float]]:
        """``search``, and ``cosines(query, keys)``: a scan has every row's cosine already
        (a hybrid search asks for its keyword matches')."""
        if not len(self._ids):
            return [], {}
        clean = len(self.keys) == len(self._ids)  # no dead slot
        if not exact and self._use_index():
            assert self._ann is not None
            mask = self._mask(allowed)
            # dead slots stay in the graph, masked: ask for more than k when there are some
            fetch = k if clean else 2 * k
            slots, scores = self._ann.search(query, k, allowed=lambda f: mask[f], fetch=fetch)
            # The graph's hits in the scan's order, ties by key; which of the rows tied
            # with the k-th hit the graph returns is not chosen by key (it is approximate).
            order = top_k(scores, len(slots), lambda i: self._key(int(slots[i])))
            hits = [(self._key(int(slots[i])), float(scores[i])) for i in order]
            return hits, self.cosines(query, keys) if keys else {}
        scores = np.clip(self._scores(query).astype(np.float64), -1.0, 1.0)
        if clean and allowed is None:  # every slot: no mask to apply
            best = top_k(scores, k, self._key)
        else:
            rows = np.flatnonzero(self._mask(allowed))
            best = rows[top_k(scores[rows], k, lambda i: self._key(int(rows[i])))]
        hits = [(self._key(int(i)), float(scores[i])) for i in best]
        pairs = zip(keys, self._ids.find(keys), strict=True)
        return hits, {key: float(scores[slot]) for key, slot in pairs if slot is not None}

    def nearest(
        self, queries: npt.NDArray[np.float32], allowed: Mask | None = None
    ) -> list[tuple[K, float] | None]:
        """For each unit query row, the best ``(key, cosine)`` among allowed live slots
        (of equal cosines, the smallest key): one matrix product per chunk for the whole
        batch."""
        m = queries.shape[0]
        rows = np.flatnonzero(self._mask(allowed))
        if rows.size == 0:
            return [None] * m
        scores = np.concatenate([c @ queries.T for c in self._used_chunks()])[rows]
        np.clip(scores, -1.0, 1.0, out=scores)  # a copy already (rows picked)
        best = np.argmax(scores, axis=0)
        for j in np.flatnonzero(np.count_nonzero(scores == scores[best, range(m)], axis=0) > 1):
            best[j] = top_k(scores[:, j], 1, lambda i: self._key(int(rows[i])))[0]
        return [(self._key(int(rows[b])), float(scores[b, j])) for j, b in enumerate(best)]

    def cosines(self, query: Vector, keys: Sequence[K]) -> dict[K, float]:
        """The cosine of the unit ``query`` with each of ``keys`` held (expired or not)."""
        pairs = zip(keys, self._ids.find(keys), strict=True)
        held = [(key, slot) for key, slot in pairs if slot is not None]
        if not held:
            return {}
        slots = np.array([slot for _, slot in held], dtype=np.intp)
        if len(self._chunks) == 1:
            rows = self._chunks[0][slots]
        else:
            rows = np.stack([self._chunks[c][s - self._starts[c]] for c, s in self._located(slots)])
        dots = np.clip(rows @ query, -1.0, 1.0).tolist()
        return {key: float(dot) for (key, _), dot in zip(held, dots, strict=True)}

    def live(self, now: float) -> Mask | None:
        """Slots not expired at ``now``; None when none has expired."""
        if now < self._soonest:
            return None
        mask = np.frombuffer(self._expires, dtype=np.float64) > now
        return None if mask.all() else mask

    def where_keys(self, keys: Sequence[K]) -> Mask:
        mask = np.zeros(len(self.keys), dtype=bool)
        mask[self._ids.slots(keys)] = True
        return mask

    def live_keys(self) -> list[K]:
        return self._ids.live_keys()

    # -- internals ----------------------------------------------------------------

    def pack_keys(self) -> None:
        """Pack the key map (a loader calls it after a bulk load; see ``KeyMap``)."""
        self._ids.pack()

    def _key(self, slot: int) -> K:
        key = self.keys[slot]
        assert key is not None
        return key

    def _mask(self, allowed: Mask | None) -> Mask:
        alive = np.frombuffer(self._alive, dtype=np.bool_)
        return alive if allowed is None else alive & allowed

    def _place(self, slot: int) -> tuple[npt.NDArray[np.float32], int]:
        """The chunk and row of ``slot``, a new chunk when the last one is full."""
        capacity = self._starts[-1] + len(self._chunks[-1]) if self._chunks else 0
        if slot >= capacity:
            size = self._first or max(16, min(_MAX_CHUNK, capacity // 4))
            self._first = 0
            self._chunks.append(np.zeros((size, self.dim), dtype=np.float32))
            self._starts.append(capacity)
        i = bisect.bisect_right(self._starts, slot) - 1
        return self._chunks[i], slot - self._starts[i]

    def _located(self, slots: npt.NDArray[np.intp]) -> list[tuple[int, int]]:
        """The chunk of each slot, with the slot."""
        chunks = np.searchsorted(np.array(self._starts), slots, side="right") - 1
        return list(zip(chunks.tolist(), slots.tolist(), strict=True))

    def _used_chunks(self) -> list[npt.NDArray[np.float32]]:
        """Each chunk cut to the slots in use (views, no copies)."""
        n = len(self.keys)
        return [
            c[: max(0, min(len(c), n - s))] for c, s in zip(self._chunks, self._starts, strict=True)
        ]

    def _scores(self, query: Vector) -> npt.NDArray[np.float32]:
        parts = [c @ query for c in self._used_chunks() if len(c)]
        return np.concatenate(parts) if len(parts) > 1 else parts[0]

    def _use_index(self) -> bool:
        self._adopt()
        if self._ann is None and self._building is None and len(self._ids) >= self._ann_min_rows:
            self._start_build()
            self._adopt()
        return self._ann is not None

    def _start_build(self) -> None:
        """Index the slots there are now, in the background unless told otherwise."""
        generation, chunks, starts, upto = (
            self._generation,
            self._used_chunks(),
            self._starts[:],
            len(self.keys),
        )

        def work(stopped: threading.Event) -> None:
            self._build(stopped, generation, chunks, starts, upto)

        self._building = BackgroundBuild(work)
        if self._background:
            self._building.start()
        else:
            work(self._building.stopped)

    def _build(
        self,
        stopped: threading.Event,
        generation: int,
        chunks: list[npt.NDArray[np.float32]],
        starts: list[int],
        upto: int,
    ) -> None:
        # beside the searches, on one core; slots are never reused and dead ones are
        # masked, so the index needs no table from keys to nodes (memory saved per row)
        index = AnnIndex(self.dim, threads=1, key_lookups=False)
        for chunk, start in zip(chunks, starts, strict=True):
            for lo in range(0, len(chunk), _BUILD_STEP):
                if stopped.is_set():
                    return  # closed or compacted meanwhile: nobody wants this index
                part = chunk[lo : lo + _BUILD_STEP]
                index.add(np.arange(start + lo, start + lo + len(part)), part)
        self._built = _Built(generation=generation, index=index, upto=upto)

    def _adopt(self) -> None:
        """Take a finished build and add what was written meanwhile."""
        built, self._built = self._built, None
        if built is None:
            return
        self._building = None
        if built.generation != self._generation:
            return  # the slots were renumbered since; a later search starts anew
        for chunk, start in zip(self._used_chunks(), self._starts, strict=True):
            lo = max(built.upto - start, 0)
            if lo < len(chunk):
                built.index.add(np.arange(start + lo, start + len(chunk)), chunk[lo:])
        self._ann = built.index

    def _compact(self) -> None:
        """Copy the live rows into one new chunk and renumber the slots."""
        live = self._ids.live_slots()
        matrix = np.concatenate(self._used_chunks())[live] if live else np.zeros((0, self.dim))
        expires = [self._expires[s] for s in live]
        self._drop_index()  # a build in progress stops by itself; no need to wait for it
        self._chunks, self._starts = ([matrix.astype(np.float32)], [0]) if live else ([], [])
        self._ids = KeyMap(self._ids.live_keys())
        self._alive = bytearray(b"\x01" * len(live))
        self._expires = array("d", expires)
        self._soonest = min(expires, default=np.inf)
        self._first = 0


def load_rows(dim: int, count: int, rows: Iterable[tuple[K, bytes, float | None]]) -> VectorRows[K]:
    """``VectorRows`` filled from ``(key, little-endian float32 blob, expires_at)`` rows
    with distinct keys (a table's rows), written straight into one chunk of ``count``
    rows: no list of blobs, no second copy."""
    vectors: VectorRows[K] = VectorRows(dim, capacity=count)
    for key, blob, expires_at in rows:
        vectors._add(key, np.frombuffer(blob, dtype="<f4"), expires_at, unit=False)
    vectors.pack_keys()
    return vectors
