"""``GET /metrics``: Prometheus's text format, read back by prometheus_client's own parser:
requests by route template and status, latencies, tier health, queue depths, and who may
read it."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import httpx
import pytest
from prometheus_client.exposition import generate_latest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

from memstack.embeddings import BatchingEmbedder, HashEmbedder, Vectors
from memstack.embeddings.base import EmbedderWrapper
from memstack.settings import ServerSettings
from memstack.transports.app import create_app
from memstack.transports.rest.metrics import ServerMetrics
from memstack.wiring import Services, open_services
from tests.server.conftest import Keys, LiveServer, auth
from tests.server.indexing import GatedEmbedder, prose
from tests.servers import free_port

WAIT_S = 30.0
"""A safety bound on waiting for a queue to fill, not a speed requirement."""


def samples(text: str) -> list[Sample]:
    return [s for family in text_string_to_metric_families(text) for s in family.samples]


def value(text: str, name: str, **labels: str) -> float:
    found = [s.value for s in samples(text) if s.name == name and s.labels == labels]
    assert len(found) == 1, (name, labels, found)
    return found[0]


async def scrape(api: httpx.AsyncClient) -> str:
    response = await api.get("/metrics")
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
    return response.text


async def test_requests_are_counted_by_route_template_and_status(api: httpx.AsyncClient, keys):
    stored = await api.post(
        "/api/memories", json={"agent_id": "bot", "key": "k", "value": "v"}, headers=auth(keys.acme)
    )
    assert stored.status_code == 201  # answered by hot_routes, outside FastAPI's routing
    memory_id = stored.json()["id"]
    assert (await api.get(f"/api/memories/{memory_id}", headers=auth(keys.acme))).is_success
    assert (await api.get("/api/memories/mem_nope", headers=auth(keys.acme))).status_code == 404
    assert (await api.get("/no/such/path")).status_code == 404
    assert (await api.request("BREW", "/healthz")).status_code == 405
    users = await api.get("/api/users/u1/memories", headers=auth(keys.acme))  # a nested router
    assert (await api.get("/ui/inspector.js")).status_code == 200
    text = await scrape(api)
    requests = "memstack_http_requests_total"
    one_memory = "/api/memories/{memory_id}"
    assert value(text, requests, method="POST", route="/api/memories", status="201") == 1
    assert value(text, requests, method="GET", route=one_memory, status="200") == 1
    assert value(text, requests, method="GET", route=one_memory, status="404") == 1
    assert value(text, requests, method="GET", route="unmatched", status="404") == 1
    assert value(text, requests, method="other", route="/healthz", status="405") == 1
    user_memories = {"method": "GET", "route": "/api/users/{user_id}/memories"}
    assert value(text, requests, **user_memories, status=str(users.status_code)) == 1
    assert value(text, requests, method="GET", route="/ui/{name}", status="200") == 1
    assert memory_id not in text and "mem_nope" not in text and "/no/such" not in text
    latency = "memstack_http_request_duration_seconds"
    post = {"method": "POST", "route": "/api/memories"}
    assert value(text, f"{latency}_count", **post) == 1
    buckets = [
        s
        for s in samples(text)
        if s.name == f"{latency}_bucket" and {k: s.labels[k] for k in post} == post
    ]
    counts = [s.value for s in sorted(buckets, key=lambda s: float(s.labels["le"]))]
    assert counts == sorted(counts) and counts[-1] == 1  # cumulative, +Inf holds them all
    assert value(text, "memstack_http_requests_in_progress") == 1  # the scrape itself
    second = await scrape(api)
    assert value(second, requests, method="GET", route="/metrics", status="200") == 1


async def test_bodies_refused_before_routing_are_counted(api: httpx.AsyncClient, keys: Keys):
    over = b"x" * 100_000  # over the fixture's 64 kB limit: a 413 before any route runs
    for path in ("/api/memories", "/api/knowledge/search"):
        refused = await api.post(path, content=over, headers=auth(keys.acme))
        assert refused.status_code == 413, refused.text
    text = await scrape(api)
    requests = "memstack_http_requests_total"
    assert value(text, requests, method="POST", route="/api/memories", status="413") == 1
    assert value(text, requests, method="POST", route="unmatched", status="413") == 1
    assert "/api/knowledge/search" not in text


async def test_a_series_is_counted_on_every_request():
    metrics = ServerMetrics()
    for seconds in (0.002, 0.2):
        metrics.observe("GET", "/healthz", 200, seconds)
    metrics.observe("GET", "/healthz", 503, 0.002)
    text = generate_latest(metrics.registry).decode()
    requests = "memstack_http_requests_total"
    assert value(text, requests, method="GET", route="/healthz", status="200") == 2
    assert value(text, requests, method="GET", route="/healthz", status="503") == 1
    latency = "memstack_http_request_duration_seconds"
    assert value(text, f"{latency}_count", method="GET", route="/healthz") == 3
    assert value(text, f"{latency}_bucket", method="GET", route="/healthz", le="0.01") == 2


async def test_tier_health_follows_the_probes(tmp_path: Path, redis_url: str):
    for url, short_term in ((redis_url, 1.0), (f"redis://127.0.0.1:{free_port()}/0", 0.0)):
        services = open_services(
            store_url=f"sqlite:///{tmp_path / 'tiers.db'}", redis_url=url, embedder=HashEmbedder()
        )
        try:
            transport = httpx.ASGITransport(app=create_app(services))
            async with httpx.AsyncClient(transport=transport, base_url="http://m.test") as api:
                text = await scrape(api)
        finally:
            services.close()
        assert value(text, "memstack_tier_up", tier="long_term") == 1
        assert value(text, "memstack_tier_up", tier="short_term") == short_term, url


class Held(EmbedderWrapper):
    """Holds every call until ``gate`` opens."""

    def __init__(self) -> None:
        self.inner = HashEmbedder()
        self.gate = threading.Event()

    def embed_batch(self, texts: Sequence[str]) -> Vectors:
        assert self.gate.wait(WAIT_S), "the test never opened the gate"
        return self.inner.embed_batch(texts)


@pytest.fixture
def held_lane() -> Iterator[BatchingEmbedder]:
    """One model lane, busy with a held call, and two more texts queued behind it."""
    held = Held()
    batching = BatchingEmbedder(held, max_running=1)
    callers = [
        threading.Thread(target=batching.embed_batch, args=(texts,))
        for texts in (["first"], ["second", "third"])
    ]
    callers[0].start()
    deadline = time.monotonic() + WAIT_S
    while not batching._busy:  # the first call is in the lane
        assert time.monotonic() < deadline
        time.sleep(0.01)
    callers[1].start()
    while batching.queued() < 2:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    yield batching
    held.gate.set()
    for caller in callers:
        caller.join(WAIT_S)
    batching.close()


async def test_queue_depths(tmp_path: Path, held_lane: BatchingEmbedder):
    title = "Handbook"
    embedder = GatedEmbedder(prefix=f"{title}: ", free=1)
    services = open_services(
        store_url=f"sqlite:///{tmp_path / 'q.db'}", redis_url=None, embedder=embedder
    )
    services.batching = held_lane  # the lanes /metrics reads the model's queue from
    key = services.keys.create(tenant="acme")[0]
    transport = httpx.ASGITransport(app=create_app(services))
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://m.test") as api:
            idle = await scrape(api)
            added = await api.post(
                "/api/knowledge", json={"title": title, "text": prose(200)}, headers=auth(key)
            )
            assert added.status_code == 202, added.text  # held mid-way by the gate
            busy = await scrape(api)
    finally:
        embedder.gate.set()
        await services.knowledge.indexer.stop()
        services.batching = None  # the fixture closes it
        services.close()
    depth = "memstack_queue_depth"
    assert value(idle, depth, queue="embedding") == 2
    assert value(idle, depth, queue="knowledge_backlog") == 0
    assert value(idle, depth, queue="knowledge_indexing") == 0
    assert value(idle, depth, queue="extraction_jobs") == 0
    assert value(busy, depth, queue="knowledge_backlog") == 1
    assert value(busy, depth, queue="knowledge_indexing") == 1


async def test_a_live_server_answers_metrics_to_loopback(live: LiveServer, keys: Keys):
    async with httpx.AsyncClient(base_url=live.url) as client:
        stored = await client.post(
            "/api/memories",
            json={"agent_id": "bot", "key": "k", "value": "v"},
            headers=auth(keys.acme),
        )
        assert stored.status_code == 201
        text = await scrape(client)
    requests = "memstack_http_requests_total"
    assert value(text, requests, method="POST", route="/api/memories", status="201") == 1
    assert any(s.name == "process_start_time_seconds" for s in samples(text))


@pytest.mark.parametrize(
    ("token", "header", "status"),
    [
        (None, None, 403),
        (None, "Bearer anything", 403),
        ("s3cret", None, 401),
        ("s3cret", "Bearer wrong", 401),
        ("s3cret", "Bearer s3cret", 200),
    ],
)
async def test_clients_off_loopback_need_the_metrics_token(
    services: Services, token: str | None, header: str | None, status: int
):
    app = create_app(services, metrics_token=token)
    transport = httpx.ASGITransport(app=app, client=("192.0.2.7", 40000))  # TEST-NET-1
    headers = {"Authorization": header} if header else {}
    async with httpx.AsyncClient(transport=transport, base_url="http://m.test") as api:
        response = await api.get("/metrics", headers=headers)
    assert response.status_code == status, response.text
    if status == 403:
        assert "MEMSTACK_METRICS_TOKEN" in response.json()["error"]["message"]
    if status == 401:
        assert response.json()["error"]["code"] == "unauthorized"
    if status == 200:
        assert value(response.text, "memstack_tier_up", tier="long_term") == 1


async def test_metrics_is_not_an_api_operation(api: httpx.AsyncClient):
    assert "/metrics" not in (await api.get("/openapi.json")).json()["paths"]


def test_the_token_comes_from_the_environment_and_reaches_the_workers():
    settings = ServerSettings.from_env({"MEMSTACK_METRICS_TOKEN": "s3cret"}, dotenv=None)
    assert settings.metrics_token == "s3cret"
    again = ServerSettings.from_env(settings.to_env(), dotenv=None)
    assert again.metrics_token == "s3cret"
    assert ServerSettings.from_env({}, dotenv=None).metrics_token is None
