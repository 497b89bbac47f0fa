"""A key limited to agents reads global memories and knowledge but changes them only
with the global-write right (issue 30): over REST and MCP, with keys stored in SQLite
and in PostgreSQL, and through the CLI that creates and lists them."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner
from mcp.types import CallToolResult, TextContent

from memstack.cli import main
from memstack.client import AuthError, MemoryClient
from memstack.embeddings import HashEmbedder
from memstack.service.api_keys import NAMESPACE, ApiKeys
from memstack.service.knowledge import KnowledgeBase
from memstack.service.memories import MemoryService
from memstack.service.principal import Principal
from memstack.service.stm import InProcessTier
from memstack.storage import PostgresRecordStore, RecordStore, SQLiteRecordStore
from memstack.transports.app import create_app
from memstack.wiring import Services, open_records
from tests.mcp.conftest import http_client, stdio_client
from tests.server.conftest import auth, serve_in_thread

ADMIN = Principal(tenant="acme")
FIX = "--global-write"


@dataclass(frozen=True)
class Keys:
    reader: str
    """Limited to ``bot``, without the right."""
    writer: str
    """Limited to ``bot``, created with the right."""
    admin: str
    """For any agent of acme."""


@dataclass(frozen=True)
class Seeded:
    global_id: str
    """A global memory ``bot`` wrote."""
    document_id: str


def services_over(records: RecordStore) -> Services:
    """The services ``open_services`` builds, over ``records`` (a schema of its own on
    PostgreSQL)."""
    embedder, short_term = HashEmbedder(), InProcessTier(max_entries=20)
    knowledge = KnowledgeBase(records=records, embedder=embedder)
    memories = MemoryService(
        records=records, embedder=embedder, short_term=short_term, knowledge=knowledge
    )
    return Services(
        records=records,
        short_term=short_term,
        embedder=embedder,
        memories=memories,
        knowledge=knowledge,
        keys=ApiKeys(records),
    )


@pytest.fixture(params=["sqlite", "postgres"])
def services(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Services]:
    records: RecordStore
    if request.param == "sqlite":
        records = SQLiteRecordStore(tmp_path / "keys.db")
    else:
        records = PostgresRecordStore(
            request.getfixturevalue("postgres_url"), schema=request.getfixturevalue("pg_schema")
        )
    records.setup()
    built = services_over(records)
    yield built
    built.close()


def refusal(result: CallToolResult) -> str:
    """The text of a tool call the server refused."""
    assert result.is_error and isinstance(result.content[0], TextContent), result
    return result.content[0].text


def make_keys(keys: ApiKeys) -> Keys:
    return Keys(
        reader=keys.create(tenant="acme", agents=["bot", "ops"])[0],
        writer=keys.create(tenant="acme", agents=["bot"], global_write=True)[0],
        admin=keys.create(tenant="acme")[0],
    )


async def seed(services: Services) -> Seeded:
    shared = await services.memories.store(
        ADMIN, agent_id="bot", key="hq", value="Porto", scope="global"
    )
    doc = await services.knowledge.add(ADMIN, title="Runbook", text="Deploy on Tuesdays.")
    return Seeded(global_id=shared.id, document_id=doc.id)


@pytest.fixture
async def api(services: Services) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=create_app(services))
    async with httpx.AsyncClient(transport=transport, base_url="http://memstack.test") as client:
        yield client


GLOBAL_MEMORY = {"agent_id": "bot", "key": "hq", "value": "Faro", "scope": "global"}
CHANGES: list[tuple[str, str, dict[str, Any], str | None]] = [
    # (method, path, request keywords, the field the refusal names)
    ("POST", "/api/memories", {"json": GLOBAL_MEMORY}, "scope"),
    ("PUT", "/api/memories/{global_id}", {"json": {"value": "Faro"}}, "id"),
    ("DELETE", "/api/memories/{global_id}", {}, "id"),
    ("DELETE", "/api/memories", {"params": {"agent_id": "bot"}}, "scope"),
    ("DELETE", "/api/memories", {"params": {"agent_id": "bot", "scope": "global"}}, "scope"),
    ("POST", "/api/knowledge", {"json": {"title": "Policy", "text": "No Friday deploys."}}, None),
    ("DELETE", "/api/knowledge/{document_id}", {}, "id"),
]


async def test_rest_refuses_a_limited_key_every_change_to_what_agents_share(
    services: Services, api: httpx.AsyncClient
):
    keys, seeded = make_keys(services.keys), await seed(services)
    for method, path, kwargs, field in CHANGES:
        url = path.format(**vars(seeded))
        response = await api.request(method, url, headers=auth(keys.reader), **kwargs)
        assert response.status_code == 403, (method, url, response.text)
        error = response.json()["error"]
        assert error["code"] == "forbidden" and error["field"] == field, (method, url)
        assert "may read but not change global memories or knowledge" in error["message"]
        assert FIX in error["message"]
    # Nothing changed, and all of it stays readable with that key.
    reader = auth(keys.reader)
    shared = await api.get(f"/api/memories/{seeded.global_id}", headers=reader)
    assert shared.status_code == 200 and shared.json()["value"] == "Porto"
    listed = (await api.get("/api/memories", params={"scope": "global"}, headers=reader)).json()
    assert [m["key"] for m in listed["memories"]] == ["hq"]
    context = (await api.get("/api/context", params={"agent_id": "bot"}, headers=reader)).json()
    assert "Porto" in context["memories_block"]
    assert (await api.get("/api/knowledge", headers=reader)).json()["total"] == 1
    found = await api.post("/api/knowledge/search", json={"query": "deploy"}, headers=reader)
    assert [h["document_id"] for h in found.json()["results"]] == [seeded.document_id]
    document = await api.get(f"/api/knowledge/{seeded.document_id}", headers=reader)
    assert document.status_code == 200


async def test_rest_a_limited_key_still_erases_its_own_agents_memories(
    services: Services, api: httpx.AsyncClient
):
    keys, _ = make_keys(services.keys), await seed(services)
    reader = auth(keys.reader)
    own = {"agent_id": "ops", "key": "k", "value": "mine"}
    assert (await api.post("/api/memories", json=own, headers=reader)).status_code == 201
    erased = await api.delete("/api/memories", params={"agent_id": "ops"}, headers=reader)
    assert erased.json() == {"deleted": 1}  # ops wrote no global memory: nothing refused
    scoped = await api.delete(
        "/api/memories", params={"agent_id": "bot", "scope": "agent"}, headers=reader
    )
    assert scoped.status_code == 200
    assert (await api.get("/api/memories", params={"scope": "global"}, headers=reader)).json()[
        "total"
    ] == 1


@pytest.mark.parametrize("who", ["writer", "admin"])
async def test_rest_a_key_with_the_right_changes_them(
    services: Services, api: httpx.AsyncClient, who: str
):
    keys, seeded = make_keys(services.keys), await seed(services)
    allowed = {"POST": {200, 201}, "PUT": {200}, "DELETE": {200}}
    for method, path, kwargs, _ in CHANGES:
        if method == "DELETE" and "params" in kwargs:  # seeded again: erasures come last
            seeded = await seed(services)
        url = path.format(**vars(seeded))
        response = await api.request(method, url, headers=auth(getattr(keys, who)), **kwargs)
        assert response.status_code in allowed[method], (method, url, response.text)


def test_the_right_is_stored_with_the_key_and_read_back(services: Services):
    keys = services.keys
    _, reader = keys.create(tenant="acme", agents=["bot"])
    _, writer = keys.create(tenant="acme", agents=["bot"], global_write=True)
    _, admin = keys.create(tenant="acme")
    found = {k.id: k for k in ApiKeys(services.records).list()}  # read from the store
    assert [found[k.id].may_write_global for k in (reader, writer, admin)] == [False, True, True]
    assert (found[reader.id].global_write, found[writer.id].global_write) == (False, True)


def test_a_key_stored_before_the_right_existed_has_it_only_without_agents(
    services: Services,
):
    keys = services.keys
    limited_raw, limited = keys.create(tenant="acme", agents=["bot"])
    open_raw, unlimited = keys.create(tenant="acme")
    for info in (limited, unlimited):  # as a key was stored before: no global_write field
        (record,) = services.records.get(NAMESPACE, [info.id])
        metadata = {k: v for k, v in record.metadata.items() if k != "global_write"}
        services.records.upsert([replace(record, metadata=metadata)])
    fresh = ApiKeys(services.records)
    limited_principal, open_principal = (
        fresh.authenticate(limited_raw),
        fresh.authenticate(open_raw),
    )
    assert limited_principal is not None and not limited_principal.may_write_global
    assert open_principal is not None and open_principal.may_write_global


def test_cli_creates_and_lists_the_right(tmp_path: Path):
    db = str(tmp_path / "cli.db")
    runner = CliRunner()

    def create(*args: str) -> dict[str, Any]:
        done = runner.invoke(
            main, ["keys", "create", "--tenant", "acme", *args, "--db", db, "--json"]
        )
        assert done.exit_code == 0, done.output
        created: dict[str, Any] = json.loads(done.stdout)
        return created

    reader, writer = create("--agents", "bot"), create("--agents", "bot", FIX)
    admin = create()
    assert [k["global_write"] for k in (reader, writer, admin)] == [False, True, True]
    listed = json.loads(runner.invoke(main, ["keys", "list", "--db", db, "--json"]).stdout)
    assert {k["id"]: k["global_write"] for k in listed} == {
        reader["id"]: False,
        writer["id"]: True,
        admin["id"]: True,
    }
    text = runner.invoke(main, ["keys", "list", "--db", db]).stdout
    assert text.count("global-read") == 1 and text.count("global-write") == 2
    records = open_records(f"sqlite:///{db}")
    try:
        principal = ApiKeys(records).authenticate(writer["key"])
    finally:
        records.close()
    assert principal == Principal(tenant="acme", agents=frozenset({"bot"}), global_write=True)


async def test_mcp_over_http_and_the_client_get_the_same_refusal(services: Services):
    keys, seeded = make_keys(services.keys), await seed(services)
    live = serve_in_thread(services)
    try:
        async with http_client(live.url, keys.reader) as client:
            refused = await client.call_tool(
                "store_memory", {"agent_id": "bot", "key": "hq", "value": "Faro", "scope": "global"}
            )
            assert FIX in refusal(refused)
            deleted = await client.call_tool("delete_memory", {"memory_id": seeded.global_id})
            assert FIX in refusal(deleted)
            read = await client.call_tool("get_memory", {"memory_id": seeded.global_id})
            assert not read.is_error and read.structured_content is not None
            assert read.structured_content["value"] == "Porto"
            found = await client.call_tool("search_knowledge", {"query": "deploy"})
            assert not found.is_error
        async with http_client(live.url, keys.writer) as client:
            stored = await client.call_tool(
                "store_memory", {"agent_id": "bot", "key": "hq", "value": "Faro", "scope": "global"}
            )
            assert not stored.is_error, stored.content
        with MemoryClient(live.url, api_key=keys.reader) as reader:
            with pytest.raises(AuthError) as caught:
                reader.delete(seeded.global_id)
            assert caught.value.status == 403 and FIX in str(caught.value)
            with pytest.raises(AuthError):
                reader.add_document("Policy", "No Friday deploys.")
        with MemoryClient(live.url, api_key=keys.writer) as writer:
            assert writer.get(seeded.global_id)["value"] == "Faro"  # the writer's change
            assert writer.delete_document(seeded.document_id)["deleted"] is True
    finally:
        live.server.should_exit = True
        live.thread.join(timeout=10)


async def test_mcp_over_stdio_refuses_it_too(tmp_path: Path):
    db = tmp_path / "mcp.db"
    records = open_records(f"sqlite:///{db}")
    try:
        keys = make_keys(ApiKeys(records))
    finally:
        records.close()
    shared = {"key": "hq", "value": "Porto", "scope": "global"}
    async with stdio_client(db, keys.reader, "--agent-id", "bot") as client:
        assert FIX in refusal(await client.call_tool("store_memory", shared))
        own = await client.call_tool("store_memory", {"key": "tea", "value": "green"})
        assert not own.is_error, own.content
    async with stdio_client(db, keys.writer, "--agent-id", "bot") as client:
        stored = await client.call_tool("store_memory", shared)
        assert not stored.is_error, stored.content
    async with stdio_client(db, keys.reader, "--agent-id", "bot") as client:
        listed = await client.call_tool("list_memories", {"scope": "global"})
        assert listed.structured_content is not None
        assert [m["value"] for m in listed.structured_content["memories"]] == ["Porto"]
