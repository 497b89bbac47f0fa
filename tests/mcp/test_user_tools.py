"""The users' conversation memory over MCP (issue 32): ``add_turns``, ``remember``,
``recall``, ``get_recalled_context`` and ``forget`` through the official client, over
stdio (``memstack mcp``) and streamable HTTP (``memstack serve``), against the service
and the REST routes they stand beside."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from memstack.bench.spawn import SpawnedServer, spawned_server
from memstack.embeddings import HashEmbedder
from memstack.service.api_keys import ApiKeys
from memstack.transports.user_schemas import recalled_out
from memstack.wiring import open_records, open_services
from tests.mcp.conftest import http_client, stdio_client
from tests.mcp.test_stdio import error_text, ok

USER_TOOLS = {"add_turns", "remember", "recall", "get_recalled_context", "forget"}
QUERY = "When did Caroline move to Berlin?"
TURNS: list[dict[str, Any]] = [
    {
        "id": "t1",
        "speaker": "Caroline",
        "text": "I moved to Berlin last spring.",
        "time": "2026-05-08T09:00:00Z",
        "metadata": {"channel": "web", "tags": ["move"]},
    },
    {"id": "t2", "speaker": "Melanie", "text": "How do you like the city?", "time": 1778230830},
    {
        "id": "t3",
        "role": "user",
        "name": "Caroline",
        "content": "I love it, the lakes are great.",
        "time": "2026-05-08T09:01:00Z",
    },
]
SECRET_TURN = {"id": "t4", "speaker": "Caroline", "text": "my key is AKIAIOSFODNN7Q3ZJ5WB"}


@dataclass(frozen=True)
class UserKeys:
    acme: str
    other: str
    """Another tenant's, with the long-term right too."""
    off: str
    """An acme key without the long-term right: long-term memory is off for it."""


def create_user_keys(db: Path) -> UserKeys:
    records = open_records(f"sqlite:///{db}")
    try:
        keys = ApiKeys(records)
        return UserKeys(
            acme=keys.create(tenant="acme", long_term=True)[0],
            other=keys.create(tenant="other", long_term=True)[0],
            off=keys.create(tenant="acme")[0],
        )
    finally:
        records.close()


@pytest.fixture
def user_keys(db: Path) -> UserKeys:
    return create_user_keys(db)


async def _service_recall(db: Path, key: str, user_id: str, query: str) -> list[dict[str, Any]]:
    """The service's own recall over the same database, as REST's JSON (nothing touched)."""
    services = open_services(store_url=f"sqlite:///{db}", redis_url=None, embedder=HashEmbedder())
    try:
        caller = services.keys.authenticate(key)
        assert caller is not None
        found = await services.users.recall(caller, user_id, query, touch=False)
        results: list[dict[str, Any]] = recalled_out(found).model_dump(mode="json")["results"]
        return results
    finally:
        services.close()


def _same_results(got: list[dict[str, Any]], expected: list[dict[str, Any]]) -> None:
    """Same memories in the same order with the same fields; scores equal but for the
    recency that decayed between the two recalls."""
    assert [r["id"] for r in got] == [r["id"] for r in expected]
    for mine, theirs in zip(got, expected, strict=True):
        assert {k: v for k, v in mine.items() if k not in ("score", "scores")} == {
            k: v for k, v in theirs.items() if k not in ("score", "scores")
        }
        assert mine["scores"].pop("inherited_from") == theirs["scores"].pop("inherited_from")
        assert mine["scores"] == pytest.approx(theirs["scores"], rel=1e-6)
        assert mine["score"] == pytest.approx(theirs["score"], rel=1e-6)


