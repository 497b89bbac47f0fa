"""A recall's query embedding, computed beside the keyword search that does not need it.

``LongTermMemory.recall`` starts the embedding as its own executor job and runs the
recall in another; the recall gathers its keyword candidates, then asks for the vector
(on LoCoMo this hid 0.8 ms of a 9 ms recall). Whichever thread asks first computes it:
when the executor has not started the job yet (every worker busy), the recall embeds
the query itself instead of waiting for work still queued, so no executor, however
small or busy, can leave a recall waiting forever.
"""

from __future__ import annotations

import threading
from concurrent.futures import Future

from memstack.embeddings import Embedder
from memstack.storage import Vector

__all__ = ["QueryVector"]


class QueryVector:
    """The embedding of ``text`` by ``embedder``, computed once, by the first caller of
    ``compute`` or ``result``."""

    def __init__(self, embedder: Embedder, text: str) -> None:
        self._embedder = embedder
        self._text = text
        self._lock = threading.Lock()
        self._claimed = False
        self._vector: Future[Vector] = Future()

    def compute(self) -> None:
        """Embed the text unless another thread has started to; never raises (a failure
        is what ``result`` raises)."""
        with self._lock:
            if self._claimed:
                return
            self._claimed = True
        try:
            self._vector.set_result(self._embedder.embed_batch([self._text])[0])
        except BaseException as exc:  # handed to whoever waits for the vector
            self._vector.set_exception(exc)

    def result(self) -> Vector:
        """The vector: computed here if no thread has started it, else waited for."""
        self.compute()
        return self._vector.result()
