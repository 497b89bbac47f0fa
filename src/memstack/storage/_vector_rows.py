"""VectorRows: one namespace's unit embeddings as a growable float32 matrix, kept in step.

Rows are appended, overwritten in place, and a removed row is filled by the last one,
so a write costs O(dim) instead of a reload of the namespace. Beside each row: its key
(the backend's id for the record) and its expiry (``inf`` for never). Search is an
exact cosine scan over the live rows; the caller serializes access.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from typing import Generic, TypeVar

import numpy as np
import numpy.typing as npt

from memstack.storage._vectors import normalized, top_k
from memstack.storage.types import Vector

__all__ = ["VectorRows", "load_rows"]

K = TypeVar("K", bound=Hashable)


class VectorRows(Generic[K]):
    def __init__(self, dim: int, capacity: int = 16) -> None:
        self.dim = dim
        self._matrix: npt.NDArray[np.float32] = np.zeros((max(capacity, 16), dim), np.float32)
        self._expires: npt.NDArray[np.float64] = np.full(self._matrix.shape[0], np.inf)
        self.keys: list[K] = []
        self._rows: dict[K, int] = {}

    def __len__(self) -> int:
        return len(self.keys)

    def __contains__(self, key: K) -> bool:
        return key in self._rows

    @property
    def unit_rows(self) -> npt.NDArray[np.float32]:
        """A view of the live rows (no copy); valid until the next change."""
        return self._matrix[: len(self.keys)]

    @property
    def expires(self) -> npt.NDArray[np.float64]:
        return self._expires[: len(self.keys)]

    def put(self, key: K, vector: Vector, expires_at: float | None, *, unit: bool = False) -> None:
        """Add ``key``'s vector, or overwrite it; ``unit=True`` when already of length 1."""
        row = self._rows.get(key)
        if row is None:
            row = len(self.keys)
            if row == self._matrix.shape[0]:
                self._grow()
            self.keys.append(key)
            self._rows[key] = row
        self._matrix[row] = vector if unit else normalized(vector)
        self._expires[row] = np.inf if expires_at is None else expires_at

    def remove(self, key: K) -> bool:
        row = self._rows.pop(key, None)
        if row is None:
            return False
        last = len(self.keys) - 1
        if row != last:
            moved = self.keys[last]
            self._matrix[row] = self._matrix[last]
            self._expires[row] = self._expires[last]
            self.keys[row] = moved
            self._rows[moved] = row
        self.keys.pop()
        return True

    def search(
        self, query: Vector, k: int, allowed: npt.NDArray[np.bool_] | None = None
    ) -> list[tuple[K, float]]:
        """The ``k`` best ``(key, cosine)`` among rows where ``allowed`` (all if None)."""
        if not self.keys:
            return []
        scores = np.clip((self.unit_rows @ query).astype(np.float64), -1.0, 1.0)
        if allowed is None:
            best = top_k(scores, k)
        else:
            rows = np.flatnonzero(allowed)
            best = rows[top_k(scores[rows], k)]
        return [(self.keys[i], float(scores[i])) for i in best]

    def nearest(
        self, queries: npt.NDArray[np.float32], allowed: npt.NDArray[np.bool_] | None = None
    ) -> list[tuple[K, float] | None]:
        """For each unit query row, the best ``(key, cosine)`` among allowed rows: one
        matrix product for the whole batch."""
        m = queries.shape[0]
        rows = np.arange(len(self.keys)) if allowed is None else np.flatnonzero(allowed)
        if rows.size == 0:
            return [None] * m
        scores = (
            self.unit_rows[rows] @ queries.T
            if allowed is not None
            else (self.unit_rows @ queries.T)
        )
        best = np.argmax(scores, axis=0)
        return [
            (self.keys[int(rows[b])], float(np.clip(scores[b, j], -1.0, 1.0)))
            for j, b in enumerate(best)
        ]

    def live(self, now: float) -> npt.NDArray[np.bool_] | None:
        """Rows not expired at ``now``; None when none has expired."""
        mask = self.expires > now
        return None if mask.all() else mask

    def where_keys(self, keys: Sequence[K]) -> npt.NDArray[np.bool_]:
        mask = np.zeros(len(self.keys), dtype=bool)
        rows = [self._rows[k] for k in keys if k in self._rows]
        mask[rows] = True
        return mask

    def _grow(self) -> None:
        n = self._matrix.shape[0]
        size = max(n + 16, n * 5 // 4)  # 25% headroom: the matrix dominates memory
        matrix = np.zeros((size, self.dim), np.float32)
        matrix[:n] = self._matrix
        expires = np.full(size, np.inf)
        expires[:n] = self._expires
        self._matrix, self._expires = matrix, expires


def load_rows(dim: int, count: int, rows: Iterable[tuple[K, bytes, float | None]]) -> VectorRows[K]:
    """``VectorRows`` filled from ``(key, little-endian float32 blob, expires_at)`` rows,
    written straight into a matrix of ``count`` rows: no list of blobs, no second copy."""
    vectors: VectorRows[K] = VectorRows(dim, capacity=count)
    for key, blob, expires_at in rows:
        vectors.put(key, np.frombuffer(blob, dtype="<f4"), expires_at)
    return vectors
