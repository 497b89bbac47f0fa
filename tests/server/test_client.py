"""MemoryClient and AsyncMemoryClient against a real server over real HTTP."""

import pytest

from memstack import ConfigError, InvalidInput, NotFound, StoreUnavailable
from memstack.client import AsyncMemoryClient, MemoryClient
from tests.server.conftest import Keys, LiveServer


def test_sync_client_round_trip(live: LiveServer, keys: Keys):
    with MemoryClient(live.url, api_key=keys.acme) as client:
        assert client.health()["status"] == "ok"
        created = client.store(
            "bot", "coding-style", "Use type hints everywhere.", metadata={"src": "review"}
        )
        assert client.get(created["id"])["metadata"] == {"src": "review"}
        assert (
            client.search("type hints", agent_id="bot")["results"][0]["memory"]["id"]
            == created["id"]
        )
        assert client.list(agent_id="bot")["total"] == 1
        updated = client.update(created["id"], value="Use type hints and dataclasses.", ttl=3600)
        assert updated["expires_at"] is not None
        assert client.update(created["id"], ttl=None)["expires_at"] is None
        assert "<memories>" in client.context("bot")["memories_block"]
        doc = client.add_document("Guide", "Deploy on Tuesdays.", tags=["ops"])
        assert client.search_knowledge("deploy")["results"][0]["document_id"] == doc["id"]
        assert client.list_documents()["total"] == 1
        client.delete_document(doc["id"])
        client.delete(created["id"])
        with pytest.raises(NotFound):
            client.get(created["id"])


async def test_async_client_round_trip(live: LiveServer, keys: Keys):
    async with AsyncMemoryClient(live.url, api_key=keys.acme) as client:
        created = await client.store("bot", "deploy", "Blue-green only.", scope="global")
        found = await client.search("blue-green", scope="global")
        assert found["results"][0]["memory"]["id"] == created["id"]
        page = await client.list(scope="global")
        assert [m["key"] for m in page["memories"]] == ["deploy"]


@pytest.mark.parametrize(
    ("call", "error", "field"),
    [
        (lambda c: c.store("bot", "k", ""), InvalidInput, "value"),
        (lambda c: c.store("bot", "k", "v", scope="team"), InvalidInput, "scope"),
        (lambda c: c.store("bot", "k", "v", ttl="someday"), InvalidInput, "ttl"),
        (lambda c: c.get("mem_missing"), NotFound, "id"),
        (lambda c: c.search("x", limit=0), InvalidInput, "limit"),
    ],
)
def test_server_errors_become_memstack_errors(live: LiveServer, keys: Keys, call, error, field):
    with MemoryClient(live.url, api_key=keys.acme) as client, pytest.raises(error) as excinfo:
        call(client)
    assert excinfo.value.field == field


def test_bad_key_and_unreachable_server(live: LiveServer):
    with (
        MemoryClient(live.url, api_key="msk_bad") as client,
        pytest.raises(ConfigError, match="401"),
    ):
        client.list()
    with (
        MemoryClient("http://127.0.0.1:9", api_key="msk_x", timeout=2) as client,
        pytest.raises(StoreUnavailable),
    ):
        client.list()
    with pytest.raises(ConfigError, match="api_key"):
        MemoryClient(live.url, api_key="")
    with MemoryClient(live.url, api_key="k") as client, pytest.raises(InvalidInput):
        client.get("a/b")
