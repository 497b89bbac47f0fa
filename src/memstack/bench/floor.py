"""The floor under a recall: embed the query, scan the exact matrix with numpy.

No store can answer faster than its own embedding of the query plus one pass over
the namespace's vectors, so recall latency is reported as a ratio to this.
The same exact ranking scores an approximate (ANN) vector search: recall@k.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Final

import numpy as np
import numpy.typing as npt

from memstack.embeddings import Embedder

__all__ = ["FLOOR_K", "exact_top", "recall_at_k", "timed_floor"]

FLOOR_K: Final = 50
"""Candidates the floor keeps: the pool recall draws its vector candidates from."""
_TIE: Final = 1e-5


def exact_top(
    matrix: npt.NDArray[np.float32], vector: npt.NDArray[np.float32], k: int
) -> npt.NDArray[np.intp]:
    """Rows of the ``k`` highest dot products, best first (rows are unit vectors)."""
    scores = matrix @ vector
    if scores.shape[0] > k:
        part = np.argpartition(-scores, k - 1)[:k]
    else:
        part = np.arange(scores.shape[0])
    return part[np.argsort(-scores[part], kind="stable")]


def timed_floor(
    embedder: Embedder, query: str, matrix: npt.NDArray[np.float32], k: int = FLOOR_K
) -> tuple[npt.NDArray[np.float32], float]:
    """The query's vector, and the milliseconds to embed it and find its exact top ``k``."""
    started = time.perf_counter()
    vector = np.asarray(embedder.embed_batch([query])[0], dtype=np.float32)
    exact_top(matrix, vector, k)
    return vector, (time.perf_counter() - started) * 1000


def recall_at_k(
    found: Sequence[int],
    matrix: npt.NDArray[np.float32],
    vector: npt.NDArray[np.float32],
    k: int = 10,
) -> float:
    """Share of the exact top ``k`` rows that ``found`` (row numbers, best first) holds.

    A found row scoring as high as the exact ``k``-th (within float rounding) counts,
    so an exact backend that breaks a tie differently still scores 1.0.
    """
    wanted = min(k, int(matrix.shape[0]))
    if wanted == 0:
        return 1.0
    scores = matrix @ vector
    kth = float(scores[exact_top(matrix, vector, wanted)[-1]])
    good = {r for r in found[:k] if 0 <= r < len(scores) and float(scores[r]) >= kth - _TIE}
    return len(good) / wanted
