"""A server over SQLite with the hash embedder, two tenants' keys, and clients for it."""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import uvicorn

from memstack.embeddings import HashEmbedder
from memstack.transports.app import create_app
from memstack.wiring import Services, open_services


@dataclass
class Keys:
    acme: str
    other: str
    acme_bot_only: str


@pytest.fixture
def services(tmp_path: Path) -> Iterator[Services]:
    services = open_services(
        store_url=f"sqlite:///{tmp_path / 'server.db'}", redis_url=None, embedder=HashEmbedder()
    )
    yield services
    services.close()


def make_keys(services: Services) -> Keys:
    """Keys of two tenants, and one of acme's limited to the agent ``bot``."""
    return Keys(
        acme=services.keys.create(tenant="acme")[0],
        other=services.keys.create(tenant="other")[0],
        acme_bot_only=services.keys.create(tenant="acme", agents=["bot"])[0],
    )


@pytest.fixture
def keys(services: Services) -> Keys:
    return make_keys(services)


@pytest.fixture
async def api(services: Services) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(services, max_body_bytes=64_000)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://memstack.test") as client:
        yield client


def auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@dataclass
class LiveServer:
    url: str
    server: uvicorn.Server
    thread: threading.Thread


def serve_in_thread(services: Services) -> LiveServer:
    """A real uvicorn server on a free loopback port, in a thread."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    config = uvicorn.Config(create_app(services), host="127.0.0.1", port=port, log_level="warning")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the test server did not start")
        time.sleep(0.02)
    return LiveServer(url=f"http://127.0.0.1:{port}", server=server, thread=thread)


@pytest.fixture
def live(services: Services) -> Iterator[LiveServer]:
    running = serve_in_thread(services)
    yield running
    running.server.should_exit = True
    running.thread.join(timeout=10)


@pytest.fixture
def two_cores() -> Iterator[None]:
    """Two cores for a test of core pinning, whatever core set the run started with.

    Pinning splits the cores this process may use; under ``taskset -c 0`` there is
    nothing to split. A process may widen its own core set within its cpuset, so the
    test's thread takes every online core (threads it starts inherit them) and gets its
    own set back afterwards. A machine with one core cannot run the pinning at all."""
    before = os.sched_getaffinity(0)
    if len(before) < 2:
        os.sched_setaffinity(0, range(os.cpu_count() or 1))
    assert len(os.sched_getaffinity(0)) >= 2, "core pinning needs a machine with two cores"
    yield
    os.sched_setaffinity(0, before)
