"""Versions over the REST API and the client: GET /api/memories/{id}/history, as_of and
include_superseded on listing, as_of on search; on a manual clock, so moments are exact."""

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from memstack import InvalidInput, ManualClock, NotFound
from memstack.client import AsyncMemoryClient, MemoryClient
from memstack.embeddings import HashEmbedder
from memstack.storage import Filter
from memstack.wiring import Services, open_services
from tests.server.conftest import Keys, LiveServer, auth

T0 = 1_780_000_000.0
EVERY_RECORD = Filter(include_superseded=True, include_expired=True)
BOB = {"agent_id": "bot", "key": "bob.city", "value": "Bob lives in Lisbon"}


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(start=T0)


@pytest.fixture
def services(tmp_path: Path, clock: ManualClock) -> Iterator[Services]:
    services = open_services(
        store_url=f"sqlite:///{tmp_path / 'server.db'}",
        redis_url=None,
        embedder=HashEmbedder(),
        ltm_max_entries=2,
        clock=clock,
    )
    yield services
    services.close()


async def store(api: httpx.AsyncClient, api_key: str, **changes: str) -> dict[str, Any]:
    response = await api.post("/api/memories", json={**BOB, **changes}, headers=auth(api_key))
    assert response.status_code == 201, response.text
    created: dict[str, Any] = response.json()
    return created


async def moved(api: httpx.AsyncClient, keys: Keys, clock: ManualClock) -> str:
    """Bob lived in Lisbon from T0, in Berlin from T0 + 60, in Rome from T0 + 120."""
    for value in ("Bob lives in Lisbon", "Bob moved to Berlin", "Bob moved to Rome"):
        created = await store(api, keys.acme, value=value)
        clock.advance(60)
    return str(created["id"])


async def test_history_lists_every_version_with_its_validity(api, keys: Keys, clock):
    memory_id = await moved(api, keys, clock)
    response = await api.get(f"/api/memories/{memory_id}/history", headers=auth(keys.acme))
    assert response.status_code == 200
    body = response.json()
    assert body["id"] == memory_id
    versions = body["versions"]
    assert [v["value"].split()[-1] for v in versions] == ["Lisbon", "Berlin", "Rome"]
    assert [(v["valid_from"], v["valid_to"]) for v in versions] == [
        ("2026-05-28T20:26:40.000Z", "2026-05-28T20:27:40.000Z"),
        ("2026-05-28T20:27:40.000Z", "2026-05-28T20:28:40.000Z"),
        ("2026-05-28T20:28:40.000Z", None),
    ]
    assert [(v["id"], v["superseded_by"], v["closed_reason"]) for v in versions] == [
        (memory_id, versions[1]["version_id"], "superseded"),
        (memory_id, versions[2]["version_id"], "superseded"),
        (memory_id, None, None),
    ]
    assert len({v["version_id"] for v in versions}) == 3
    current = (await api.get(f"/api/memories/{memory_id}", headers=auth(keys.acme))).json()
    assert current == versions[-1]


async def test_listing_as_of_and_with_every_version(api, keys: Keys, clock):
    memory_id = await moved(api, keys, clock)
    headers = auth(keys.acme)
    current = (await api.get("/api/memories", headers=headers)).json()
    assert [m["value"] for m in current["memories"]] == ["Bob moved to Rome"]
    then = (await api.get(f"/api/memories?as_of={T0 + 90}", headers=headers)).json()
    assert [(m["id"], m["value"]) for m in then["memories"]] == [(memory_id, "Bob moved to Berlin")]
    every = (await api.get("/api/memories?include_superseded=true", headers=headers)).json()
    assert every["total"] == 3
    assert [m["valid_to"] is None for m in every["memories"]] == [True, False, False]


async def test_search_as_of(api, keys: Keys, clock):
    memory_id = await moved(api, keys, clock)
    query = {"query": "Where does Bob live?", "agent_id": "bot"}
    now = await api.post("/api/memories/search", json=query, headers=auth(keys.acme))
    assert [h["memory"]["value"] for h in now.json()["results"]] == ["Bob moved to Rome"]
    then = await api.post(
        "/api/memories/search", json={**query, "as_of": T0 + 1}, headers=auth(keys.acme)
    )
    (hit,) = then.json()["results"]
    assert (hit["memory"]["id"], hit["memory"]["value"]) == (memory_id, "Bob lives in Lisbon")


@pytest.mark.parametrize(
    "query",
    ["as_of=yesterday", "as_of=nan", "as_of=inf", "as_of=1&include_superseded=true"],
)
async def test_a_bad_as_of_is_422_naming_it(api, keys: Keys, query: str):
    response = await api.get(f"/api/memories?{query}", headers=auth(keys.acme))
    assert response.status_code == 422, response.text
    assert response.json()["error"]["field"] == "as_of"


