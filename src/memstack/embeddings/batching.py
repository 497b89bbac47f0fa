"""BatchingEmbedder: concurrent ``embed_batch`` calls merged into one call of the inner embedder.

A server embeds one short query per request, from many threads at once. One model call
over 20 texts costs far less than 20 calls over one text each, so callers queue their
texts and the callers themselves run the merged calls: there is no thread of its own.

A waiting caller with texts still queued becomes the collector when there is none. It
waits until ``max_batch`` texts are queued or the oldest queued caller has waited
``max_wait_ms``, takes up to ``max_batch`` texts off the front of the queue (a caller's
texts beyond that stay queued for the next batch) and steps down, so the next batch
can be collected while this one runs. It then runs the inner call without the lock
held and hands every caller in the batch its rows, or the inner call's error. Each
caller loops until its own texts are done, collecting and running batches as needed.
Inner calls may overlap (the local model runs concurrent calls on separate cores), up
to ``max_running`` at once: with a limit, texts that arrive while every lane is busy
wait for one to free and then go in one batch, so batches grow with the load instead of
the calls multiplying. Each caller's texts are checked before they are queued, so one
bad item never fails another caller's batch.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from memstack._counts import check_whole
from memstack.embeddings.base import Embedder, EmbedderWrapper, Vectors, check_texts, rows_of
from memstack.errors import InvalidInput

__all__ = ["BatchingEmbedder"]


class _Request:
    """One caller's texts: how many are handed to batches, their rows, or the error."""

    def __init__(self, texts: list[str], arrived: float) -> None:
        self.texts = texts
        self.arrived = arrived
        self.taken = 0
        self.rows: Vectors | None = None
        self.filled = 0
        self.error: BaseException | None = None

    @property
    def waiting(self) -> bool:
        """Some of its texts are still queued."""
        return self.taken < len(self.texts)

    @property
    def done(self) -> bool:
        return self.error is not None or self.filled == len(self.texts)

    def fill(self, start: int, vectors: Vectors) -> None:
        if self.rows is None:
            self.rows = np.empty((len(self.texts), vectors.shape[1]), dtype=np.float32)
        self.rows[start : start + len(vectors)] = vectors
        self.filled += len(vectors)

    def result(self) -> Vectors:
        if self.error is not None:
            raise self.error
        assert self.rows is not None  # done and no error: every row is filled
        return self.rows


@dataclass(frozen=True, kw_only=True)
class _Slice:
    request: _Request
    start: int
    stop: int


class BatchingEmbedder(EmbedderWrapper):
    """Merges concurrent ``embed_batch`` calls into calls of ``inner`` of at most
    ``max_batch`` texts; a caller waits at most ``max_wait_ms`` for others to join, and
    at most ``max_running`` inner calls run at once (None: no limit).

    Same ``dim`` and ``model_id`` as ``inner``; each caller gets exactly its own rows.
    """

    def __init__(
        self,
        inner: Embedder,
        *,
        max_wait_ms: float = 3.0,
        max_batch: int = 64,
        max_running: int | None = None,
    ) -> None:
        if (
            isinstance(max_wait_ms, bool)
            or not isinstance(max_wait_ms, int | float)
            or not max_wait_ms >= 0  # also refuses NaN
        ):
            raise InvalidInput(
                f"max_wait_ms is {max_wait_ms!r}; pass a number of milliseconds >= 0.",
                field="max_wait_ms",
            )
        check_whole(max_batch, "max_batch")
        if max_running is not None and (
            isinstance(max_running, bool) or not isinstance(max_running, int) or max_running < 1
        ):
            raise InvalidInput(
                f"max_running is {max_running!r}; pass a whole number >= 1, or None for no limit.",
                field="max_running",
            )
        self.inner = inner
        self.max_wait_ms = float(max_wait_ms)
        self.max_batch = max_batch
        self.max_running = max_running
        self._lock = threading.Lock()
        self._arrivals = threading.Condition(self._lock)  # the collector waits for company
        self._progress = threading.Condition(self._lock)  # the others wait for their rows
        self._pending: deque[_Request] = deque()
        self._queued = 0  # texts in _pending not yet handed to a batch
        self._collecting = False
        self._running = 0  # inner calls taken and not yet finished

    def embed_batch(self, texts: Sequence[str]) -> Vectors:
        items = check_texts(texts)
        if not items:
            return self.inner.embed_batch([])
        request = _Request(items, time.monotonic())
        with self._lock:
            self._pending.append(request)
            self._queued += len(items)
            self._arrivals.notify()
        try:
            while (batch := self._next_batch(request)) is not None:
                self._run(batch)
        finally:
            if not request.done:  # interrupted: its queued texts are nobody's now
                with self._lock:
                    self._drop(request)
        return request.result()

    def _next_batch(self, request: _Request) -> list[_Slice] | None:
        """A batch for this caller to run, or None once its own texts are done."""
        with self._lock:
            while not request.done:
                if request.waiting and not self._collecting and self._lane_free():
                    self._collecting = True
                    try:
                        batch = self._take_batch()
                        self._running += 1
                        return batch
                    finally:
                        self._collecting = False
                        self._progress.notify_all()  # another caller may collect the next
                self._progress.wait()
            return None

    def _lane_free(self) -> bool:
        """Another inner call may start (lock held)."""
        return self.max_running is None or self._running < self.max_running

    def _take_batch(self) -> list[_Slice]:
        """Up to ``max_batch`` texts off the front of the queue, once it is full or old enough.

        Called with the lock held.
        """
        deadline = self._pending[0].arrived + self.max_wait_ms / 1000
        while self._queued < self.max_batch:
            delay = deadline - time.monotonic()
            if delay <= 0:
                break
            self._arrivals.wait(delay)
        batch: list[_Slice] = []
        room = self.max_batch
        while room and self._pending:
            request = self._pending[0]
            count = min(room, len(request.texts) - request.taken)
            batch.append(_Slice(request=request, start=request.taken, stop=request.taken + count))
            request.taken += count
            room -= count
            self._queued -= count
            if request.taken == len(request.texts):
                self._pending.popleft()
        return batch

    def _run(self, batch: list[_Slice]) -> None:
        """One inner call over ``batch``; its rows, or its error, go to every caller in it.
        Its lane is free again when it returns, however it ends."""
        try:
            self._embed(batch)
        finally:
            with self._lock:
                self._running -= 1
                self._progress.notify_all()  # a caller may collect for the freed lane

    def _embed(self, batch: list[_Slice]) -> None:
        texts = [text for s in batch for text in s.request.texts[s.start : s.stop]]
        try:
            vectors = rows_of(self.inner, texts)
        except Exception as exc:
            self._fail(batch, exc)
            return
        except BaseException as exc:  # KeyboardInterrupt and the like stop this caller too
            self._fail(batch, exc)
            raise
        with self._lock:
            offset = 0
            for s in batch:
                count = s.stop - s.start
                s.request.fill(s.start, vectors[offset : offset + count])
                offset += count
            self._progress.notify_all()

    def _fail(self, batch: list[_Slice], error: BaseException) -> None:
        with self._lock:
            for s in batch:
                request = s.request
                if request.error is None:
                    request.error = error
                    self._drop(request)
            self._progress.notify_all()

    def _drop(self, request: _Request) -> None:
        """Take the texts of ``request`` not yet in a batch off the queue (lock held)."""
        if request.taken < len(request.texts):
            self._pending.remove(request)
            self._queued -= len(request.texts) - request.taken
            request.taken = len(request.texts)
