"""The Embedder protocol, and the helpers written once on top of it.

An embedder turns a batch of texts into a float32 matrix of shape ``(n, dim)`` whose
rows have unit L2 norm, so the dot product of two rows is their cosine similarity.
Backends implement ``embed_batch`` only; ``embed`` (one text) is written here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, TypeAlias, runtime_checkable

import numpy as np
from numpy.typing import NDArray

from memstack.errors import ConfigError, InvalidInput

__all__ = ["Embedder", "EmbedderWrapper", "Vectors", "check_texts", "embed", "l2_normalize"]

Vectors: TypeAlias = NDArray[np.float32]
"""A float32 matrix ``(n, dim)`` of unit rows (or one such row, ``(dim,)``)."""


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into unit-length float32 vectors of a fixed dimension."""

    @property
    def dim(self) -> int:
        """The length of every vector this embedder returns."""
        ...

    @property
    def model_id(self) -> str:
        """Names the vector space, e.g. ``"local:all-MiniLM-L6-v2"``.

        Vectors are comparable only when their ``model_id`` is equal.
        """
        ...

    def embed_batch(self, texts: Sequence[str]) -> Vectors:
        """A ``(len(texts), dim)`` float32 matrix of unit rows, in the order of ``texts``.

        An empty ``texts`` gives shape ``(0, dim)``. A non-``str`` item raises
        ``InvalidInput`` naming its index.
        """
        ...


class EmbedderWrapper:
    """An embedder over ``inner`` with its ``dim`` and ``model_id``: what wrappers that
    change how the calls run, not what they return, share."""

    inner: Embedder

    @property
    def dim(self) -> int:
        return self.inner.dim

    @property
    def model_id(self) -> str:
        return self.inner.model_id


def embed(embedder: Embedder, text: str) -> Vectors:
    """The unit vector ``(dim,)`` of one text."""
    if not isinstance(text, str):
        raise InvalidInput(
            f"text is a {type(text).__name__}, not a str; pass the text to embed.", field="text"
        )
    vector: Vectors = embedder.embed_batch([text])[0]
    return vector


def check_texts(texts: Sequence[str]) -> list[str]:
    """``texts`` as a list, or ``InvalidInput`` naming the first item that is not a str."""
    if isinstance(texts, str | bytes):
        raise InvalidInput(
            "texts is a single string; pass a list of strings, e.g. [text].", field="texts"
        )
    items = list(texts)
    for i, item in enumerate(items):
        if not isinstance(item, str):
            raise InvalidInput(
                f"texts[{i}] is a {type(item).__name__}, not a str; "
                "embed strings only (convert or drop that item).",
                field=f"texts[{i}]",
            )
    return items


def rows_of(embedder: Embedder, texts: Sequence[str]) -> Vectors:
    """``embedder.embed_batch(texts)``, or ``ConfigError`` when it does not return one row
    per text (a wrapper that hands rows out to several callers must not shift them)."""
    vectors = embedder.embed_batch(texts)
    if len(vectors) != len(texts):
        raise ConfigError(
            f"{type(embedder).__name__} returned {len(vectors)} rows for "
            f"{len(texts)} texts; an Embedder must return one row per text."
        )
    return vectors


def l2_normalize(matrix: NDArray[Any]) -> Vectors:
    """``matrix`` as float32 with each row scaled to unit length; all-zero rows stay zero."""
    out = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    normalized: Vectors = np.divide(out, norms, out=np.zeros_like(out), where=norms > 0)
    return normalized
