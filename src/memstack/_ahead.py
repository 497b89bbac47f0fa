"""``Ahead``: one piece of work that may start early on a helper thread.

``start()`` hands it to an executor; ``result()`` returns its value, running it in the
caller's thread when no helper has begun it yet (claim or run), so a full or shut-down
executor delays nothing and can never deadlock a caller. The work runs exactly once.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Executor
from typing import Generic, TypeVar, cast

__all__ = ["Ahead"]

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
