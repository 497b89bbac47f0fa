"""CachedEmbedder: an LRU cache of vectors, per text, in front of another embedder.

Agents ask the same queries again and again ("user preferences", the task's title), and
an embedding model is deterministic, so a text embedded once need not be embedded again.
The cache belongs to the embedder that owns it (no module-level state) and keeps at most
``max_entries`` texts, dropping the least recently used first. Texts longer than
``max_text_chars`` (stored documents rather than queries) pass through uncached, so the
cache's memory stays bounded by about ``max_entries * max_text_chars`` characters.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

from memstack._counts import check_whole
from memstack.embeddings.base import Embedder, EmbedderWrapper, Vectors, check_texts

__all__ = ["CachedEmbedder"]


class CachedEmbedder(EmbedderWrapper):
    """``inner`` with its vectors cached per text; same ``dim`` and ``model_id``. Thread-safe.

    Only the texts not in the cache reach ``inner``, in one ``embed_batch`` call, each
    distinct text once; texts over ``max_text_chars`` are embedded every time. Returned
    matrices are the caller's own: changing one never changes what the cache returns.
    """

    def __init__(
        self, inner: Embedder, *, max_entries: int = 1024, max_text_chars: int = 2048
    ) -> None:
        check_whole(max_entries, "max_entries")
        check_whole(max_text_chars, "max_text_chars")
        self.inner = inner
        self.max_entries = max_entries
        self.max_text_chars = max_text_chars
        self._lock = threading.Lock()
        self._vectors: OrderedDict[str, Vectors] = OrderedDict()

    def __len__(self) -> int:
        """How many texts are cached now."""
        with self._lock:
            return len(self._vectors)

    def embed_batch(self, texts: Sequence[str]) -> Vectors:
        items = check_texts(texts)
        found = self._lookup(items)
        missing = list(dict.fromkeys(text for text in items if text not in found))
        if missing:
            vectors = self.inner.embed_batch(missing)
            fresh = {text: _frozen(vectors[i]) for i, text in enumerate(missing)}
            self._store({t: v for t, v in fresh.items() if len(t) <= self.max_text_chars})
            found.update(fresh)
        if not items:
            return self.inner.embed_batch([])
        return np.stack([found[text] for text in items])

    def _lookup(self, texts: list[str]) -> dict[str, Vectors]:
        with self._lock:
            found: dict[str, Vectors] = {}
            for text in texts:
                vector = self._vectors.get(text)
                if vector is not None:
                    self._vectors.move_to_end(text)
                    found[text] = vector
            return found

    def _store(self, vectors: dict[str, Vectors]) -> None:
        with self._lock:
            for text, vector in vectors.items():
                self._vectors[text] = vector
                self._vectors.move_to_end(text)
            while len(self._vectors) > self.max_entries:
                self._vectors.popitem(last=False)


def _frozen(row: Vectors) -> Vectors:
    """A read-only copy of one row: a view would keep the whole batch matrix alive."""
    copy = np.array(row, dtype=np.float32)
    copy.setflags(write=False)
    return copy
