"""Issue 34 over REST and the typed client: ``POST /api/memories:batch`` stores all of a
batch or none of it (a bad memory answered 422 naming it), and ``POST
/api/memories/search`` filters by metadata (a bad filter answered 422 naming the key)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from memstack.client import AsyncMemoryClient, MemoryClient
from memstack.embeddings import HashEmbedder
from memstack.errors import InvalidInput
from memstack.service.writes import MAX_BATCH_MEMORIES
from memstack.transports.app import create_app
from memstack.wiring import Services, open_services
from tests.server.conftest import LiveServer, auth, serve_in_thread

BATCH: list[dict[str, Any]] = [
    {"agent_id": "bot", "key": "deploy", "value": "Deploys go blue-green.", "metadata": {"t": "a"}},
    {"agent_id": "bot", "key": "pager", "value": "Deploys page on-call.", "metadata": {"t": "b"}},
    {"agent_id": "bot", "key": "freeze", "value": "Deploys freeze Fridays.", "scope": "global"},
    {"agent_id": "bot", "key": "run", "value": "Step 2 done.", "scope": "session", "ttl": 60},
]


@pytest.fixture
def services(tmp_path: Path) -> Iterator[Services]:
    services = open_services(
        store_url=f"sqlite:///{tmp_path / 'batch.db'}", redis_url=None, embedder=HashEmbedder()
    )
    yield services
    services.close()


@pytest.fixture
def key(services: Services) -> str:
    return services.keys.create(tenant="acme")[0]


@pytest.fixture
async def api(services: Services) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=create_app(services))
    async with httpx.AsyncClient(transport=transport, base_url="http://memstack.test") as client:
        yield client


async def _total(api: httpx.AsyncClient, key: str) -> int:
    listed = await api.get("/api/memories", headers=auth(key))
    total: int = listed.json()["total"]
    return total


async def test_a_batch_is_stored_and_answered_in_order(api: httpx.AsyncClient, key: str):
    answer = await api.post("/api/memories:batch", json={"memories": BATCH}, headers=auth(key))
    assert answer.status_code == 201, answer.text
    stored = answer.json()["memories"]
    assert [m["key"] for m in stored] == [m["key"] for m in BATCH]
    assert [m["scope"] for m in stored] == ["agent", "agent", "global", "session"]
    assert stored[0]["metadata"] == {"t": "a"} and stored[3]["expires_at"] is not None
    for memory in stored:
        got = await api.get(f"/api/memories/{memory['id']}", headers=auth(key))
        assert got.json() == memory
    again = await api.post("/api/memories:batch", json={"memories": BATCH}, headers=auth(key))
    assert [m["id"] for m in again.json()["memories"]] == [m["id"] for m in stored]
    assert await _total(api, key) == len(BATCH)
    document = (await api.get("/openapi.json")).json()
    assert "201" in document["paths"]["/api/memories:batch"]["post"]["responses"]


def _with(at: int, **changes: Any) -> list[dict[str, Any]]:
    batch = [dict(m) for m in BATCH]
    batch[at] |= changes
    return batch


REFUSED: list[tuple[str, list[dict[str, Any]], str, str]] = [
    ("no value", [BATCH[0], {"agent_id": "bot", "key": "k"}], "memories.1.value", "Field required"),
    ("bad ttl", _with(1, ttl=-5), "memories[1].ttl", "out of range"),
    ("credential", _with(2, value="password=hunter2hunter2"), "memories[2].value", "secret"),
    ("twice", [*BATCH, BATCH[1]], "memories[4].key", "memories[1] again"),
    ("none", [], "memories", "at least 1"),
    ("too many", [BATCH[0]] * (MAX_BATCH_MEMORIES + 1), "memories", "at most 100"),
    ("session elsewhere", _with(0, session_id="s1"), "memories[0].session_id", "only for"),
]


@pytest.mark.parametrize(("name", "batch", "field", "says"), REFUSED, ids=[r[0] for r in REFUSED])
async def test_a_batch_with_a_bad_memory_is_422_naming_it_and_stores_nothing(
    api: httpx.AsyncClient, key: str, name: str, batch: list[Any], field: str, says: str
):
    answer = await api.post("/api/memories:batch", json={"memories": batch}, headers=auth(key))
    assert answer.status_code == 422, answer.text
    error = answer.json()["error"]
    assert error["field"] == field and says in error["message"], error
    assert "hunter2" not in answer.text
    assert await _total(api, key) == 0


async def test_a_batch_for_an_agent_the_key_may_not_act_for_is_403(
    api: httpx.AsyncClient, services: Services
):
    limited = services.keys.create(tenant="acme", agents=["bot"])[0]
    batch = _with(1, agent_id="helper")
    answer = await api.post("/api/memories:batch", json={"memories": batch}, headers=auth(limited))
    assert answer.status_code == 403, answer.text
    assert answer.json()["error"]["field"] == "memories[1].agent_id"
    assert await _total(api, limited) == 0


async def test_search_filters_by_metadata_and_refuses_a_bad_filter(
    api: httpx.AsyncClient, key: str
):
    await api.post("/api/memories:batch", json={"memories": BATCH}, headers=auth(key))
    found: list[tuple[dict[str, Any], set[str]]] = [
        ({"t": "b"}, {"pager"}),
        ({"t": {"$in": ["a", "b"]}}, {"deploy", "pager"}),
        ({"t": {"$in": ["z"]}}, set()),
    ]
    for wanted, keys in found:
        body = {"query": "deploys", "metadata": wanted, "limit": 10}
        answer = await api.post("/api/memories/search", json=body, headers=auth(key))
        assert answer.status_code == 200, answer.text
        assert {h["memory"]["key"] for h in answer.json()["results"]} == keys
    refused: list[tuple[dict[str, Any], str]] = [
        ({"t": {"$gt": 1}}, "metadata.t.$gt"),
        ({"t": {"a": 1}}, "metadata.t"),
        ({"t": ["a"]}, "metadata.t"),
        ({"t": {"$in": [["a"]]}}, "metadata.t.$in[0]"),
    ]
    for wanted, field in refused:
        body = {"query": "deploys", "metadata": wanted}
        answer = await api.post("/api/memories/search", json=body, headers=auth(key))
        assert answer.status_code == 422, answer.text
        assert answer.json()["error"]["field"] == field
    not_an_object = {"query": "deploys", "metadata": ["t"]}
    answer = await api.post("/api/memories/search", json=not_an_object, headers=auth(key))
    assert answer.status_code == 422 and answer.json()["error"]["field"] == "metadata"


@pytest.fixture
def live(services: Services) -> Iterator[LiveServer]:
    running = serve_in_thread(services)
    yield running
    running.server.should_exit = True
    running.thread.join(timeout=10)


async def test_the_clients_store_a_batch_and_filter_a_search(live: LiveServer, key: str):
    with MemoryClient(live.url, api_key=key) as client:
        with pytest.raises(InvalidInput) as raised:
            client.store_many(_with(2, value="password=hunter2hunter2"))
        assert raised.value.field == "memories[2].value"
        assert client.list()["total"] == 0
        stored = client.store_many(BATCH)["memories"]
        assert [m["key"] for m in stored] == [m["key"] for m in BATCH]
        hits = client.search("deploys", metadata={"t": {"$in": ["b"]}})["results"]
        assert [h["memory"]["key"] for h in hits] == ["pager"]
        with pytest.raises(InvalidInput) as raised:
            client.search("deploys", metadata={"t": {"$nin": ["b"]}})
        assert raised.value.field == "metadata.t.$nin"
    async with AsyncMemoryClient(live.url, api_key=key) as aclient:
        again = (await aclient.store_many(BATCH[:1]))["memories"]
        assert again[0]["id"] == stored[0]["id"]
        found = await aclient.search("deploys", metadata={"t": "a"})
        assert [h["memory"]["key"] for h in found["results"]] == ["deploy"]
