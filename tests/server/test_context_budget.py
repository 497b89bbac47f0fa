"""``GET /api/context`` and the MCP ``get_context`` tool inject every memory unless the
caller gives a budget; a budget's block says how many memories it left out."""

import json
import re
from typing import Any

import httpx
from mcp import Client

from memstack.service.principal import Principal
from memstack.transports.mcp.server import build_server
from memstack.wiring import Services
from tests.server.conftest import Keys, auth

LONG = "Deploys go out blue-green, one region at a time, after the canary holds. " * 30


async def _store_many(api: httpx.AsyncClient, key: str, count: int) -> None:
    for i in range(count):
        body = {"agent_id": "bot", "key": f"note-{i}", "value": f"{i}: {LONG}"}
        response = await api.post("/api/memories", json=body, headers=auth(key))
        assert response.status_code == 201, response.text


def _keys_in(block: str) -> list[str]:
    return re.findall(r'<memory key="([^"]+)"', block)


async def test_rest_context_injects_every_memory_by_default(api: httpx.AsyncClient, keys: Keys):
    await _store_many(api, keys.acme, 10)
    response = await api.get("/api/context?agent_id=bot", headers=auth(keys.acme))
    assert response.status_code == 200, response.text
    block = response.json()["memories_block"]
    assert sorted(_keys_in(block)) == sorted(f"note-{i}" for i in range(10))
    assert "left out" not in block


async def test_rest_context_with_a_budget_names_what_it_left_out(
    api: httpx.AsyncClient, keys: Keys
):
    await _store_many(api, keys.acme, 10)
    response = await api.get("/api/context?agent_id=bot&budget=5000", headers=auth(keys.acme))
    block = response.json()["memories_block"]
    shown = len(_keys_in(block))
    assert len(block) <= 5000 and 0 < shown < 10
    assert f"\n[{10 - shown} more memories left out to fit the budget]\n</memories>" in block
    bad = await api.get("/api/context?agent_id=bot&budget=10", headers=auth(keys.acme))
    assert bad.status_code == 422 and "budget" in bad.text


async def _mcp_context(services: Services, arguments: dict[str, Any]) -> str:
    async def caller() -> Principal:
        return Principal(tenant="acme")

    async with Client(build_server(services, caller)) as client:
        result = await client.call_tool("get_context", arguments)
    assert not result.is_error, result
    text = result.content[0].text  # type: ignore[union-attr]
    block: str = json.loads(text)["memories_block"]
    return block


async def test_mcp_get_context_injects_every_memory_by_default(
    api: httpx.AsyncClient, keys: Keys, services: Services
):
    await _store_many(api, keys.acme, 10)
    block = await _mcp_context(services, {"agent_id": "bot"})
    assert len(_keys_in(block)) == 10 and "left out" not in block
    budgeted = await _mcp_context(services, {"agent_id": "bot", "budget": 5000})
    shown = len(_keys_in(budgeted))
    assert 0 < shown < 10
    assert f"[{10 - shown} more memories left out to fit the budget]" in budgeted
