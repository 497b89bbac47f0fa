"""Streamable HTTP at /mcp of a real ``memstack serve`` process, through the official client."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from mcp import MCPError

from memstack.bench.spawn import SpawnedServer, spawned_server
from tests.mcp.conftest import Keys, create_keys, http_client
from tests.mcp.test_stdio import TOOLS, error_text, ok


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[SpawnedServer, Keys]]:
    """One server for the module, with keys of two tenants in its database."""
    with spawned_server("hash") as server:
        yield server, create_keys(server.db)


# Both protocol eras: "auto" negotiates the 2026 protocol, "legacy" the initialize
# handshake; the server answers them on different code paths.
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_http_stores_searches_and_injects_as_rest_does(
    served: tuple[SpawnedServer, Keys], mode: str
):
    server, keys = served
    agent = f"bot-{mode}"
    async with http_client(server.url, keys.acme, mode=mode) as client:
        assert {t.name for t in (await client.list_tools()).tools} == TOOLS
        stored = ok(
            await client.call_tool(
                "store_memory",
                {"agent_id": agent, "key": "language", "value": "The user prefers French."},
            )
        )
        found = ok(
            await client.call_tool("search_memories", {"query": "French", "agent_id": agent})
        )
        assert [h["memory"]["id"] for h in found["results"]] == [stored["id"]]
        context = ok(await client.call_tool("get_context", {"agent_id": agent}))

    rest = httpx.get(
        f"{server.url}/api/context",
        params={"agent_id": agent},
        headers={"Authorization": f"Bearer {keys.acme}"},
    )
    assert rest.status_code == 200
    assert context == rest.json()  # one code path, one shape


async def test_http_history_is_rest_s_history(served: tuple[SpawnedServer, Keys]):
    server, keys = served
    async with http_client(server.url, keys.acme) as client:
        for value in ("Tea.", "Green tea.", "Green tea, no sugar."):
            stored = ok(
                await client.call_tool(
                    "store_memory", {"agent_id": "drinks", "key": "fav", "value": value}
                )
            )
        history = ok(await client.call_tool("memory_history", {"memory_id": stored["id"]}))
    assert [v["value"] for v in history["versions"]] == ["Tea.", "Green tea.", stored["value"]]
    rest = httpx.get(
        f"{server.url}/api/memories/{stored['id']}/history",
        headers={"Authorization": f"Bearer {keys.acme}"},
    )
    assert rest.status_code == 200
    assert history == rest.json()  # one code path, one shape
    async with http_client(server.url, keys.other) as client:  # another tenant sees none
        text = error_text(await client.call_tool("memory_history", {"memory_id": stored["id"]}))
        assert f"no memory {stored['id']!r}" in text


async def test_http_scopes_every_call_by_the_bearer_key(served: tuple[SpawnedServer, Keys]):
    server, keys = served
    async with http_client(server.url, keys.acme) as client:
        mine = ok(
            await client.call_tool(
                "store_memory", {"agent_id": "planner", "key": "plan", "value": "acme's plan"}
            )
        )
    async with http_client(server.url, keys.other) as client:
        found = ok(await client.call_tool("search_memories", {"query": "acme's plan"}))
        assert found["results"] == []
        text = error_text(await client.call_tool("get_memory", {"memory_id": mine["id"]}))
        assert "no memory" in text
    async with http_client(server.url, keys.acme_bot_only) as client:
        text = error_text(await client.call_tool("list_memories", {"agent_id": "planner"}))
        assert "may not act for agent 'planner'" in text


@pytest.mark.parametrize("which", ["wrong", "revoked"])
async def test_http_refuses_a_wrong_key(served: tuple[SpawnedServer, Keys], which: str):
    server, keys = served
    key = keys.revoked if which == "revoked" else "msk_0123456789abcdef_" + "x" * 43
    with pytest.raises(BaseException) as raised:
        async with http_client(server.url, key) as client:
            await client.list_tools()
    assert _contains(raised.value, MCPError), raised.value


@pytest.mark.parametrize(
    ("headers", "message"),
    [
        ({}, "missing Bearer token"),
        ({"Authorization": "Basic dXNlcjpwYXNz"}, "missing Bearer token"),
        ({"Authorization": "Bearer msk_nope"}, "invalid or revoked API key."),
    ],
)
def test_http_answers_rest_s_401_before_the_mcp_layer(
    served: tuple[SpawnedServer, Keys], headers: dict[str, str], message: str
):
    server, _ = served
    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    reply = httpx.post(
        f"{server.url}/mcp",
        json=request,
        headers={"Accept": "application/json, text/event-stream", **headers},
    )
    assert reply.status_code == 401
    assert reply.headers["WWW-Authenticate"] == "Bearer"
    error = reply.json()["error"]
    assert error["code"] == "unauthorized" and message in error["message"]


def _contains(error: BaseException, kind: type[BaseException]) -> bool:
    if isinstance(error, kind):
        return True
    inner: Any = getattr(error, "exceptions", ())
    return any(_contains(e, kind) for e in inner)
