"""``Ahead``: one piece of work that may start early on a helper thread, and
``IdleHelper``, a one-thread executor whose thread ends when it has nothing to do.

``Ahead.start()`` hands the work to an executor; ``result()`` returns its value, running
it in the caller's thread when no helper has begun it yet (claim or run), so a full or
shut-down executor delays nothing and can never deadlock a caller. The work runs
exactly once.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import Executor, Future
from functools import partial
from typing import Any, Generic, TypeVar, cast

__all__ = ["Ahead", "IdleHelper"]

T = TypeVar("T")


class Ahead(Generic[T]):
    def __init__(self, work: Callable[[], T], executor: Executor) -> None:
        self._work = work
        self._executor = executor
        self._lock = threading.Lock()
        self._submitted = False
        self._claimed = False
        self._done = threading.Event()
        self._value: T | None = None
        self._error: BaseException | None = None

    def start(self) -> None:
        """Let a helper thread begin the work (once; later calls do nothing)."""
        with self._lock:
            if self._submitted or self._claimed:
                return
            self._submitted = True
        try:
            self._executor.submit(self._by_helper)
        except RuntimeError:  # shut down: result() runs it
            pass

    def result(self) -> T:
        """The work's value (or its exception), run here if no helper has begun it."""
        if self._claim():
            self._run()
        else:
            self._done.wait()
        if self._error is not None:
            raise self._error
        return cast(T, self._value)  # set by _run, which succeeded

    def _by_helper(self) -> None:
        if self._claim():
            self._run()

    def _claim(self) -> bool:
        with self._lock:
            claimed, self._claimed = self._claimed, True
            return not claimed

    def _run(self) -> None:
        try:
            self._value = self._work()
        except BaseException as exc:  # handed to the caller of result()
            self._error = exc
        finally:
            self._done.set()


class IdleHelper(Executor):
    """One worker thread, started on demand, that ends after ``idle_s`` seconds without
    work: an object that keeps a helper (``LongTermMemory``) holds no thread while it is
    not used, so a process may keep thousands of them. The thread is a daemon: what it
    runs must be safe to abandon at exit (``Ahead`` work is: a caller that still needs it
    runs it itself)."""

    def __init__(self, *, name: str, idle_s: float = 30.0) -> None:
        self._name = name
        self._idle_s = idle_s
        self._lock = threading.Lock()
        self._work = threading.Condition(self._lock)
        self._queue: deque[tuple[Future[Any], Callable[[], Any]]] = deque()
        self._thread: threading.Thread | None = None
        self._closed = False

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        future: Future[T] = Future()
        with self._lock:
            if self._closed:
                raise RuntimeError("cannot schedule new futures after shutdown")
            self._queue.append((future, partial(fn, *args, **kwargs)))
            if self._thread is None:
                self._thread = threading.Thread(target=self._serve, name=self._name, daemon=True)
                self._thread.start()
            else:
                self._work.notify()
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        with self._lock:
            self._closed = True
            if cancel_futures:
                for future, _ in self._queue:
                    future.cancel()
                self._queue.clear()
            self._work.notify_all()
            thread = self._thread
        if wait and thread is not None and thread is not threading.current_thread():
            thread.join()

    @property
    def running(self) -> bool:
        """Whether its thread is alive now."""
        with self._lock:
            return self._thread is not None

    def _serve(self) -> None:
        while True:
            with self._lock:
                while not self._queue and not self._closed and self._work.wait(self._idle_s):
                    pass  # woken: look at the queue again
                if not self._queue:  # idle too long, or shut down: end
                    self._thread = None
                    return
                future, call = self._queue.popleft()
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(call())
                except BaseException as exc:  # handed to the future's owner
                    future.set_exception(exc)
