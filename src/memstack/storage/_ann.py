"""An in-process HNSW index (usearch) over a namespace's unit vectors, for large namespaces.

Below ``ANN_MIN_ROWS`` rows a backend scans exactly (``_vectors``): exact, nothing to build,
and cheap at that size. From there on it searches an ``AnnIndex``, whose search cost grows
far slower than the scan's, tuned for a recall@10 of at least 0.98 against the scan (what
``memstack bench recall`` reaches is in docs/benchmarks.md).

Why ``ANN_MIN_ROWS`` sits where it does: below it the exact scan is about as fast as the
graph, or saves too little of a recall to pay for approximate results, a build that takes
seconds and the graph's memory; above it the index is several times faster than the scan,
and it stays fast when other jobs share the cores, where the scan's matrix product slows
down with them.

Why usearch: it alone can index vectors it does not own (``copy=False``), so the
backend's float32 matrix stays the one copy and the index adds only its graph (hnswlib
and faiss HNSW keep a float32 copy of every row inside). It removes keys (faiss HNSW
cannot). It is slower than hnswlib at equal ef, which a recall's budget absorbs. int8
storage with exact re-ranking (a second copy of the rows) and faiss IVF (a float32 copy,
and a slower tail at the same recall) fit worse.

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
thread, in the background) on ``bench recall``'s corpus, 16 fell short of the recall@10
target of 0.98 and 32 met it with a slower build and a larger graph; 24 meets it too,
with a smaller graph than 32."""
EXPANSION_ADD = 128  # ef_construction
EXPANSION_SEARCH = 1024
"""ef_search. Mixtures of real LoCoMo turns reach the recall@10 target at a far smaller
ef, but ``bench recall``'s denser synthetic corpus (its top 10 lie very close together
in cosine) needs this much. The search still costs well under the exact scan, and
1024 keeps the target on both."""
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
        """``key_lookups=False`` leaves out usearch's table from keys to nodes, which
        grows with every row: every key added must then be new, and ``remove``
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
