"""``memstack mcp`` over stdio, spawned as a subprocess and driven by the official client."""

from __future__ import annotations

import itertools
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from mcp.types import CallToolResult, TextContent

from memstack.cli import main
from memstack.service.api_keys import ApiKeys
from memstack.wiring import open_records
from tests.mcp.conftest import EMBEDDER_ENV, Keys, mcp_command, stdio_client

TOOLS = {
    "store_memory",
    "search_memories",
    "list_memories",
    "get_memory",
    "memory_history",
    "delete_memory",
    "get_context",
    "search_knowledge",
    # an agent's memories managed (issue 34; tests/mcp/test_manage_tools.py)
    "update_memory",
    "delete_agent_memories",
    "list_agents",
    # a user's conversation memory (issue 32; tests/mcp/test_user_tools.py)
    "add_turns",
    "remember",
    "recall",
    "get_recalled_context",
    "forget",
}


def ok(result: CallToolResult) -> dict[str, Any]:
    assert not result.is_error, result.content
    structured: dict[str, Any] | None = result.structured_content
    assert structured is not None
    return structured


def error_text(result: CallToolResult) -> str:
    assert result.is_error
    assert isinstance(result.content[0], TextContent)
    return result.content[0].text


async def test_stdio_stores_searches_and_injects(db: Path, keys: Keys):
    async with stdio_client(db, keys.acme, "--agent-id", "bot") as client:
        listed = await client.list_tools()
        assert {t.name for t in listed.tools} == TOOLS
        store = next(t for t in listed.tools if t.name == "store_memory")
        assert store.input_schema["required"] == ["key", "value"]  # spec 004's parameters

        stored = ok(
            await client.call_tool(
                "store_memory", {"key": "language", "value": "The user prefers French."}
            )
        )
        assert (stored["agent_id"], stored["scope"]) == ("bot", "agent")  # the default agent
        ok(
            await client.call_tool(
                "store_memory",
                {"key": "stack", "value": "Python 3.12 and FastAPI.", "scope": "global"},
            )
        )

        found = ok(await client.call_tool("search_memories", {"query": "French", "limit": 1}))
        assert [h["memory"]["id"] for h in found["results"]] == [stored["id"]]
        assert ok(await client.call_tool("get_memory", {"memory_id": stored["id"]})) == stored
        page = ok(await client.call_tool("list_memories", {"agent_id": "bot"}))
        assert page["total"] == 2

        context = ok(await client.call_tool("get_context", {}))
        assert '<memory key="language" scope="agent">' in context["memories_block"]
        assert '<memory key="stack" scope="global">' in context["memories_block"]
        resource = await client.read_resource("memstack://context/bot")
        assert resource.contents[0].text == context["memories_block"]  # type: ignore[union-attr]

        ok(await client.call_tool("delete_memory", {"memory_id": stored["id"]}))
        after = ok(await client.call_tool("search_memories", {"query": "French"}))
        assert stored["id"] not in [h["memory"]["id"] for h in after["results"]]


# (tool, arguments, words the error must carry: the field at fault and the fix)
BAD_CALLS: list[tuple[str, dict[str, Any], list[str]]] = [
    (
        "store_memory",
        {"key": "k", "value": "v", "session_id": "s1"},
        ["session_id", "only for scope 'session'"],
    ),
    ("store_memory", {"key": "k", "value": "v", "ttl": "yesterday"}, ["ttl", "ISO 8601"]),
    (
        "store_memory",
        {"key": "aws", "value": "AKIAIOSFODNN7Q3ZJ5WB is the key"},
        ["secret", "never kept"],
    ),
    ("store_memory", {"key": "k", "value": "v", "agent_id": "billing"}, ["billing", "limited"]),
    ("store_memory", {"key": "", "value": "v"}, ["key", "at least 1 character"]),
    ("get_memory", {"memory_id": "mem_nope"}, ["no memory 'mem_nope'"]),
    ("memory_history", {"memory_id": "mem_nope"}, ["no memory 'mem_nope'"]),
    ("list_memories", {"as_of": 1, "include_superseded": True}, ["as_of", "drop one"]),
    ("get_context", {"budget": 10}, ["budget", "greater than or equal to 200"]),
    ("search_memories", {"query": "x", "mode": "fuzzy"}, ["mode", "hybrid"]),
    (
        "store_memory",
        {"key": "k", "value": "v", "provenance": "rumour"},
        ["provenance", "'user_stated', 'extracted', 'tool_output' or 'imported'"],
    ),
    ("list_memories", {"provenances": ["rumour"]}, ["provenances", "tool_output"]),
]


async def test_stdio_bad_calls_are_tool_errors_with_the_service_message(db: Path, keys: Keys):
    async with stdio_client(db, keys.acme_bot_only, "--agent-id", "bot") as client:
        for tool, arguments, words in BAD_CALLS:
            text = error_text(await client.call_tool(tool, arguments))
            for word in words:
                assert word in text, (tool, arguments, text)
        # Nothing of it was stored.
        assert ok(await client.call_tool("list_memories", {}))["total"] == 0


