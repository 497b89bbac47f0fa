"""Issue 34 over MCP, through the official client and ``memstack mcp`` over stdio: a
search filtered by metadata, and the tools that change a memory, erase all of an
agent's memories (its key's right and ``confirm: true``) and list the agents."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mcp import Client

from tests.mcp.conftest import Keys, stdio_client
from tests.mcp.test_stdio import error_text, ok

MEMORIES: list[dict[str, Any]] = [
    {"key": "deploy", "value": "Deploys go out blue-green.", "metadata": {"tier": "a"}},
    {"key": "pager", "value": "Deploys page the on-call.", "metadata": {"tier": "b"}},
    {"key": "freeze", "value": "Deploys freeze on Fridays.", "metadata": {"tier": "c"}},
]


async def _store(client: Client, agent_id: str) -> dict[str, str]:
    ids = {}
    for memory in MEMORIES:
        stored = ok(await client.call_tool("store_memory", {**memory, "agent_id": agent_id}))
        ids[memory["key"]] = stored["id"]
    return ids


async def _keys(client: Client, ask: dict[str, Any]) -> set[str]:
    found = ok(await client.call_tool("search_memories", {"query": "deploys", **ask}))
    return {h["memory"]["key"] for h in found["results"]}


async def test_search_memories_filters_by_metadata(db: Path, keys: Keys):
    async with stdio_client(db, keys.acme) as client:
        await _store(client, "bot")
        assert await _keys(client, {"metadata": {"tier": "b"}}) == {"pager"}
        wanted = {"metadata": {"tier": {"$in": ["a", "c"]}}, "agent_id": "bot"}
        assert await _keys(client, wanted) == {"deploy", "freeze"}
        refused = await client.call_tool(
            "search_memories", {"query": "deploys", "metadata": {"tier": {"$gt": "a"}}}
        )
        assert "metadata.tier: unknown operator '$gt'" in error_text(refused)


async def test_update_memory_changes_what_it_is_given(db: Path, keys: Keys):
    async with stdio_client(db, keys.acme) as client:
        ids = await _store(client, "bot")
        timed = {"memory_id": ids["deploy"], "ttl": 3600}
        assert ok(await client.call_tool("update_memory", timed))["expires_at"] is not None
        changed = ok(
            await client.call_tool(
                "update_memory",
                {"memory_id": ids["deploy"], "value": "Deploys go out canary.", "remove_ttl": True},
            )
        )
        assert changed["value"] == "Deploys go out canary." and changed["expires_at"] is None
        assert changed["metadata"] == {"tier": "a"}  # left out: kept
        history = ok(await client.call_tool("memory_history", {"memory_id": ids["deploy"]}))
        assert [v["value"] for v in history["versions"]] == [
            "Deploys go out blue-green.",
            "Deploys go out canary.",
        ]
        for ask, says in (
            ({}, "nothing to change"),
            ({"ttl": 60, "remove_ttl": True}, "not both"),
            ({"value": "password=hunter2hunter2"}, "looks like a secret"),
        ):
            refused = await client.call_tool("update_memory", {"memory_id": ids["pager"], **ask})
            assert says in error_text(refused), ask
        missing = await client.call_tool("update_memory", {"memory_id": "mem_x", "value": "v"})
        assert "no memory" in error_text(missing)
        got = ok(await client.call_tool("get_memory", {"memory_id": ids["pager"]}))
        assert got["value"] == "Deploys page the on-call."


async def test_list_agents_and_delete_agent_memories(db: Path, keys: Keys):
    async with stdio_client(db, keys.acme) as client:
        await _store(client, "bot")
        await _store(client, "helper")
        listed = ok(await client.call_tool("list_agents", {}))
        assert listed["total"] == 2
        assert listed["agents"] == [
            {"agent_id": "bot", "memories": 3},
            {"agent_id": "helper", "memories": 3},
        ]
        page = ok(await client.call_tool("list_agents", {"limit": 1, "offset": 1}))
        assert [a["agent_id"] for a in page["agents"]] == ["helper"]

        unconfirmed = await client.call_tool(
            "delete_agent_memories", {"agent_id": "helper", "confirm": False}
        )
        assert "has 3 memories" in error_text(unconfirmed)
        assert "confirm: true" in error_text(unconfirmed)
        missing = await client.call_tool("delete_agent_memories", {"agent_id": "helper"})
        assert "confirm" in error_text(missing)
        assert ok(await client.call_tool("list_memories", {"agent_id": "helper"}))["total"] == 3

        erased = {"agent_id": "helper", "confirm": True}
        assert ok(await client.call_tool("delete_agent_memories", erased)) == {"deleted": 3}
        assert ok(await client.call_tool("list_memories", {"agent_id": "helper"}))["total"] == 0
        assert ok(await client.call_tool("list_memories", {"agent_id": "bot"}))["total"] == 3
        after = ok(await client.call_tool("list_agents", {}))
        assert [a for a in after["agents"] if a["memories"]] == [{"agent_id": "bot", "memories": 3}]


async def test_a_key_for_one_agent_sees_and_erases_only_its_own(db: Path, keys: Keys):
    async with stdio_client(db, keys.acme) as client:
        await _store(client, "bot")
        await _store(client, "helper")
    async with stdio_client(db, keys.acme_bot_only) as client:
        listed = ok(await client.call_tool("list_agents", {}))
        assert [a["agent_id"] for a in listed["agents"]] == ["bot"]
        refused = await client.call_tool(
            "delete_agent_memories", {"agent_id": "helper", "confirm": True}
        )
        assert "may not act for agent 'helper'" in error_text(refused)
    async with stdio_client(db, keys.other) as client:
        assert ok(await client.call_tool("list_agents", {}))["agents"] == []
    async with stdio_client(db, keys.acme) as client:
        assert ok(await client.call_tool("list_memories", {"agent_id": "helper"}))["total"] == 3
