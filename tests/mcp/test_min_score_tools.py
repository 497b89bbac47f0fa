"""``min_score`` over MCP (issues 33 and 34), through the official client and ``memstack
mcp`` over stdio: ``recall``, ``get_recalled_context`` and ``search_memories`` cut at the
calibrated relevance their results show; a bad threshold is a tool error naming it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mcp import Client

from tests.mcp.conftest import stdio_client
from tests.mcp.test_stdio import error_text, ok
from tests.mcp.test_user_tools import create_user_keys
from tests.service.test_min_score import QUERY, VALUES
from tests.service.test_users import CONVERSATION

TURNS = [
    {"speaker": speaker, "text": text, "session_id": session, "id": f"t{i}"}
    for i, (speaker, text, session) in enumerate(CONVERSATION)
]
BAD: list[Any] = [-0.1, 1.5, "0.5", True]


def _between(values: list[float]) -> float:
    """A threshold with some of ``values`` below it and some above."""
    distinct = sorted(set(values))
    assert len(distinct) >= 3, distinct
    middle = len(distinct) // 2
    return (distinct[middle - 1] + distinct[middle]) / 2


async def _cut_recall(client: Client) -> None:
    ask = {"user_id": "u1", "query": QUERY, "k": 9, "touch": False}
    found = ok(await client.call_tool("recall", ask))["results"]
    assert len(found) == 9 and all(0 <= r["scores"]["calibrated"] <= 1 for r in found)
    threshold = _between([r["scores"]["calibrated"] for r in found])
    cut = ok(await client.call_tool("recall", {**ask, "min_score": threshold}))["results"]
    expected = [r["id"] for r in found if r["scores"]["calibrated"] >= threshold]
    assert [r["id"] for r in cut] == expected and 0 < len(expected) < 9
    ask = {"user_id": "u1", "query": QUERY, "k": 9}
    every = ok(await client.call_tool("get_recalled_context", {**ask, "min_score": 0}))
    assert every["block"].count("\n- [") == 9
    none = ok(await client.call_tool("get_recalled_context", {**ask, "min_score": 1.0}))
    assert none == {"block": ""}


async def _cut_search(client: Client) -> None:
    ask = {"query": QUERY, "agent_id": "bot", "limit": len(VALUES)}
    hits = ok(await client.call_tool("search_memories", ask))["results"]
    assert len(hits) == len(VALUES) and all(0 <= h["calibrated"] <= 1 for h in hits)
    threshold = _between([h["calibrated"] for h in hits])
    cut = ok(await client.call_tool("search_memories", {**ask, "min_score": threshold}))
    expected = [h["memory"]["id"] for h in hits if h["calibrated"] >= threshold]
    assert [h["memory"]["id"] for h in cut["results"]] == expected
    assert 0 < len(expected) < len(hits)


async def test_every_tool_cuts_at_min_score_and_refuses_a_bad_one(db: Path):
    keys = create_user_keys(db)
    async with stdio_client(db, keys.acme, "--agent-id", "bot") as client:
        ok(await client.call_tool("add_turns", {"user_id": "u1", "turns": TURNS}))
        for name, value in VALUES.items():
            ok(await client.call_tool("store_memory", {"key": name, "value": value}))
        await _cut_recall(client)
        await _cut_search(client)
        for tool, ask in (
            ("recall", {"user_id": "u1", "query": "dog"}),
            ("get_recalled_context", {"user_id": "u1", "query": "dog"}),
            ("search_memories", {"query": "dog"}),
        ):
            for value in BAD:
                refused = await client.call_tool(tool, {**ask, "min_score": value})
                assert "min_score" in error_text(refused), (tool, value)
