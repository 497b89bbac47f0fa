"""HashEmbedder: a deterministic, dependency-free embedder for tests.

Feature hashing: every lowercased word counts 1.0 and every character trigram 0.5,
each added with a sign into one of ``dim`` buckets chosen by BLAKE2b, then the vector
is L2-normalized. Equal texts give equal vectors in every process and on every
machine (no use of Python's salted ``hash()``), and texts sharing words and spellings
get a higher cosine than unrelated ones. It knows nothing of meaning: use it to test
plumbing, never to judge recall quality.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator, Sequence
from typing import Final

import numpy as np

from memstack._counts import check_whole
from memstack.embeddings.base import Vectors, check_texts, l2_normalize

__all__ = ["HashEmbedder"]

_WORD: Final = re.compile(r"\w+")
_WORD_WEIGHT: Final = 1.0
_TRIGRAM_WEIGHT: Final = 0.5


class HashEmbedder:
    """Deterministic feature-hashing embedder; ``model_id`` is ``"hash:<dim>"``."""

    def __init__(self, *, dim: int = 64) -> None:
        check_whole(dim, "dim")
        self._dim = dim

    @property
    def dim(self) -> int:
        return self._dim

    @property
    def model_id(self) -> str:
        return f"hash:{self._dim}"

    def embed_batch(self, texts: Sequence[str]) -> Vectors:
        items = check_texts(texts)
        matrix = np.zeros((len(items), self._dim), dtype=np.float32)
        for row, text in enumerate(items):
            for feature, weight in _features(text):
                bucket, sign = self._slot(feature)
                matrix[row, bucket] += sign * weight
        return l2_normalize(matrix)

    def _slot(self, feature: str) -> tuple[int, float]:
        digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
        value = int.from_bytes(digest, "big")
        return (value >> 1) % self._dim, 1.0 if value & 1 else -1.0


def _features(text: str) -> Iterator[tuple[str, float]]:
    """Words (``w:``) and character trigrams (``c:``); an empty text gets one feature."""
    lowered = " ".join(text.lower().split())
    found = False
    for word in _WORD.findall(lowered):
        found = True
        yield f"w:{word}", _WORD_WEIGHT
    padded = f" {lowered} "
    for i in range(len(padded) - 2):
        found = True
        yield f"c:{padded[i : i + 3]}", _TRIGRAM_WEIGHT
    if not found:
        yield "empty:", _WORD_WEIGHT
