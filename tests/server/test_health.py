"""``/healthz`` and its probes: one at a time, remembered a second, bounded in time.

(PostgreSQL down: ``tests/reliability/test_postgres_outage.py``.)"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from memstack.embeddings import HashEmbedder
from memstack.errors import StoreUnavailable
from memstack.transports.app import create_app
from memstack.transports.rest.health import TierProbe
from memstack.wiring import Services, open_services
from tests.servers import free_port


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Ping:
    """A tier's ping that counts its calls, each held until ``release`` (or a timeout)."""

    def __init__(self, *, fails: bool = False) -> None:
        self.calls = 0
        self.fails = fails
        self.gate = threading.Event()

    def __call__(self) -> None:
        self.calls += 1
        self.gate.wait(timeout=10)
        if self.fails:
            raise StoreUnavailable("the tier is down")


async def test_concurrent_requests_share_one_probe_and_its_answer_for_ttl() -> None:
    ping, clock = Ping(), Clock()
    probe = TierProbe(ping, ttl=1.0, clock=clock)
    asked = [asyncio.create_task(probe.state()) for _ in range(20)]
    await asyncio.sleep(0.05)
    ping.gate.set()
    assert await asyncio.gather(*asked) == ["up"] * 20
    assert ping.calls == 1
    clock.now += 0.9
    assert await probe.state() == "up"
    assert ping.calls == 1  # remembered
    clock.now += 0.2
    ping.fails = True
    assert await probe.state() == "down"
    assert ping.calls == 2


async def test_a_probe_that_does_not_answer_is_down_within_its_wait() -> None:
    ping = Ping()  # held until the end of the test
    probe = TierProbe(ping, ttl=1.0, wait=0.2)
    try:
        started = time.monotonic()
        assert list(await asyncio.gather(probe.state(), probe.state())) == ["down", "down"]
        assert time.monotonic() - started < 2.0
        assert await probe.state() == "down"
        assert ping.calls == 1  # still the one probe: none piled up behind it
    finally:
        ping.gate.set()


@pytest.fixture
def dead_redis(tmp_path: Path) -> Iterator[Services]:
    """Services whose Redis refuses every connection (nothing listens on its port)."""
    built = open_services(
        store_url=f"sqlite:///{tmp_path / 'health.db'}",
        redis_url=f"redis://127.0.0.1:{free_port()}/0",
        embedder=HashEmbedder(),
    )
    yield built
    built.close()


async def test_redis_down_is_reported_while_the_server_serves(dead_redis: Services) -> None:
    key = dead_redis.keys.create(tenant="acme")[0]
    transport = httpx.ASGITransport(app=create_app(dead_redis))
    async with httpx.AsyncClient(transport=transport, base_url="http://memstack.test") as api:
        health = await api.get("/healthz")
        stored = await api.post(
            "/api/memories",
            json={"agent_id": "bot", "key": "k", "value": "v"},
            headers={"Authorization": f"Bearer {key}"},
        )
    assert health.status_code == 200
    assert health.json() == {"status": "ok", "long_term": "up", "short_term": "down"}
    assert stored.status_code == 201, stored.text  # served from the long-term tier


async def test_a_live_redis_is_up(tmp_path: Path, redis_url: str) -> None:
    services = open_services(
        store_url=f"sqlite:///{tmp_path / 'health.db'}",
        redis_url=redis_url,
        embedder=HashEmbedder(),
    )
    try:
        transport = httpx.ASGITransport(app=create_app(services))
        async with httpx.AsyncClient(transport=transport, base_url="http://memstack.test") as api:
            health = await api.get("/healthz")
    finally:
        services.close()
    assert health.json() == {"status": "ok", "long_term": "up", "short_term": "up"}
