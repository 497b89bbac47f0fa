"""Injectable clocks, so recency, TTL and eviction are tested without sleeping."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime
from typing import Protocol

__all__ = ["Clock", "ManualClock", "SystemClock", "iso_from_ms"]


class Clock(Protocol):
    """Wall-clock time in seconds since the Unix epoch."""

    def now(self) -> float: ...


class SystemClock:
    """The real wall clock."""

    def now(self) -> float:
        return time.time()


class ManualClock:
    """A clock that moves only when told to; safe to share between threads."""

    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self._now = start
        self._lock = threading.Lock()

    def now(self) -> float:
        with self._lock:
            return self._now

    def advance(self, seconds: float) -> None:
        with self._lock:
            self._now += seconds

    def set(self, now: float) -> None:
        with self._lock:
            self._now = now


def now_ms(clock: Clock) -> int:
    """Milliseconds since the epoch, as JavaScript's ``Date.now()``."""
    return round(clock.now() * 1000)


def iso_from_ms(ms: int) -> str:
    """ISO 8601 UTC with milliseconds and ``Z``, as JavaScript's ``toISOString()``."""
    dt = datetime.fromtimestamp(ms / 1000, tz=UTC)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"
