"""Exact cosine similarity with numpy, for the backends that scan vectors themselves."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["normalized", "top_k", "unit"]


def normalized(matrix: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """Rows (or a single vector) scaled to unit length; zero rows stay zero."""
    norms = np.linalg.norm(matrix, axis=-1, keepdims=True)
    out: npt.NDArray[np.float32] = np.zeros_like(matrix)
    np.divide(matrix, norms, out=out, where=norms > 0)
    return out


def unit(vector: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """A checked vector (finite, not all zeros) scaled to length 1: ``normalized`` of one
    vector, bit for bit (the same pairwise sum of squares) without its general-case calls."""
    out: npt.NDArray[np.float32] = vector / np.sqrt(np.add.reduce(vector * vector))
    return out


def top_k(
    scores: npt.NDArray[np.floating[Any]], k: int, key: Callable[[int], object]
) -> npt.NDArray[np.intp]:
    """Indices of the ``k`` highest scores, highest first; exact ties are ordered by
    ``key(index)`` ascending (the record id), at the ``k`` boundary too: of the rows that
    tie with the ``k``-th score, those with the smallest keys are kept.

    Only the candidates (the ``k`` best and the rows tied with the ``k``-th) are sorted,
    and ``key`` is called only when two of them tie, so no Python loop runs over all the
    scores."""
    n = scores.shape[0]
    if n > k:
        kth = np.partition(scores, n - k)[n - k]
        picked = np.flatnonzero(scores >= kth)
    else:
        picked = np.arange(n)
    order = picked[np.argsort(-scores[picked], kind="stable")]
    ranked = scores[order]
    if (ranked[1:] == ranked[:-1]).any():
        values = ranked.tolist()
        ids = [key(int(i)) for i in order]
        tied = sorted(range(len(order)), key=lambda j: (-values[j], ids[j]))
        order = order[tied]
    return order[:k]
