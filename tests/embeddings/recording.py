"""RecordingEmbedder: a real embedder for tests that records every batch it is asked for;
``embed_within``: a call that must not hang."""

from __future__ import annotations

import threading
from collections.abc import Sequence

from memstack.embeddings import Embedder, HashEmbedder, Vectors
from memstack.embeddings.base import EmbedderWrapper
from memstack.errors import StoreUnavailable


class RecordingEmbedder(EmbedderWrapper):
    """A HashEmbedder that records each batch, and fails a batch holding ``fail_on``."""

    def __init__(self, *, dim: int = 32, fail_on: str | None = None) -> None:
        self.inner = HashEmbedder(dim=dim)
        self._lock = threading.Lock()
        self.batches: list[list[str]] = []
        self.fail_on = fail_on

    @property
    def seen(self) -> list[str]:
        """Every text embedded, in order."""
        with self._lock:
            return [text for batch in self.batches for text in batch]

    def embed_batch(self, texts: Sequence[str]) -> Vectors:
        with self._lock:
            self.batches.append(list(texts))
        if self.fail_on is not None and self.fail_on in texts:
            raise StoreUnavailable(f"the model cannot embed {self.fail_on!r}")
        return self.inner.embed_batch(texts)


def embed_within(embedder: Embedder, texts: list[str], seconds: float = 10) -> Vectors:
    """``embedder.embed_batch(texts)``, made on a daemon thread: a call stuck for good
    (a lane counted busy forever, a dead lane thread) fails the test instead of hanging it."""
    results: list[Vectors] = []
    caller = threading.Thread(
        target=lambda: results.append(embedder.embed_batch(texts)), daemon=True
    )
    caller.start()
    caller.join(timeout=seconds)
    assert not caller.is_alive(), f"embedding {texts!r} did not return in {seconds} s"
    return results[0]
