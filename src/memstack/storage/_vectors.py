"""Exact cosine similarity with numpy, for the backends that scan vectors themselves."""

from __future__ import annotations

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


def top_k(scores: npt.NDArray[np.float64], k: int) -> npt.NDArray[np.intp]:
    """Indices of the ``k`` highest scores, highest first (ties keep index order)."""
    if scores.shape[0] > k:
        part = np.argpartition(-scores, k - 1)[:k]
        return part[np.argsort(-scores[part], kind="stable")]
    return np.argsort(-scores, kind="stable")
