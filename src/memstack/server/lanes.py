"""LaneEmbedder: the local model's calls made by threads of its own, kept on the model's cores.

``memstack serve`` gives the local model cores of its own (``cores.split_cores``). When
the request thread that collected a batch (``BatchingEmbedder``) made the call, it moved
onto the model's core for the call and back after it, and the next batch waited for the
next collector, a request thread on the busy request core, to wake, collect, move over
and tokenize. In a ``memstack bench server`` run the model's
core sat idle 9% of the time between calls while texts waited.

Here each lane is a thread that stays on the model's cores: it takes whatever texts are
queued when it is free (up to ``max_batch``; one caller's texts are never split), makes
one call of ``inner``, hands every caller its rows, and takes the next batch at once.
Texts that arrive while every lane is busy wait and go in the next call together, so
batches grow with the load. A caller blocks until its rows or the call's error arrive;
its texts are checked before they are queued, so one bad item never fails another
caller's batch. Threads start with the first call and stop at ``close()``.
"""

from __future__ import annotations

import os
import threading
from collections import deque
from collections.abc import Sequence

from memstack.embeddings.base import Embedder, EmbedderWrapper, Vectors, check_texts, rows_of
from memstack.errors import ConfigError, InvalidInput

__all__ = ["LaneEmbedder"]


class _Request:
    """One caller's texts, and its rows or the error of the call that held them."""

    def __init__(self, texts: list[str]) -> None:
        self.texts = texts
        self.rows: Vectors | None = None
        self.error: BaseException | None = None
        self.done = threading.Event()

    def result(self) -> Vectors:
        if self.error is not None:
            raise self.error
        assert self.rows is not None  # done without an error: the rows are set
        return self.rows


class LaneEmbedder(EmbedderWrapper):
    """``inner`` called by ``lanes`` threads of its own, each on ``cores`` (None: wherever
    the process runs), with at most ``max_batch`` texts a call unless one caller brings
    more. Same ``dim`` and ``model_id`` as ``inner``; each caller gets exactly its rows."""

    def __init__(
        self,
        inner: Embedder,
        *,
        lanes: int = 1,
        cores: frozenset[int] | None = None,
        max_batch: int = 64,
    ) -> None:
        for name, value in (("lanes", lanes), ("max_batch", max_batch)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InvalidInput(f"{name} is {value!r}; pass a whole number >= 1.", field=name)
        if cores is not None and not cores:
            raise InvalidInput("cores is empty; pass the cores to run on, or None.", field="cores")
        self.inner = inner
        self.lanes = lanes
        self.cores = cores
        self.max_batch = max_batch
        self._lock = threading.Lock()
        self._queued = threading.Condition(self._lock)
        self._queue: deque[_Request] = deque()
        self._threads: list[threading.Thread] = []
        self._closed = False

    def embed_batch(self, texts: Sequence[str]) -> Vectors:
        items = check_texts(texts)
        if not items:
            return self.inner.embed_batch([])
        request = _Request(items)
        with self._lock:
            if self._closed:
                raise ConfigError("this LaneEmbedder is closed; open the services again.")
            if not self._threads:
                self._start()
            self._queue.append(request)
            self._queued.notify()
        try:
            request.done.wait()
        finally:
            if not request.done.is_set():  # interrupted: nobody wants its texts now
                with self._lock:
                    if request in self._queue:
                        self._queue.remove(request)
        return request.result()

    def close(self) -> None:
        """Stop the lanes once the texts already queued are embedded; idempotent."""
        with self._lock:
            self._closed = True
            self._queued.notify_all()
            threads, self._threads = self._threads, []
        for thread in threads:
            thread.join()

    def _start(self) -> None:
        """The lanes' threads (lock held)."""
        for number in range(self.lanes):
            thread = threading.Thread(
                target=self._lane, name=f"memstack-model-lane-{number}", daemon=True
            )
            thread.start()
            self._threads.append(thread)

    def _lane(self) -> None:
        while (batch := self._next_batch()) is not None:
            if self.cores is not None:
                # Every call: a thread started before ``pin_threads`` moved the process.
                os.sched_setaffinity(0, self.cores)
            self._embed(batch)

    def _next_batch(self) -> list[_Request] | None:
        """The queued callers to embed together, oldest first; None once closed and empty."""
        with self._lock:
            while not self._queue:
                if self._closed:
                    return None
                self._queued.wait()
            batch = [self._queue.popleft()]
            count = len(batch[0].texts)
            while self._queue and count + len(self._queue[0].texts) <= self.max_batch:
                count += len(self._queue[0].texts)
                batch.append(self._queue.popleft())
            return batch

    def _embed(self, batch: list[_Request]) -> None:
        """One call of ``inner`` over the batch; its rows, or its error, to every caller.
        The lane lives on whatever the call raises."""
        texts = [text for request in batch for text in request.texts]
        try:
            vectors = rows_of(self.inner, texts)
        except BaseException as exc:
            for request in batch:
                request.error = exc
                request.done.set()
            return
        offset = 0
        for request in batch:
            request.rows = vectors[offset : offset + len(request.texts)]
            offset += len(request.texts)
            request.done.set()