@pytest.mark.parametrize("as_of", ["yesterday", True, None])
async def test_a_bad_as_of_in_a_search_is_422_naming_it(api, keys: Keys, as_of: object):
    body = {"query": "bob", "as_of": as_of}
    raw = '{"query": "bob", "as_of": NaN}'
    response = (
        await api.post("/api/memories/search", json=body, headers=auth(keys.acme))
        if as_of is not None
        else await api.post(
            "/api/memories/search",
            content=raw,
            headers={**auth(keys.acme), "Content-Type": "application/json"},
        )
    )
    assert response.status_code == 422, response.text
    assert response.json()["error"]["field"] == "as_of"


async def test_history_after_an_eviction_and_404s(api, keys: Keys, clock):
    memory_id = await moved(api, keys, clock)
    for key in ("ann.city", "eve.city"):  # the cap is 2: the second evicts Bob
        await store(api, keys.acme, key=key, value="Oslo")
        clock.advance(1)
    headers = auth(keys.acme)
    assert (await api.get(f"/api/memories/{memory_id}", headers=headers)).status_code == 404
    put = await api.put(f"/api/memories/{memory_id}", json={"value": "x"}, headers=headers)
    assert put.status_code == 404
    history = (await api.get(f"/api/memories/{memory_id}/history", headers=headers)).json()
    assert [v["closed_reason"] for v in history["versions"]] == [
        "superseded",
        "superseded",
        "evicted",
    ]
    for key, path in [
        (keys.other, f"/api/memories/{memory_id}/history"),
        (keys.acme, "/api/memories/mem_missing/history"),
    ]:
        response = await api.get(path, headers=auth(key))
        assert response.status_code == 404
        assert response.json()["error"] == {
            "code": "not_found",
            "message": response.json()["error"]["message"],
            "field": "id",
        }
    erased = await api.delete(f"/api/memories/{memory_id}", headers=headers)  # by its id
    assert erased.status_code == 200 and erased.json() == {"deleted": True, "id": memory_id}
    gone = await api.get(f"/api/memories/{memory_id}/history", headers=headers)
    assert gone.status_code == 404


async def test_delete_erases_the_history(api, keys: Keys, clock, services: Services):
    memory_id = await moved(api, keys, clock)
    headers = auth(keys.acme)
    assert (await api.delete(f"/api/memories/{memory_id}", headers=headers)).status_code == 200
    history = await api.get(f"/api/memories/{memory_id}/history", headers=headers)
    assert history.status_code == 404
    every = (await api.get("/api/memories?include_superseded=true", headers=headers)).json()
    assert every["total"] == 0
    long_term = services.memories.long_term
    for namespace in (long_term.namespace("acme", "bot"), long_term.index_namespace("acme")):
        assert long_term.records.count(namespace, EVERY_RECORD) == 0  # nothing of it remains


async def test_bulk_delete_erases_the_history(api, keys: Keys, clock):
    memory_id = await moved(api, keys, clock)
    headers = auth(keys.acme)
    deleted = await api.delete("/api/memories?agent_id=bot", headers=headers)
    assert deleted.json() == {"deleted": 1}
    history = await api.get(f"/api/memories/{memory_id}/history", headers=headers)
    assert history.status_code == 404
    every = (await api.get("/api/memories?include_superseded=true", headers=headers)).json()
    assert every["total"] == 0


def test_the_client_over_real_http(live: LiveServer, keys: Keys, clock: ManualClock):
    with MemoryClient(live.url, api_key=keys.acme) as client:
        first = client.store("bot", "bob.city", "Bob lives in Lisbon")
        clock.advance(60)
        client.store("bot", "bob.city", "Bob moved to Berlin")
        history = client.history(first["id"])
        assert [v["value"] for v in history["versions"]] == [
            "Bob lives in Lisbon",
            "Bob moved to Berlin",
        ]
        assert history["versions"][0]["superseded_by"] == history["versions"][1]["version_id"]
        then = client.list(agent_id="bot", as_of=T0 + 30)
        assert [m["value"] for m in then["memories"]] == ["Bob lives in Lisbon"]
        assert client.list(include_superseded=True)["total"] == 2
        (hit,) = client.search("Where does Bob live?", as_of=T0 + 30)["results"]
        assert hit["memory"]["id"] == first["id"]
        with pytest.raises(InvalidInput) as both:
            client.list(as_of=T0, include_superseded=True)
        assert both.value.field == "as_of"
        client.delete(first["id"])
        with pytest.raises(NotFound):
            client.history(first["id"])


async def test_the_async_client_over_real_http(live: LiveServer, keys: Keys, clock):
    async with AsyncMemoryClient(live.url, api_key=keys.acme) as client:
        first = await client.store("bot", "bob.city", "Bob lives in Lisbon", scope="global")
        clock.advance(60)
        await client.store("bot", "bob.city", "Bob moved to Berlin", scope="global")
        history = await client.history(first["id"])
        assert [v["valid_to"] is None for v in history["versions"]] == [False, True]
        page = await client.list(scope="global", as_of=T0 + 30)
        assert [m["id"] for m in page["memories"]] == [first["id"]]
