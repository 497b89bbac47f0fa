"""An in-process HNSW index (usearch) over a namespace's unit vectors, for large namespaces.

Below ``ANN_MIN_ROWS`` rows a backend scans exactly (``_vectors``): exact, nothing to build,
a few milliseconds at most. From there on it searches an ``AnnIndex``: about 2 ms for the
k = 50 candidate pool of a hybrid recall at 100k rows, recall@10 >= 0.98 against the scan.

Measured by a throwaway script on 2 shared cores (AMD EPYC, AVX-512; usearch 2.26.6,
hnswlib 0.8.0, faiss-cpu 1.15.1). Rows: 384-d, each a normalized random mix of 3-4 real
all-MiniLM-L6-v2 embeddings of 2,000 LoCoMo conversation turns plus gaussian noise (sigma
0.01); queries: 300 real embeddings of LoCoMo questions, k = 50, one query at a time, the
methods interleaved query by query; recall against the exact float32 scan. At 100k rows
(the vectors take 146 MiB; "RSS" is what the index adds to the process)::

    method                                 build s  add 1 ms  p50 / p95 ms  r@10   r@50   RSS MiB
    exact numpy scan, 2 BLAS threads             -         -    7.5 /  8.6  1      1          0
    exact numpy scan, 1 BLAS thread              -         -   13.3 / 14.2  1      1          0
    usearch f32 in place (this), ef 200      34-48       0.9    1.4 /  1.8  0.985  0.967     31
    usearch f32 in place (this), ef 256      34-48       0.9    1.8 /  2.3  0.992  0.978     31
    hnswlib M 16, efc 200, ef 160               39       1.1    0.7 /  0.9  0.986  0.959    173
    usearch int8, ef 200, re-rank 100 exactly   13       0.4    0.8 /  1.2  0.988  0.968     64
    faiss HNSWFlat M 16, ef 160 (no remove)     62       0.8    0.6 /  0.7  0.987  0.957    162

``AnnIndex`` as configured here against the 2-thread exact scan, by size::

    rows   build s   exact p50 / p95 ms   AnnIndex p50 / p95 ms   r@10   r@50
    10k       1.2        0.4 / 0.7              0.5 / 0.7           0.998  0.994
    20k       4.4        1.5 / 2.2              1.1 / 1.4           0.996  0.987
    50k      15          4.2 / 5.1              1.7 / 2.2           0.996  0.986
    100k     34          7.7 / 9.8              1.8 / 2.3           0.992  0.978

Hence ``ANN_MIN_ROWS = 50_000``: at 10k the scan is as fast; at 20k the index saves under
a millisecond of a ~10 ms recall, not worth approximate results, a 4 s build and the
graph's memory; at 50k it is 2.5x faster and at 100k 4x (with other jobs on the cores the
scan's p50 at 100k went to 13-38 ms; the HNSW searches stayed at 1-2 ms).

Why usearch: it alone can index vectors it does not own (``copy=False``), so the
backend's float32 matrix stays the one copy and the index adds only its graph (31 MiB at
100k, against 162-173 MiB for the float32 copy inside hnswlib or faiss HNSW). It removes
keys (faiss HNSW cannot). It is about 1.7x slower than hnswlib at equal ef, which the
millisecond budget absorbs. int8 storage with exact re-ranking (64 MiB) and faiss IVF
(13 s build, but 1.7 / 4.8 ms at nprobe 192 for r@10 0.986, and a float32 copy) fit worse.

Ownership: the index reads rows in place. It keeps the arrays given to ``build`` and
``add`` (copying only rows that are not C-contiguous float32), so they must not be
written to while indexed. Keep using the same arrays for the exact path and append new
rows as new arrays rather than concatenating, and the vectors live in memory once. The row
of a removed or replaced key stays held until the next ``build``; ``stale_rows`` counts
them, so the caller can rebuild once they pile up.

Filters and expiry: a search whose filter keeps few rows should scan exactly (exact, and
cheap over a small candidate set). Rows to skip that are few (expired records) go through
``allowed``: ``search`` asks it which of the nearest keys may be returned and, while fewer
than ``k`` pass, searches again for four times as many (up to every row).

The caller serializes every call (build, add, remove, search) on one index.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from memstack._counts import check_whole
from memstack.errors import ConfigError, InvalidInput

if TYPE_CHECKING:
    from usearch.index import Index

__all__ = [
    "ANN_MIN_ROWS",
    "CONNECTIVITY",
    "EXPANSION_ADD",
    "EXPANSION_SEARCH",
    "Allowed",
    "AnnIndex",
    "use_ann",
]

ANN_MIN_ROWS = 50_000
"""Namespaces with at least this many embedded rows search the index; smaller ones scan."""

CONNECTIVITY = 24
"""HNSW M: graph edges per node (2M on the base layer). Built as the stores build it (one
thread, in the background), 16 reached recall@10 0.972 on ``bench recall``'s corpus at
100k rows; 32 reached 0.984 with a 41 s build, 1.7 ms p50 searches and a 57 MB graph
(16: 25 MB). Measured with 200 real query embeddings, 2026-11-22. Again on 2026-11-23
(ef_search 1024, one build thread, resident memory the graph adds): 32 reached 0.984
with 38 MB, 24 reached 0.9835 with 31 MB, 16 reached 0.9725 with 25 MB; 24 keeps the
target with 7 MB less."""
EXPANSION_ADD = 128  # ef_construction
EXPANSION_SEARCH = 1024
"""ef_search. 256 reached recall@10 0.992 on mixtures of LoCoMo turns (module docstring),
but only 0.939 on ``bench recall``'s denser synthetic corpus (its top 10 lie within 0.016
cosine), where 512 gave 0.978 and 1024 gave 0.994 at 2.2 ms p50 against 13 ms for the
exact scan (100k rows): 1024 keeps the target on both."""
_GROWTH = 4  # over-fetch factor while ``allowed`` rejects too many of the nearest keys
_UNIT_TOLERANCE = 1e-3

Keys = npt.NDArray[np.int64]
Rows = npt.NDArray[np.float32]
Allowed = Callable[[Keys], npt.NDArray[np.bool_]]
"""Which of the given keys a search may return (a boolean mask of the same length)."""

_INSTALL = (
    "the ANN index needs the usearch package; install it with `pip install usearch` "
    "(it is a dependency of memstack, so reinstalling memstack also brings it)."
)


def _load_onnxruntime_first() -> None:
    """Import onnxruntime, when installed, before usearch: with usearch 2.26 loaded first,
    importing onnxruntime 1.32 afterwards crashes the process (a segmentation fault in
    its native module), while the other order works. The local embedder may be loaded
    after a large namespace built its index, so the order is fixed here."""
    try:
        importlib.import_module("onnxruntime")
    except ImportError:
        pass


def use_ann(rows: int) -> bool:
    """Whether a namespace of ``rows`` embedded rows should search an ``AnnIndex``."""
    return rows >= ANN_MIN_ROWS


class AnnIndex:
    """An HNSW graph over integer keys (e.g. SQLite pks) and their unit float32 rows.

    Scores are cosines (inner products of unit vectors) in [-1, 1], highest first.
    """

    def __init__(
        self,
        dim: int,
        *,
        connectivity: int = CONNECTIVITY,
        expansion_add: int = EXPANSION_ADD,
        expansion_search: int = EXPANSION_SEARCH,
        threads: int = 0,
        key_lookups: bool = True,
    ) -> None:
        """``key_lookups=False`` leaves out usearch's table from keys to nodes, about 36
        bytes a row (3.6 MB at 100k): every key added must then be new, and ``remove``
        does nothing, so the caller masks the keys it no longer wants through ``allowed``
        (``VectorRows`` does, with slots that are never reused)."""
        for value, field in (
            (dim, "dim"),
            (connectivity, "connectivity"),
            (expansion_add, "expansion_add"),
            (expansion_search, "expansion_search"),
        ):
            check_whole(value, field)
        if isinstance(threads, bool) or not isinstance(threads, int) or threads < 0:
            raise InvalidInput("threads must be 0 (every core) or a positive int.", field="threads")
        self.dim = dim
        self._params = (connectivity, expansion_add, expansion_search)
        self._threads = threads
        self._lookups = key_lookups
        self._index = self._new_index()
        self._held: list[Rows] = []  # the arrays the graph points into
        self._stale = 0

    def __len__(self) -> int:
        return len(self._index)

    @property
    def stale_rows(self) -> int:
        """Rows still held for keys removed or replaced since the last ``build``."""
        return self._stale

    def build(self, keys: npt.ArrayLike, unit_rows: npt.ArrayLike) -> None:
        """Index exactly these rows, replacing whatever the index held."""
        checked_keys, rows = self._check_rows(keys, unit_rows)
        index = self._new_index()
        if len(checked_keys):
            index.add(checked_keys.astype(np.uint64), rows, copy=False, threads=self._threads)
        self._index, self._held, self._stale = index, [rows], 0

    def add(self, keys: npt.ArrayLike, unit_rows: npt.ArrayLike) -> None:
        """Index more rows; a key already indexed gets its new row (with key lookups)."""
        checked_keys, rows = self._check_rows(keys, unit_rows)
        if not len(checked_keys):
            return
        if self._lookups:
            self.remove(checked_keys)
        self._index.add(checked_keys.astype(np.uint64), rows, copy=False, threads=self._threads)
        self._held.append(rows)

    def remove(self, keys: npt.ArrayLike) -> int:
        """Unindex these keys (unknown keys are ignored); returns how many were indexed.
        Without key lookups, nothing is unindexed and 0 is returned."""
        checked = _check_keys(keys)
        if not self._lookups or not len(checked) or not len(self._index):
            return 0
        removed = int(np.sum(self._index.remove(checked.astype(np.uint64))))
        self._stale += removed
        return removed

    def search(
        self,
        query: npt.ArrayLike,
        k: int,
        *,
        allowed: Allowed | None = None,
        fetch: int | None = None,
    ) -> tuple[Keys, npt.NDArray[np.float64]]:
        """The ``k`` nearest allowed keys to ``query`` and their cosines, highest first;
        ``fetch``: how many nearest keys to ask the graph for first (default ``k``), more
        when ``allowed`` is expected to reject some."""
        check_whole(k, "k")
        vector = self._check_query(query)
        size = len(self._index)
        fetch = min(max(k, fetch or k), size)
        exact = False
        while fetch:
            matches = self._index.search(vector, fetch, threads=1, exact=exact)
            found = matches.keys.astype(np.int64)
            scores = np.clip(1.0 - matches.distances.astype(np.float64), -1.0, 1.0)
            if allowed is not None:
                keep = np.asarray(allowed(found), dtype=np.bool_)
                found, scores = found[keep], scores[keep]
            if len(found) >= k or exact:
                return found[:k], scores[:k]
            if fetch >= size:
                exact = True  # the graph may not reach every row: scan them all, once
            fetch = min(size, fetch * _GROWTH)
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)

    def _new_index(self) -> Index:
        _load_onnxruntime_first()
        try:
            from usearch.index import Index
        except ImportError as exc:
            raise ConfigError(_INSTALL) from exc
        connectivity, expansion_add, expansion_search = self._params
        return Index(
            ndim=self.dim,
            metric="ip",
            dtype="f32",
            connectivity=connectivity,
            expansion_add=expansion_add,
            expansion_search=expansion_search,
            enable_key_lookups=self._lookups,
        )

    def _check_rows(self, keys: npt.ArrayLike, unit_rows: npt.ArrayLike) -> tuple[Keys, Rows]:
        checked = _check_keys(keys)
        if len(np.unique(checked)) != len(checked):
            raise InvalidInput("keys must not repeat within one call.", field="keys")
        rows = np.ascontiguousarray(unit_rows, dtype=np.float32)  # no copy if already so
        if rows.ndim != 2 or rows.shape != (len(checked), self.dim):
            raise InvalidInput(
                f"unit_rows must have shape ({len(checked)}, {self.dim}), one row of "
                f"{self.dim} numbers per key; got {rows.shape}.",
                field="unit_rows",
            )
        squares = np.einsum("ij,ij->i", rows, rows)  # no temporary copy of the rows
        if not np.all(np.abs(squares - 1.0) <= 2 * _UNIT_TOLERANCE):
            raise InvalidInput(
                "unit_rows must be finite rows of length 1; normalize them first.",
                field="unit_rows",
            )
        return checked, rows

    def _check_query(self, query: npt.ArrayLike) -> Rows:
        try:
            vector = np.asarray(query, dtype=np.float32)
        except (TypeError, ValueError) as exc:
            raise InvalidInput("query must be a 1-D array of numbers.", field="vector") from exc
        if vector.ndim != 1 or vector.shape[0] != self.dim:
            raise InvalidInput(
                f"query must be a 1-D vector of {self.dim} numbers, the dimension of this "
                f"index; got shape {vector.shape}. Embed it with the same model.",
                field="vector",
            )
        norm = float(np.linalg.norm(vector))
        if not np.isfinite(norm) or norm == 0.0:
            raise InvalidInput("query must be finite and not all zeros.", field="vector")
        return vector / np.float32(norm)


def _check_keys(keys: npt.ArrayLike) -> Keys:
    raw = np.asarray(keys)
    if raw.ndim != 1 or (raw.size and raw.dtype.kind not in "iu"):
        raise InvalidInput("keys must be a 1-D array of integers.", field="keys")
    checked = raw.astype(np.int64)
    if checked.size and checked.min() < 0:  # a uint64 above 2**63 - 1 wraps negative
        raise InvalidInput("keys must be non-negative 64-bit integers.", field="keys")
    return checked
