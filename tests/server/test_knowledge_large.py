"""Knowledge documents of any reasonable size (issue 29): a document over ``SYNC_PASSAGES``
passages answers 202 and is indexed in the background, its passages searchable as they
land and its progress on ``/status``; a small one answers 201 as before; the route takes
bodies up to 10 MiB while the others keep the server's limit; a secret anywhere refuses
the whole document before the 202; deleting one mid-way stops its job and leaves nothing;
two workers never store a passage twice. (A server killed mid-way and started again:
``tests/reliability/test_knowledge_restart.py``.)"""

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from memstack.client import AsyncMemoryClient, MemoryClient
from memstack.clock import ManualClock
from memstack.service.knowledge import (
    EMBED_BATCH,
    MAX_DOCUMENT_CHARS,
    SYNC_PASSAGES,
    KnowledgeBase,
)
from memstack.service.knowledge_index import LEASE_S, Indexer
from memstack.service.principal import Principal
from memstack.storage import Record
from memstack.transports.app import create_app
from memstack.transports.rest.body_limits import KNOWLEDGE_BODY_BYTES
from memstack.wiring import Services, open_services
from tests.server.conftest import Keys, LiveServer, auth
from tests.server.indexing import WAIT_S, GatedEmbedder, prose, status, until_indexed

TITLE = "Handbook"
HELD_AFTER = 3  # batches of the handbook's passages embedded before the gate holds them
ACME = Principal(tenant="acme")


@dataclass
class Indexing:
    api: httpx.AsyncClient
    key: str
    services: Services
    embedder: GatedEmbedder

    def count(self, space: str) -> int:
        return self.services.records.count(space)


@pytest.fixture
async def indexing(tmp_path: Path) -> AsyncIterator[Indexing]:
    """The app in process (no lifespan: jobs start with their request) over SQLite, with
    the server's body limit at 64 kB and the handbook's passages held after a few batches."""
    embedder = GatedEmbedder(prefix=f"{TITLE}: ", free=HELD_AFTER)
    services = open_services(
        store_url=f"sqlite:///{tmp_path / 'kb.db'}", redis_url=None, embedder=embedder
    )
    key = services.keys.create(tenant="acme")[0]
    app = create_app(services, max_body_bytes=64_000)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://memstack.test") as api:
        yield Indexing(api=api, key=key, services=services, embedder=embedder)
    embedder.gate.set()
    await services.knowledge.indexer.stop()
    services.close()


