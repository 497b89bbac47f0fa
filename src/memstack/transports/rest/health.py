"""``/healthz``: the state of each tier, each probed once at a time, at most once a second.

A tier is probed with its ``ping`` (``RecordStore.ping``, ``ShortTermTier.ping``): a
blocking call that raises ``StoreUnavailable`` when the tier is down, run on a worker
thread. However many ``/healthz`` requests arrive, one probe per tier runs at a time and
its answer serves every request for ``PROBE_TTL_S``; a request waits at most
``PROBE_WAIT_S`` for it (a tier that has not answered by then is ``down``). So a load
balancer polling every worker, or a crowd of clients during an outage, cannot pile probes
(and threads) up behind a tier that is down, and ``/healthz`` answers within about a
second whatever the tiers do.

The long-term tier decides the answer (``Health``): without it nothing can be served, so
``/healthz`` answers 503 with ``status: degraded``. The short-term tier is a cache of the
long-term one (DESIGN.md, "Scale-out"): while Redis is down every request is still served
from the long-term tier, so it shows ``short_term: down`` and the status stays ``ok`` (a
load balancer that took every server out of rotation for it would turn a slower service
into none).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Final

from memstack.errors import StoreUnavailable
from memstack.service.stm import InProcessTier
from memstack.transports.schemas import Health, TierState
from memstack.wiring import Services

__all__ = ["PROBE_TTL_S", "PROBE_WAIT_S", "HealthCheck", "TierProbe"]

PROBE_TTL_S: Final = 1.0
"""How long a probe's answer serves ``/healthz`` requests before the tier is probed again."""
PROBE_WAIT_S: Final = 1.5
"""How long a ``/healthz`` request waits for a probe (PostgreSQL's own bound is
``storage.postgres.PING_TIMEOUT_S``, 1 s; a Redis that does not answer holds its
probe for its socket timeout, 2 s)."""


class TierProbe:
    """One tier's state from ``ping``, at most one probe running at a time, its answer
    kept for ``ttl`` seconds (``clock``: monotonic seconds)."""

    def __init__(
        self,
        ping: Callable[[], None],
        *,
        ttl: float = PROBE_TTL_S,
        wait: float = PROBE_WAIT_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._ping = ping
        self._ttl = ttl
        self._wait = wait
        self._clock = clock
        self._known: tuple[float, TierState] | None = None
        self._running: asyncio.Task[TierState] | None = None

    async def state(self) -> TierState:
        known = self._known
        if known is not None and 0 <= self._clock() - known[0] < self._ttl:
            return known[1]
        task = self._running
        if task is None or task.done() or task.get_loop() is not asyncio.get_running_loop():
            task = self._running = asyncio.create_task(self._probe())
        try:  # shielded: a request that gives up leaves the probe to the others
            return await asyncio.wait_for(asyncio.shield(task), self._wait)
        except TimeoutError:
            return "down"

    async def _probe(self) -> TierState:
        state: TierState = "up"
        try:
            await asyncio.to_thread(self._ping)
        except StoreUnavailable:
            state = "down"
        self._known = (self._clock(), state)
        return state


class HealthCheck:
    """``/healthz``'s answer for ``services``: both tiers probed together."""

    def __init__(self, services: Services) -> None:
        self._long_term = TierProbe(lambda: services.records.ping())
        self._short_term = TierProbe(lambda: services.short_term.ping())
        self._in_process = isinstance(services.short_term, InProcessTier)

    async def health(self) -> Health:
        long_term, short_term = await asyncio.gather(
            self._long_term.state(), self._short_term.state()
        )
        return Health(
            status="ok" if long_term == "up" else "degraded",
            long_term=long_term,
            short_term="in-process" if self._in_process and short_term == "up" else short_term,
        )