async def test_stdio_stores_turns_recalls_them_and_forgets(db: Path, user_keys: UserKeys):
    async with stdio_client(db, user_keys.acme) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        assert USER_TOOLS <= set(listed)
        assert listed["recall"].annotations is not None
        assert listed["recall"].annotations.read_only_hint is True
        assert listed["forget"].annotations is not None
        assert listed["forget"].annotations.destructive_hint is True
        assert listed["add_turns"].input_schema["required"] == ["user_id", "turns"]

        added = ok(
            await client.call_tool(
                "add_turns", {"user_id": "u1", "turns": [*TURNS, SECRET_TURN], "session_id": "s1"}
            )
        )
        assert [(t["id"], t["outcome"]) for t in added["turns"]] == [
            ("t1", "stored"),
            ("t2", "stored"),
            ("t3", "stored"),
            ("t4", "refused"),
        ]
        assert "secret" in added["turns"][3]["reason"] and added["job_id"] is None
        again = ok(
            await client.call_tool(
                "add_turns", {"user_id": "u1", "turns": TURNS[:1], "session_id": "s1"}
            )
        )
        assert [(t["id"], t["outcome"]) for t in again["turns"]] == [("t1", "duplicate")]

        found = ok(
            await client.call_tool("recall", {"user_id": "u1", "query": QUERY, "touch": False})
        )
        first = found["results"][0]
        assert (first["id"], first["text"]) == ("t1", "Caroline: I moved to Berlin last spring.")
        assert first["metadata"] == TURNS[0]["metadata"]  # the turn's own metadata, as given
        assert (first["speaker"], first["session_id"], first["valid_from"]) == (
            "Caroline",
            "s1",
            "2026-05-08T09:00:00.000Z",
        )
        assert "t4" not in [r["id"] for r in found["results"]]

        block = ok(
            await client.call_tool("get_recalled_context", {"user_id": "u1", "query": QUERY})
        )
        assert block["block"].startswith("<recalled-memories>")
        assert "Caroline: I moved to Berlin last spring." in block["block"]

        ok(await client.call_tool("forget", {"user_id": "u1", "memory_id": "t1"}))
        text = error_text(await client.call_tool("forget", {"user_id": "u1", "memory_id": "t1"}))
        assert "no memory with this id for this user" in text
        after = ok(await client.call_tool("recall", {"user_id": "u1", "query": QUERY}))
        assert "t1" not in [r["id"] for r in after["results"]]


async def test_stdio_recall_ranks_as_the_service_does(db: Path, user_keys: UserKeys):
    async with stdio_client(db, user_keys.acme) as client:
        ok(
            await client.call_tool(
                "add_turns", {"user_id": "u1", "turns": TURNS, "session_id": "s1"}
            )
        )
        ok(
            await client.call_tool(
                "remember", {"user_id": "u1", "text": "Caroline lives in Berlin."}
            )
        )
        found = ok(
            await client.call_tool("recall", {"user_id": "u1", "query": QUERY, "touch": False})
        )
    assert len(found["results"]) == 4
    _same_results(found["results"], await _service_recall(db, user_keys.acme, "u1", QUERY))


async def test_stdio_remember_dedupes_and_supersedes(db: Path, user_keys: UserKeys):
    async with stdio_client(db, user_keys.acme) as client:
        fact = {"user_id": "u1", "text": "Caroline lives in Berlin.", "kind": "identity"}
        stored = ok(await client.call_tool("remember", fact))
        assert stored["outcome"] == "stored" and stored["id"]
        assert ok(await client.call_tool("remember", fact)) == {
            "id": stored["id"],
            "outcome": "duplicate",
            "reason": None,
        }
        moved = ok(
            await client.call_tool(
                "remember",
                {"user_id": "u1", "text": "Caroline moved to Oslo.", "supersedes": [stored["id"]]},
            )
        )
        now = ok(await client.call_tool("recall", {"user_id": "u1", "query": "Caroline city"}))
        assert [r["id"] for r in now["results"]] == [moved["id"]]
        every = ok(
            await client.call_tool(
                "recall",
                {"user_id": "u1", "query": "Caroline city", "include_superseded": True},
            )
        )
        closed = next(r for r in every["results"] if r["id"] == stored["id"])
        assert (closed["superseded_by"], closed["kind"]) == (moved["id"], "identity")


# (tool, arguments, words the error must carry: the field at fault and the fix)
BAD_CALLS: list[tuple[str, dict[str, Any], list[str]]] = [
    (
        "add_turns",
        {
            "user_id": "u1",
            "turns": [{"speaker": "A", "role": "user", "content": "hi"}],
            "session_id": "s",
        },
        ["turns.0.speaker", "not both"],
    ),
    (
        "add_turns",
        {"user_id": "u1", "turns": [{"speaker": "A", "text": "hi"}]},
        ["turns.0.session_id"],
    ),
    ("add_turns", {"user_id": "u1", "turns": []}, ["turns", "at least 1"]),
    ("recall", {"user_id": "u1", "query": "x", "k": 0}, ["k", "greater than or equal to 1"]),
    ("recall", {"user_id": "", "query": "x"}, ["user_id"]),
    ("recall", {"user_id": "u1", "query": "x", "as_of": "yesterday"}, ["as_of", "ISO 8601"]),
    ("remember", {"user_id": "u1", "text": "x", "kind": "rumour"}, ["kind", "preference"]),
    ("remember", {"user_id": "u1", "text": "x", "importance": 2}, ["importance", "1"]),
]


async def test_stdio_bad_calls_are_tool_errors_naming_the_field(db: Path, user_keys: UserKeys):
    async with stdio_client(db, user_keys.acme) as client:
        for tool, arguments, words in BAD_CALLS:
            text = error_text(await client.call_tool(tool, arguments))
            for word in words:
                assert word in text, (tool, arguments, text)
        found = ok(await client.call_tool("recall", {"user_id": "u1", "query": "hi"}))
        assert found["results"] == []  # nothing of it was stored