async def test_stdio_history_keeps_every_value_and_as_of_answers_with_the_one_then(
    db: Path, keys: Keys
):
    values = ["Bob lives in Lisbon.", "Bob lives in Berlin.", "Bob lives in Oslo."]
    async with stdio_client(db, keys.acme, "--agent-id", "bot") as client:
        stored, moments = [], []
        for value in values:  # the same key again: a new version of the same memory
            stored.append(
                ok(await client.call_tool("store_memory", {"key": "bob", "value": value}))
            )
            moments.append(time.time())  # within this version's validity, before the next
        assert len({m["id"] for m in stored}) == 1
        memory_id = stored[0]["id"]

        history = ok(await client.call_tool("memory_history", {"memory_id": memory_id}))
        assert history["id"] == memory_id
        versions = history["versions"]
        assert [v["value"] for v in versions] == values
        assert versions[-1] == stored[-1]  # the current one, as store_memory answered it
        assert versions[0]["valid_from"] == stored[0]["valid_from"]
        for old, new in itertools.pairwise(versions):
            assert old["valid_to"] == new["valid_from"]  # no gap, no overlap
            assert (old["superseded_by"], old["closed_reason"]) == (new["version_id"], "superseded")
        last = versions[-1]
        assert (last["valid_to"], last["superseded_by"], last["closed_reason"]) == (
            None,
            None,
            None,
        )

        for moment, value in zip(moments, values, strict=True):
            page = ok(await client.call_tool("list_memories", {"as_of": moment}))
            assert [m["value"] for m in page["memories"]] == [value]
            found = ok(
                await client.call_tool(
                    "search_memories", {"query": "Where does Bob live?", "as_of": moment}
                )
            )
            assert [h["memory"]["value"] for h in found["results"]] == [value]
        now = ok(await client.call_tool("list_memories", {}))
        assert [m["value"] for m in now["memories"]] == values[-1:]
        every = ok(await client.call_tool("list_memories", {"include_superseded": True}))
        assert sorted(m["value"] for m in every["memories"]) == sorted(values)


async def test_stdio_stores_provenance_and_filters_by_it(db: Path, keys: Keys):
    async with stdio_client(db, keys.acme, "--agent-id", "bot") as client:
        told = ok(await client.call_tool("store_memory", {"key": "tea", "value": "Green tea."}))
        assert (told["provenance"], told["provenance_detail"]) == ("user_stated", None)
        fetched = ok(
            await client.call_tool(
                "store_memory",
                {
                    "key": "weather",
                    "value": "Green hills, rain at noon.",
                    "provenance": "tool_output",
                    "provenance_detail": "weather-api",
                },
            )
        )
        assert (fetched["provenance"], fetched["provenance_detail"]) == (
            "tool_output",
            "weather-api",
        )
        page = ok(await client.call_tool("list_memories", {"provenances": ["tool_output"]}))
        assert [m["id"] for m in page["memories"]] == [fetched["id"]]
        found = ok(
            await client.call_tool(
                "search_memories",
                {"query": "green", "mode": "text", "provenances": ["user_stated"]},
            )
        )
        assert [(h["memory"]["id"], h["provenance"]) for h in found["results"]] == [
            (told["id"], "user_stated")
        ]


async def test_stdio_without_a_default_agent_asks_for_one(db: Path, keys: Keys):
    async with stdio_client(db, keys.acme) as client:
        text = error_text(await client.call_tool("store_memory", {"key": "k", "value": "v"}))
        assert "agent_id is required" in text and "--agent-id" in text


async def test_stdio_scopes_every_call_by_the_key_s_tenant(db: Path, keys: Keys):
    async with stdio_client(db, keys.acme, "--agent-id", "bot") as client:
        mine = ok(await client.call_tool("store_memory", {"key": "k", "value": "acme's plan"}))
    async with stdio_client(db, keys.other, "--agent-id", "bot") as client:
        assert ok(await client.call_tool("search_memories", {"query": "plan"}))["results"] == []
        text = error_text(await client.call_tool("get_memory", {"memory_id": mine["id"]}))
        assert "no memory" in text


async def test_a_key_revoked_while_the_server_runs_stops_working(db: Path, keys: Keys):
    async with stdio_client(db, keys.acme, "--agent-id", "bot") as client:
        ok(await client.call_tool("list_memories", {}))
        records = open_records(f"sqlite:///{db}")
        try:
            api_keys = ApiKeys(records)
            for info in api_keys.list(tenant="acme"):
                if info.active and info.agents is None:
                    api_keys.revoke(info.id)
        finally:
            records.close()
        text = error_text(await client.call_tool("list_memories", {}))
        assert "revoked" in text


@pytest.mark.parametrize(
    ("which", "args", "words"),
    [
        (None, [], ["MEMSTACK_API_KEY is not set", "memstack keys create"]),
        ("wrong", [], ["MEMSTACK_API_KEY is not a valid API key", "memstack keys create"]),
        ("revoked", [], ["MEMSTACK_API_KEY is not a valid API key"]),
        ("acme_bot_only", ["--agent-id", "billing"], ["may not act for agent 'billing'"]),
    ],
)
def test_a_missing_or_wrong_key_fails_at_start(
    db: Path, keys: Keys, which: str | None, args: list[str], words: list[str]
):
    key = {None: None, "wrong": "msk_0123456789abcdef_" + "x" * 43}.get(which) or (
        getattr(keys, which) if which else None
    )
    env = {"MEMSTACK_API_KEY": key, "MEMSTACK_AGENT_ID": None, **EMBEDDER_ENV}
    result = CliRunner().invoke(main, mcp_command(db, *args)[3:], env=env, input="")
    assert result.exit_code == 1
    assert result.stdout == ""  # stdout is the protocol's channel
    for word in words:
        assert word in result.stderr, result.stderr
