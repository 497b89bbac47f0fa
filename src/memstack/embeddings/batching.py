"""BatchingEmbedder: concurrent ``embed_batch`` calls merged into calls of the inner embedder,
made by threads of its own.

A server embeds one short query per request, from many threads at once. One model call
over 20 texts costs far less than 20 calls over one text each, and the local model's
calls compete for the machine's cores with the request threads. So callers only queue
their texts and wait; the calls are made by ``max_running`` lane threads. A free lane
takes whatever texts are queued (up to ``max_batch``; one caller's texts are never
split), makes one call of ``inner``, hands every caller in it its rows, and takes the
next batch at once. Texts that arrive while every lane is busy wait and go in the next
call together, so batches grow with the load while the calls stay few; a lane never
waits on purpose for company, so a lone text costs no added delay. A caller blocks
until its rows or the call's error arrive; its texts are checked before they are queued,
so one bad item never fails another caller's batch. Threads start with the first call
and stop at ``close()``.

With ``cores``, each lane keeps to those cores (``memstack serve --pin-cores`` gives the
local model cores of its own: ``cores.split_cores``), and tokenizes there too, so the
request threads neither move between cores nor wake on the model's. With
``spill_cores`` (the request cores), one more thread, the spill lane, runs there at the
lowest priority the platform offers an unprivileged thread (``SCHED_IDLE`` on Linux):
while every lane is in a call and texts wait, it takes up to ``spill_batch`` of them and
embeds them in the request cores' idle time. The request threads never wait for it: any
runnable one takes the core first. Its callers do wait for it, which raises the tail
latency, so it takes few texts, and only when the lanes could not have taken them.
"""

from __future__ import annotations

import os
import threading
from collections import deque
from collections.abc import Sequence

from memstack._counts import check_whole
from memstack.embeddings.base import Embedder, EmbedderWrapper, Vectors, check_texts, rows_of
from memstack.errors import ConfigError, InvalidInput

__all__ = ["BatchingEmbedder"]


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