async def test_stdio_follows_the_opt_in_and_the_request_veto(db: Path, user_keys: UserKeys):
    turn: dict[str, Any] = {"user_id": "u1", "turns": TURNS[:1], "session_id": "s1"}
    async with stdio_client(db, user_keys.off) as client:
        calls: list[tuple[str, dict[str, Any]]] = [
            ("add_turns", turn),
            ("recall", {"user_id": "u1", "query": QUERY}),
            ("forget", {"user_id": "u1", "memory_id": "t1"}),
        ]
        for tool, arguments in calls:
            text = error_text(await client.call_tool(tool, arguments))
            assert "MEMSTACK_MEMORY_ENABLED=1" in text and "--long-term" in text, text
        vetoed = ok(await client.call_tool("add_turns", {**turn, "memory_enabled": False}))
        assert [t["outcome"] for t in vetoed["turns"]] == ["skipped"]
    async with stdio_client(db, user_keys.acme) as client:
        skipped = ok(
            await client.call_tool(
                "remember", {"user_id": "u1", "text": "A fact.", "memory_enabled": False}
            )
        )
        assert skipped == {"id": None, "outcome": "skipped", "reason": None}
        ok(await client.call_tool("add_turns", turn))
        assert ok(
            await client.call_tool(
                "recall", {"user_id": "u1", "query": QUERY, "memory_enabled": False}
            )
        ) == {"results": []}
        assert ok(
            await client.call_tool(
                "get_recalled_context", {"user_id": "u1", "query": QUERY, "memory_enabled": False}
            )
        ) == {"block": ""}
        found = ok(await client.call_tool("recall", {"user_id": "u1", "query": QUERY}))
        assert [r["id"] for r in found["results"]] == ["t1"]  # only the vetoed turns are missing


async def test_stdio_keeps_each_tenant_s_users_apart(db: Path, user_keys: UserKeys):
    async with stdio_client(db, user_keys.acme) as client:
        ok(
            await client.call_tool(
                "add_turns", {"user_id": "u1", "turns": TURNS, "session_id": "s1"}
            )
        )
    async with stdio_client(db, user_keys.other) as client:  # the same user id, another tenant
        assert ok(await client.call_tool("recall", {"user_id": "u1", "query": QUERY})) == {
            "results": []
        }
        block = ok(
            await client.call_tool("get_recalled_context", {"user_id": "u1", "query": QUERY})
        )
        assert block == {"block": ""}
        text = error_text(await client.call_tool("forget", {"user_id": "u1", "memory_id": "t1"}))
        assert "no memory" in text
        mine = ok(
            await client.call_tool(
                "add_turns", {"user_id": "u1", "turns": TURNS[:1], "session_id": "s1"}
            )
        )
        assert [t["outcome"] for t in mine["turns"]] == ["stored"]  # not acme's t1
    async with stdio_client(db, user_keys.acme) as client:
        found = ok(await client.call_tool("recall", {"user_id": "u1", "query": QUERY}))
        assert sorted(r["id"] for r in found["results"]) == ["t1", "t2", "t3"]


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[SpawnedServer, UserKeys]]:
    with spawned_server("hash") as server:
        yield server, create_user_keys(server.db)


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_http_recall_is_rest_s_recall(served: tuple[SpawnedServer, UserKeys], mode: str):
    server, keys = served
    user = f"u-{mode}"
    headers = {"Authorization": f"Bearer {keys.acme}"}
    async with http_client(server.url, keys.acme, mode=mode) as client:
        assert USER_TOOLS <= {t.name for t in (await client.list_tools()).tools}
        ok(
            await client.call_tool(
                "add_turns", {"user_id": user, "turns": TURNS, "session_id": "s1"}
            )
        )
        found = ok(
            await client.call_tool("recall", {"user_id": user, "query": QUERY, "touch": False})
        )
        rest = httpx.post(
            f"{server.url}/api/users/{user}/recall",
            json={"query": QUERY, "touch": False},
            headers=headers,
        )
        assert rest.status_code == 200
        assert len(found["results"]) == 3
        _same_results(found["results"], rest.json()["results"])

        block = ok(
            await client.call_tool("get_recalled_context", {"user_id": user, "query": QUERY})
        )
        context = httpx.get(
            f"{server.url}/api/users/{user}/context", params={"query": QUERY}, headers=headers
        )
        assert context.json() == block
    async with http_client(server.url, keys.other, mode=mode) as client:  # another tenant
        assert ok(await client.call_tool("recall", {"user_id": user, "query": QUERY})) == {
            "results": []
        }
