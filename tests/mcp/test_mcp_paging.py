"""The MCP ``list_memories`` tool pages by cursor, as ``GET /api/memories`` does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mcp.types import CallToolResult, TextContent

from tests.mcp.conftest import Keys, stdio_client


def _ok(result: CallToolResult) -> dict[str, Any]:
    assert not result.is_error, result.content
    structured: dict[str, Any] | None = result.structured_content
    assert structured is not None
    return structured


async def test_list_memories_walks_every_page_by_cursor(db: Path, keys: Keys) -> None:
    async with stdio_client(db, keys.acme, "--agent-id", "bot") as client:
        stored = [
            _ok(await client.call_tool("store_memory", {"key": f"k{n}", "value": f"fact {n}"}))
            for n in range(5)
        ]
        seen: list[str] = []
        arguments: dict[str, Any] = {"agent_id": "bot", "limit": 2}
        for _ in range(5):
            page = _ok(await client.call_tool("list_memories", arguments))
            seen += [m["id"] for m in page["memories"]]
            if page["next_cursor"] is None:
                break
            arguments["cursor"] = page["next_cursor"]
        assert sorted(seen) == sorted(m["id"] for m in stored) and len(seen) == 5

        refused = await client.call_tool("list_memories", {"cursor": "not-a-cursor"})
        assert refused.is_error and isinstance(refused.content[0], TextContent)
        assert "cursor" in refused.content[0].text
        assert "next_cursor" in refused.content[0].text