class BatchingEmbedder(EmbedderWrapper):
    """``inner`` called by ``max_running`` threads of its own, each on ``cores`` (None:
    wherever the process runs), with at most ``max_batch`` texts a call unless one caller
    brings more; ``spill_cores`` adds a spill lane there. Same ``dim`` and ``model_id``
    as ``inner``; each caller gets exactly its rows."""

    def __init__(
        self,
        inner: Embedder,
        *,
        max_running: int = 1,
        max_batch: int = 64,
        cores: frozenset[int] | None = None,
        spill_cores: frozenset[int] | None = None,
        spill_batch: int = 2,
    ) -> None:
        _check_arguments(max_running, max_batch, cores, spill_cores, spill_batch)
        self.inner = inner
        self.max_running = max_running
        self.max_batch = max_batch
        self.cores = cores
        self.spill_cores = spill_cores
        self.spill_batch = spill_batch
        self._lock = threading.Lock()
        self._queued = threading.Condition(self._lock)
        self._spill_wanted = threading.Condition(self._lock)
        self._busy = 0  # lanes inside a call
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
                raise ConfigError("this BatchingEmbedder is closed; open the services again.")
            if not self._threads:
                self._start()
            self._queue.append(request)
            self._queued.notify()
            self._wake_spill()
        try:
            request.done.wait()
        finally:
            if not request.done.is_set():  # interrupted: nobody wants its texts now
                with self._lock:
                    if request in self._queue:
                        self._queue.remove(request)
        return request.result()

    def queued(self) -> int:
        """Texts waiting for a lane now (the server's ``/metrics`` queue depth)."""
        with self._lock:
            return sum(len(request.texts) for request in self._queue)

    def close(self) -> None:
        """Stop the lanes once the texts already queued are embedded; idempotent."""
        with self._lock:
            self._closed = True
            self._queued.notify_all()
            self._spill_wanted.notify_all()
            threads, self._threads = self._threads, []
        for thread in threads:
            thread.join()

    def _start(self) -> None:
        """The lanes' threads (lock held)."""
        for number in range(self.max_running):
            thread = threading.Thread(
                target=self._lane, name=f"memstack-model-lane-{number}", daemon=True
            )
            thread.start()
            self._threads.append(thread)
        if self.spill_cores is not None:
            thread = threading.Thread(target=self._spill, name="memstack-model-spill", daemon=True)
            thread.start()
            self._threads.append(thread)

    def _lane(self) -> None:
        while (batch := self._next_batch()) is not None:
            # Every call: a thread started before ``pin_threads`` moved the process.
            _pin(self.cores)
            self._embed(batch, lane=True)

    def _spill(self) -> None:
        _lowest_priority()
        while (batch := self._next_spill()) is not None:
            _pin(self.spill_cores)
            self._embed(batch, lane=False)

    def _next_batch(self) -> list[_Request] | None:
        """The queued callers to embed together, oldest first; None once closed and empty.
        The lane counts as busy from here until its call ends."""
        with self._lock:
            while not self._queue:
                if self._closed:
                    return None
                self._queued.wait()
            self._busy += 1
            batch = self._take(self.max_batch)
            self._wake_spill()
            return batch

    def _next_spill(self) -> list[_Request] | None:
        """At most ``spill_batch`` texts' callers, once every lane is busy and texts
        wait; None once closed (the lanes embed what is left)."""
        with self._lock:
            while not (self._queue and self._busy >= self.max_running):
                if self._closed:
                    return None
                self._spill_wanted.wait()
            return self._take(self.spill_batch)

    def _take(self, most: int) -> list[_Request]:
        """The oldest queued callers, up to ``most`` texts (at least one caller; lock held)."""
        batch = [self._queue.popleft()]
        count = len(batch[0].texts)
        while self._queue and count + len(self._queue[0].texts) <= most:
            count += len(self._queue[0].texts)
            batch.append(self._queue.popleft())
        return batch

    def _wake_spill(self) -> None:
        """Wake the spill lane if texts wait while every lane is busy (lock held)."""
        if self.spill_cores is not None and self._queue and self._busy >= self.max_running:
            self._spill_wanted.notify()

    def _embed(self, batch: list[_Request], *, lane: bool) -> None:
        """One call of ``inner`` over the batch; its rows, or its error, to every caller.
        A ``lane`` counts as free again before its callers are answered. The thread lives
        on whatever the call raises."""
        texts = [text for request in batch for text in request.texts]
        error: BaseException | None = None
        try:
            vectors = rows_of(self.inner, texts)
        except BaseException as exc:
            error = exc
        finally:
            if lane:
                with self._lock:
                    self._busy -= 1
        offset = 0
        for request in batch:
            if error is not None:
                request.error = error
            else:
                request.rows = vectors[offset : offset + len(request.texts)]
                offset += len(request.texts)
            request.done.set()


def _check_arguments(
    max_running: int,
    max_batch: int,
    cores: frozenset[int] | None,
    spill_cores: frozenset[int] | None,
    spill_batch: int,
) -> None:
    for name, value in (
        ("max_running", max_running),
        ("max_batch", max_batch),
        ("spill_batch", spill_batch),
    ):
        check_whole(value, name)
    if cores is not None and not cores:
        raise InvalidInput("cores is empty; pass the cores to run on, or None.", field="cores")
    if spill_cores is not None and not spill_cores:
        raise InvalidInput(
            "spill_cores is empty; pass the cores to spill onto, or None for no spill lane.",
            field="spill_cores",
        )
    if (cores is not None or spill_cores is not None) and not hasattr(os, "sched_setaffinity"):
        raise ConfigError(
            "this platform cannot keep threads on given cores (no os.sched_setaffinity); "
            "pass cores=None and spill_cores=None."
        )


def _pin(cores: frozenset[int] | None) -> None:
    """This thread onto ``cores`` (None: left where it is). A set the process may no
    longer use (its container's cores changed) leaves it where it is: the call still runs."""
    if cores is not None:
        try:
            os.sched_setaffinity(0, cores)
        except OSError:
            pass


def _lowest_priority() -> None:
    """This thread at the lowest priority an unprivileged thread may take: ``SCHED_IDLE``
    (it runs only when its cores have nothing else to run; the scheduler still gives it a
    sliver of a busy core, so what it holds is embedded in the end), else nice 19. Linux,
    where a spill lane runs (it needs ``sched_setaffinity``): there both apply to the
    calling thread only."""
    try:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    except (AttributeError, OSError):
        try:
            os.setpriority(os.PRIO_PROCESS, 0, 19)
        except (AttributeError, OSError):
            pass
