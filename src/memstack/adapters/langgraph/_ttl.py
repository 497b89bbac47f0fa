"""The TTL sweeper LangGraph's SQLite and PostgreSQL stores run: a thread that deletes
expired items every few minutes.

Reads never return an expired item, so sweeping only frees the space; a sweep that fails
is logged and the next one tries again, as in LangGraph (a background thread has no
caller to raise to).
"""

from __future__ import annotations

import concurrent.futures
import logging
import threading
from collections.abc import Callable

__all__ = ["Sweeper"]

log = logging.getLogger(__name__)

DEFAULT_INTERVAL_MINUTES = 5.0
"""LangGraph's default when neither the call nor the TTL config gives an interval."""


class Sweeper:
    """Runs ``sweep`` every ``interval`` minutes on a daemon thread until stopped."""

    def __init__(self, sweep: Callable[[], int]) -> None:
        self._sweep = sweep
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, interval_minutes: float) -> concurrent.futures.Future[None]:
        """A future that completes when the sweeper stops; cancelling it stops it."""
        future: concurrent.futures.Future[None] = concurrent.futures.Future()
        future.add_done_callback(lambda f: self._stop.set() if f.cancelled() else None)
        if self._thread is not None and self._thread.is_alive():
            return future
        self._stop.clear()
        thread = threading.Thread(
            target=self._loop,
            args=(interval_minutes * 60.0, future),
            daemon=True,
            name="memstack-lg-ttl-sweeper",
        )
        self._thread = thread
        thread.start()
        return future

    def stop(self, timeout: float | None = None) -> bool:
        """True once the thread has stopped (or was not running), False on timeout."""
        thread = self._thread
        if thread is None or not thread.is_alive():
            return True
        self._stop.set()
        thread.join(timeout)
        if thread.is_alive():
            return False
        self._thread = None
        return True

    def _loop(self, seconds: float, future: concurrent.futures.Future[None]) -> None:
        while not self._stop.wait(seconds):
            try:
                self._sweep()
            except Exception:
                log.exception("the LangGraph store's TTL sweep failed; retrying next interval")
        if future.set_running_or_notify_cancel():
            future.set_result(None)
