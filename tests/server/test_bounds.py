"""Bounded work per request and errors as documented (issue 11): every page bound is a
4xx naming the field and its range, any unparseable body is 400 ``malformed_json``,
what the schema calls valid is accepted, and a knowledge document is embedded in small
batches: within its request up to ``SYNC_PASSAGES`` passages, in the background beyond."""

from pathlib import Path

import httpx
import pytest

from memstack.service.knowledge import CHUNK_CHARS, EMBED_BATCH, SYNC_PASSAGES
from memstack.service.memories import MAX_LIST_OFFSET
from memstack.transports.app import create_app
from memstack.wiring import open_services
from tests.embeddings.recording import RecordingEmbedder
from tests.server.conftest import Keys, auth
from tests.server.indexing import until_indexed

PAGE_BOUNDS = [
    ("/api/memories?offset=9223372036854775808", "offset", str(MAX_LIST_OFFSET)),
    (f"/api/memories?offset={MAX_LIST_OFFSET + 1}", "offset", str(MAX_LIST_OFFSET)),
    ("/api/memories?limit=501", "limit", "500"),
    ("/api/knowledge?offset=9223372036854775808", "offset", "1000000"),
    ("/api/knowledge?offset=-1", "offset", "0"),
    ("/api/knowledge?limit=100000", "limit", "500"),
    ("/api/context?agent_id=bot&budget=99999999999999999999", "budget", "200000"),
    ("/api/memories/" + "m" * 201, "memory_id", "200"),
    ("/api/knowledge/" + "d" * 201, "document_id", "200"),
]


@pytest.mark.parametrize(("path", "field", "bound"), PAGE_BOUNDS)
async def test_every_page_bound_is_a_4xx_naming_the_field_and_range(
    api, keys: Keys, path, field, bound
):
    response = await api.get(path, headers=auth(keys.acme))
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["code"] == "invalid_input" and error["field"] == field
    assert bound in error["message"], error["message"]


async def test_the_deepest_memory_page_is_served(api, keys: Keys):
    response = await api.get(f"/api/memories?offset={MAX_LIST_OFFSET}", headers=auth(keys.acme))
    assert response.status_code == 200 and response.json()["offset"] == MAX_LIST_OFFSET


UNPARSEABLE = [
    ("application/json", b"{not json"),
    ("application/json", b"\xff\xfe{"),
    ("application/json", b""),
    ("application/json; charset=latin-1", b'{"value": "\xe9"}'),
    ("text/plain", b'{"value": "x"}'),
    ("application/x-www-form-urlencoded", b"value=x"),
    (None, b'{"value": "x"}'),
]


@pytest.mark.parametrize(("content_type", "body"), UNPARSEABLE)
@pytest.mark.parametrize(
    ("method", "path"),
    [("POST", "/api/memories"), ("POST", "/api/knowledge/search"), ("PUT", "/api/memories/m")],
)
async def test_any_unparseable_body_is_400_malformed_json(
    api, keys: Keys, method, path, content_type, body
):
    headers = auth(keys.acme)
    if content_type:
        headers["Content-Type"] = content_type
    response = await api.request(method, path, content=body, headers=headers)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["code"] == "malformed_json" and error["field"] == "body"
    assert "JSON object" in error["message"]


async def test_a_json_document_of_the_wrong_shape_stays_a_422(api, keys: Keys):
    response = await api.post("/api/memories", json=[1], headers=auth(keys.acme))
    assert response.status_code == 422 and response.json()["error"]["field"] == "body"


@pytest.mark.parametrize("path", ["/api/memories/search", "/api/knowledge/search"])
async def test_a_whole_float_limit_is_the_integer_the_schema_allows(api, keys: Keys, path):
    ok = await api.post(path, json={"query": "x", "limit": 3.0}, headers=auth(keys.acme))
    assert ok.status_code == 200, ok.text
    for bad in (3.5, "3", True):
        refused = await api.post(path, json={"query": "x", "limit": bad}, headers=auth(keys.acme))
        assert refused.status_code == 422 and refused.json()["error"]["field"] == "limit"


@pytest.mark.parametrize("agent", ["機器人", "agént-ü", "бот.2"])
async def test_ids_of_any_script_work_in_bodies_and_query_strings(api, keys: Keys, agent):
    body = {"agent_id": agent, "key": "k", "value": "v", "scope": "session", "session_id": agent}
    created = await api.post("/api/memories", json=body, headers=auth(keys.acme))
    assert created.status_code == 201, created.text
    params = {"agent_id": agent, "session_id": agent}
    listed = await api.get("/api/memories", params=params, headers=auth(keys.acme))
    assert listed.status_code == 200, listed.text
    assert [m["id"] for m in listed.json()["memories"]] == [created.json()["id"]]
    context = await api.get("/api/context", params=params, headers=auth(keys.acme))
    assert context.status_code == 200 and context.json()["memories"][0]["agent_id"] == agent


@pytest.mark.parametrize("agent", ["bad agent", "_x", "~global", "bot\n", "a" * 129])
async def test_ids_outside_the_rule_are_refused_by_name(api, keys: Keys, agent):
    response = await api.get("/api/memories", params={"agent_id": agent}, headers=auth(keys.acme))
    assert response.status_code == 422 and response.json()["error"]["field"] == "agent_id"


def _document(passages: int) -> str:
    """Prose that splits into exactly ``passages`` passages."""
    paragraph = " ".join(["The river runs past the library garden every morning."] * 14)
    assert CHUNK_CHARS // 2 < len(paragraph) < CHUNK_CHARS - 2
    return "\n\n".join(f"{i} {paragraph}" for i in range(passages))


@pytest.fixture
async def recorded(tmp_path: Path):
    embedder = RecordingEmbedder()
    services = open_services(
        store_url=f"sqlite:///{tmp_path / 'kb.db'}", redis_url=None, embedder=embedder
    )
    key = services.keys.create(tenant="acme")[0]
    transport = httpx.ASGITransport(app=create_app(services))
    async with httpx.AsyncClient(transport=transport, base_url="http://memstack.test") as client:
        yield client, key, embedder
    services.close()


async def test_a_document_is_embedded_in_small_batches(recorded):
    api, key, embedder = recorded
    response = await api.post(
        "/api/knowledge", json={"title": "t", "text": _document(SYNC_PASSAGES)}, headers=auth(key)
    )
    assert response.status_code == 201, response.text
    sizes = [len(b) for b in embedder.batches]
    print(f"{SYNC_PASSAGES} passages embedded in {len(sizes)} batches of at most {max(sizes)}")
    assert sum(sizes) == SYNC_PASSAGES and max(sizes) == EMBED_BATCH


async def test_a_document_over_the_sync_passages_is_embedded_after_the_answer(recorded):
    api, key, embedder = recorded
    response = await api.post(
        "/api/knowledge",
        json={"title": "t", "text": _document(SYNC_PASSAGES + 1)},
        headers=auth(key),
    )
    assert response.status_code == 202, response.text
    assert response.json()["passages_total"] == SYNC_PASSAGES + 1
    assert (await until_indexed(api, key, response.json()["id"]))["status"] == "ready"
    sizes = [len(b) for b in embedder.batches]
    assert sum(sizes) == SYNC_PASSAGES + 1 and max(sizes) == EMBED_BATCH