async def _held_at_the_gate(kb: Indexing, doc_id: str) -> dict[str, object]:
    """The status once the free batches are stored and the next waits at the gate."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + WAIT_S
    while True:
        now = await status(kb.api, kb.key, doc_id)
        if now["passages_done"] == HELD_AFTER * EMBED_BATCH:
            return now
        assert loop.time() < deadline, f"the first batches were not stored: {now}"
        await asyncio.sleep(0.02)


async def test_a_1_mb_document_answers_202_and_is_searchable_while_it_indexes(
    indexing: Indexing,
):
    kb, text = indexing, prose(1_320, word="otter")
    assert 1_000_000 < len(text) < 1_048_576
    response = await kb.api.post(
        "/api/knowledge", json={"title": TITLE, "text": text}, headers=auth(kb.key)
    )
    assert response.status_code == 202, response.text
    doc = response.json()
    assert doc["status"] == "indexing" and doc["passages_total"] == 1_320
    assert doc["chars"] == len(text) and doc["error"] is None
    assert response.headers["location"].endswith(f"/api/knowledge/{doc['id']}/status")

    midway = await _held_at_the_gate(kb, doc["id"])
    assert midway["status"] == "indexing", midway
    found = await kb.api.post(
        "/api/knowledge/search", json={"query": "otter p20", "limit": 3}, headers=auth(kb.key)
    )
    hits = found.json()["results"]
    assert hits and all(h["document_id"] == doc["id"] for h in hits), hits
    assert kb.count("kb/acme/chunks") == HELD_AFTER * EMBED_BATCH
    listed = (await kb.api.get("/api/knowledge", headers=auth(kb.key))).json()
    assert [d["status"] for d in listed["documents"]] == ["indexing"]

    kb.embedder.gate.set()
    ready = await until_indexed(kb.api, kb.key, doc["id"])
    assert ready["status"] == "ready", ready
    assert ready["passages_done"] == ready["passages_total"] == 1_320
    full = (await kb.api.get(f"/api/knowledge/{doc['id']}", headers=auth(kb.key))).json()
    assert full["text"] == text and full["status"] == "ready"
    assert kb.count("kb/acme/chunks") == 1_320
    assert kb.count("kb/indexing") == 0  # nothing left for a server to take up
    last = await kb.api.post(
        "/api/knowledge/search", json={"query": "otter p1319"}, headers=auth(kb.key)
    )
    assert last.json()["results"][0]["passage"].startswith("p1319 ")


async def test_a_small_document_answers_201_as_before(indexing: Indexing):
    kb = indexing
    response = await kb.api.post(
        "/api/knowledge", json={"title": "Note", "text": prose(SYNC_PASSAGES)}, headers=auth(kb.key)
    )
    assert response.status_code == 201, response.text
    assert "location" not in response.headers
    body = response.json()
    assert body["status"] == "ready" and body["error"] is None
    assert body["passages_done"] == body["passages_total"] == SYNC_PASSAGES
    assert kb.count("kb/acme/parts") == kb.count("kb/indexing") == 0  # kept whole, as before
    assert kb.services.knowledge.indexer.indexing() == frozenset()


async def test_the_knowledge_route_has_its_own_body_limit(indexing: Indexing):
    kb = indexing
    over = {"title": TITLE, "text": "x " * (KNOWLEDGE_BODY_BYTES // 2)}
    refused = await kb.api.post("/api/knowledge", json=over, headers=auth(kb.key))
    assert refused.status_code == 413, refused.text
    error = refused.json()["error"]
    assert error["code"] == "too_large" and str(KNOWLEDGE_BODY_BYTES) in error["message"]
    assert kb.embedder.batches == 0 and kb.count("kb/acme/docs") == 0
    # far over the server's 64 kB, within the route's own limit
    response = await kb.api.post(
        "/api/knowledge", json={"title": "Note", "text": "word " * 20_000}, headers=auth(kb.key)
    )
    assert response.status_code == 201, response.text
    memory = {"agent_id": "bot", "key": "k", "value": "x" * 70_000}
    other = await kb.api.post("/api/memories", json=memory, headers=auth(kb.key))
    assert other.status_code == 413 and "64000" in other.json()["error"]["message"]


async def test_a_document_of_the_largest_size_fits_the_body_limit(indexing: Indexing):
    """``MAX_DOCUMENT_CHARS`` of prose, its newlines escaped in JSON, is accepted."""
    kb = indexing
    paragraph = "The river runs past the library garden every morning. " * 12
    text = ("\n\n".join([paragraph] * (MAX_DOCUMENT_CHARS // len(paragraph))))[:MAX_DOCUMENT_CHARS]
    assert len(text) == MAX_DOCUMENT_CHARS
    response = await kb.api.post(
        "/api/knowledge", json={"title": TITLE, "text": text}, headers=auth(kb.key)
    )
    assert response.status_code == 202, response.text[:300]
    deleted = await kb.api.delete(f"/api/knowledge/{response.json()['id']}", headers=auth(kb.key))
    assert deleted.status_code == 200, deleted.text


async def test_a_secret_anywhere_refuses_the_whole_document_before_the_202(indexing: Indexing):
    kb = indexing
    text = prose(1_000) + "\n\nThe deploy key is AKIAIOSFODNN7Q3ZJ5WB for the bucket."
    response = await kb.api.post(
        "/api/knowledge", json={"title": TITLE, "text": text}, headers=auth(kb.key)
    )
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["field"] == "text" and "secret" in error["message"]
    assert kb.embedder.batches == 0
    for space in ("kb/acme/docs", "kb/acme/parts", "kb/acme/chunks", "kb/indexing"):
        assert kb.count(space) == 0, space


async def test_deleting_a_document_mid_way_stops_its_job_and_leaves_nothing(
    indexing: Indexing,
):
    kb = indexing
    response = await kb.api.post(
        "/api/knowledge", json={"title": TITLE, "text": prose(400)}, headers=auth(kb.key)
    )
    assert response.status_code == 202, response.text
    doc_id = response.json()["id"]
    await _held_at_the_gate(kb, doc_id)  # a batch is being embedded as it is deleted
    deleted = await kb.api.delete(f"/api/knowledge/{doc_id}", headers=auth(kb.key))
    assert deleted.status_code == 200, deleted.text
    kb.embedder.gate.set()  # the batch in flight finishes: its write must find the doc gone
    deadline = asyncio.get_running_loop().time() + WAIT_S
    while doc_id in kb.services.knowledge.indexer.indexing():
        assert asyncio.get_running_loop().time() < deadline, "the job did not stop"
        await asyncio.sleep(0.02)
    assert kb.embedder.batches == HELD_AFTER + 1  # no batch after the one in flight
    for space in ("kb/acme/docs", "kb/acme/parts", "kb/acme/chunks", "kb/indexing"):
        assert kb.count(space) == 0, space
    gone = await kb.api.get(f"/api/knowledge/{doc_id}/status", headers=auth(kb.key))
    assert gone.status_code == 404


async def test_two_workers_never_store_a_passage_twice(tmp_path: Path):
    """Worker ``a`` stalls mid-way past its lease; ``b`` takes the document up and finishes
    it; ``a``'s late batch then finds the document changed and writes nothing."""
    clock = ManualClock()
    embedder = GatedEmbedder(prefix=f"{TITLE}: ", free=HELD_AFTER)
    services = open_services(
        store_url=f"sqlite:///{tmp_path / 'kb.db'}",
        redis_url=None,
        embedder=embedder,
        clock=clock,
    )
    a: KnowledgeBase = services.knowledge
    b = Indexer(records=services.records, embedder=embedder.inner, clock=clock, worker="b")
    try:
        doc = await a.add(ACME, title=TITLE, text=prose(200), background=True)
        while (await a.status(ACME, doc.id)).passages_done < HELD_AFTER * EMBED_BATCH:
            await asyncio.sleep(0.02)
        b.start()  # a's lease holds: b leaves the document alone
        await asyncio.sleep(0.2)
        assert b.indexing() == frozenset()
        assert (await a.status(ACME, doc.id)).passages_done == HELD_AFTER * EMBED_BATCH
        clock.advance(LEASE_S + 1)  # a is stuck in its step past its lease
        deadline = asyncio.get_running_loop().time() + WAIT_S
        while (info := await a.status(ACME, doc.id)).status == "indexing":
            assert asyncio.get_running_loop().time() < deadline, f"b did not finish: {info}"
            await asyncio.sleep(0.05)
        assert info.status == "ready" and info.passages_done == 200
        [finished] = services.records.get("kb/acme/docs", [doc.id])
        embedder.gate.set()  # a's late batch
        while a.indexer.indexing():
            assert asyncio.get_running_loop().time() < deadline, "a did not stop"
            await asyncio.sleep(0.02)
        assert embedder.batches == HELD_AFTER + 1  # a stopped after its late batch
        [after] = services.records.get("kb/acme/docs", [doc.id])
        assert after == finished  # which wrote nothing
        chunks: list[Record] = services.records.list("kb/acme/chunks", limit=1_000)
        assert sorted(c.id for c in chunks) == sorted(f"{doc.id}:{i}" for i in range(200))
    finally:
        embedder.gate.set()
        await b.stop()
        await a.indexer.stop()
        services.close()


async def test_the_clients_return_the_status_and_wait_for_ready(live: LiveServer, keys: Keys):
    with MemoryClient(live.url, api_key=keys.acme) as client:
        small = client.add_document("Note", "Blue-green deploys switch the router.")
        assert small["status"] == "ready" and small["passages_total"] == 1
        large = client.add_document(TITLE, prose(SYNC_PASSAGES + 40))
        assert large["status"] == "indexing", large
        done = client.wait_for_document(large["id"], timeout=WAIT_S)
        assert done["status"] == "ready" and done["passages_done"] == SYNC_PASSAGES + 40
    async with AsyncMemoryClient(live.url, api_key=keys.acme) as aclient:
        other = await aclient.add_document(TITLE, prose(SYNC_PASSAGES + 1, word="heron"))
        assert other["status"] == "indexing"
        waited = await aclient.wait_for_document(other["id"], timeout=WAIT_S)
        assert waited["status"] == "ready"
        assert (await aclient.document_status(other["id"]))["passages_done"] == SYNC_PASSAGES + 1
