"""The typed client against a real server over real HTTP: environment defaults,
AuthError, bulk delete (erasure) and its tenant isolation, JSONL export and import into
a fresh database, and mypy seeing every return type (a forgotten await is an error)."""

import io
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from memstack import ConfigError, InvalidInput
from memstack.client import AsyncMemoryClient, AuthError, MemoryClient
from memstack.embeddings import HashEmbedder
from memstack.wiring import open_services
from tests.server.conftest import Keys, LiveServer, auth, serve_in_thread


@pytest.fixture
def fresh(tmp_path: Path) -> Iterator[tuple[LiveServer, str]]:
    """A second server on its own new database, with a key for the same tenant name."""
    services = open_services(
        store_url=f"sqlite:///{tmp_path / 'fresh.db'}", redis_url=None, embedder=HashEmbedder()
    )
    key = services.keys.create(tenant="acme")[0]
    running = serve_in_thread(services)
    yield running, key
    running.server.should_exit = True
    running.thread.join(timeout=10)
    services.close()


def test_environment_defaults(live: LiveServer, keys: Keys, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("MEMSTACK_URL", live.url)
    monkeypatch.setenv("MEMSTACK_API_KEY", keys.acme)
    with MemoryClient() as client:
        assert client.store("bot", "k", "from the environment")["agent_id"] == "bot"
    with MemoryClient(api_key=keys.other) as client:  # an argument beats the environment
        assert client.list()["total"] == 0
    monkeypatch.delenv("MEMSTACK_API_KEY")
    with pytest.raises(ConfigError, match="MEMSTACK_API_KEY"):
        MemoryClient()


async def test_auth_errors_are_auth_errors(live: LiveServer, keys: Keys):
    with MemoryClient(live.url, api_key="msk_wrong") as client, pytest.raises(AuthError) as bad:
        client.list()
    assert bad.value.status == 401 and isinstance(bad.value, ConfigError)
    async with AsyncMemoryClient(live.url, api_key=keys.acme_bot_only) as client:
        with pytest.raises(AuthError) as limited:
            await client.store("ops", "k", "not this key's agent")
    assert limited.value.status == 403


def _seed(client: MemoryClient) -> None:
    client.store("alice-bot", "tea", "Drinks green tea.")
    client.store("alice-bot", "topic", "Asked about cellos.", scope="session", session_id="s1")
    client.store("alice-bot", "tz", "Lives in Lisbon.", scope="global")
    client.store("bob-bot", "tea", "Drinks coffee.", scope="session", session_id="s2")


def test_bulk_delete_erases_an_agent_in_every_tier(live: LiveServer, keys: Keys):
    with (
        MemoryClient(live.url, api_key=keys.acme) as acme,
        MemoryClient(live.url, api_key=keys.other) as other,
    ):
        _seed(acme)
        _seed(other)
        assert len(acme.context("alice-bot")["memories"]) == 2  # short-term tier filled
        assert acme.delete_many(agent_id="alice-bot") == {"deleted": 3}
        assert acme.list(agent_id="alice-bot")["total"] == 0
        assert acme.context("alice-bot")["memories"] == []
        assert acme.search("tea", agent_id="alice-bot")["results"] == []
        assert [m["agent_id"] for m in acme.list()["memories"]] == ["bob-bot"]
        assert other.list()["total"] == 4  # the other tenant's alice-bot is untouched
        assert acme.delete_many(session_id="s2") == {"deleted": 1}
        assert acme.list()["total"] == 0
        assert other.delete_many(agent_id="alice-bot", scope="session") == {"deleted": 1}
        assert other.list()["total"] == 3


async def test_bulk_delete_needs_a_selector(live: LiveServer, keys: Keys):
    async with httpx.AsyncClient(base_url=live.url) as http:
        response = await http.delete("/api/memories", headers=auth(keys.acme))
        limited = await http.delete(
            "/api/memories", params={"agent_id": "ops"}, headers=auth(keys.acme_bot_only)
        )
    assert response.status_code == 422
    assert response.json()["error"]["field"] == "agent_id"
    assert limited.status_code == 403
    with MemoryClient(live.url, api_key=keys.acme) as client, pytest.raises(InvalidInput):
        client.delete_many()


def test_export_then_import_into_a_fresh_database(
    live: LiveServer, keys: Keys, fresh: tuple[LiveServer, str]
):
    target_server, target_key = fresh
    exported = io.StringIO()
    with MemoryClient(live.url, api_key=keys.acme) as source:
        _seed(source)
        source.store("bob-bot", "plan", "Ships Friday.", metadata={"tags": ["ops"]}, ttl=3600)
        assert source.export_jsonl(exported) == 5
        originals = source.list()["memories"]
    lines = exported.getvalue().splitlines()
    assert len(lines) == 5 and all(json.loads(line)["id"].startswith("mem_") for line in lines)
    with MemoryClient(target_server.url, api_key=target_key) as target:
        for held in (0, 5):  # the second import finds every memory held and changes nothing
            result = target.import_jsonl(io.StringIO(exported.getvalue()))
            assert (result.imported, result.skipped, result.expired) == (5 - held, held, 0)
            restored = target.list()["memories"]
            assert _identity(restored) == _identity(originals)


def _identity(memories):
    fields = (
        "id",
        "agent_id",
        "scope",
        "key",
        "value",
        "session_id",
        "metadata",
        "expires_at",
        "provenance",
        "provenance_detail",
    )
    return sorted(tuple(str(m[f]) for f in fields) for m in memories)


@pytest.mark.parametrize(
    ("bad", "problem"),
    [
        ("{not json", "is not JSON"),
        ('["a list"]', "not a JSON object"),
        ('{"agent_id": "a", "scope": "agent", "key": "k"}', "needs value"),
        ('{"agent_id": "a", "scope": "team", "key": "k", "value": "v"}', "scope 'team'"),
    ],
)
def test_import_refuses_a_malformed_line_before_writing(
    live: LiveServer, keys: Keys, bad: str, problem: str
):
    good = json.dumps({"agent_id": "a", "scope": "agent", "key": "k", "value": "v"})
    with MemoryClient(live.url, api_key=keys.acme) as client:
        with pytest.raises(InvalidInput, match=problem) as refused:
            client.import_jsonl(io.StringIO(f"{good}\n\n{bad}\n"))
        assert refused.value.field == "line 3"
        assert client.list()["total"] == 0


SNIPPET = """
from memstack.client import AsyncMemoryClient, MemoryClient

def blocking(client: MemoryClient) -> str:
    return client.get("mem_x")["value"]

async def forgot(client: AsyncMemoryClient) -> str:
    return client.get("mem_x")["value"]

async def awaited(client: AsyncMemoryClient) -> int:
    return (await client.delete_many(agent_id="a"))["deleted"]

def wrong_field(client: MemoryClient) -> str:
    return client.search("q")["results"][0]["memory"]["valu"]
"""


def test_mypy_sees_the_types_and_a_forgotten_await(tmp_path: Path):
    source = tmp_path / "snippet.py"
    source.write_text(SNIPPET)
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--cache-dir",
            str(tmp_path / "cache"),
            str(source),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    errors = [line for line in result.stdout.splitlines() if ": error:" in line]
    # Lines 5 and 11 are clean: under --strict a return of Any would be an error there.
    assert {line.split(":")[1] for line in errors} == {"8", "14"}, result.stdout
    assert 'Maybe you forgot to use "await"?' in result.stdout
    assert '"valu" is not a valid TypedDict key' in result.stdout
