"""The malformed-number table of ``tests/server/test_malformed_parity.py`` through the MCP
tools of a real ``memstack serve``: every numeric argument of every tool, sent as raw
JSON-RPC over ``/mcp``, gets a clear error naming the argument (a tool error, or a JSON-RPC
parse error for a body that is not JSON the server can read), the connection stays open,
and the server logs no traceback."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.mcp.conftest import create_keys
from tests.servers import serve_env, serving_memstack

# tool: its good arguments, and its numeric ones
TOOLS: dict[str, tuple[dict[str, Any], list[str]]] = {
    "store_memory": ({"agent_id": "mcp-bot", "key": "k", "value": "A fact."}, ["ttl"]),
    "search_memories": ({"query": "fact"}, ["limit", "as_of"]),
    "list_memories": ({}, ["limit", "offset", "as_of"]),
    "get_context": ({"agent_id": "mcp-bot"}, ["budget"]),
    "search_knowledge": ({"query": "refunds"}, ["limit"]),
}
# A literal as it appears in the request, not all of them JSON json.dumps writes.
REFUSED = {
    "2**1024": str(2**1024),
    "-2**1024": str(-(2**1024)),
    "NaN": "NaN",
    "Infinity": "Infinity",
    "-Infinity": "-Infinity",
    "1e400": "1e400",
    "a list": "[1]",
    "an object": '{"n": 1}',
}
UNREADABLE = {  # no JSON-RPC message can be read from these
    "10**5000": "1" + "0" * 5000,
    "deep 1,000": "[" * 1_000 + "]" * 1_000,
    "deep 100,000": "[" * 100_000 + "]" * 100_000,
}
TTL_BELOW_ONE = {"0": "0", "0.5": "0.5", "1e-133": "1e-133"}


@dataclass(frozen=True)
class Served:
    client: httpx.Client
    log: Path


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    tmp = tmp_path_factory.mktemp("mcp-malformed")
    db = tmp / "mcp.db"
    keys = create_keys(db)
    log = tmp / "serve.log"
    with (
        serving_memstack(["--db", str(db)], env=serve_env(), log=log) as server,
        httpx.Client(
            base_url=server.url,
            headers={
                "Authorization": f"Bearer {keys.acme}",
                "Accept": "application/json, text/event-stream",
            },
            timeout=30,
        ) as client,
    ):
        yield Served(client, log)


def _request(tool: str, arguments: dict[str, Any], field: str, literal: str) -> bytes:
    """A ``tools/call`` of ``tool`` with ``field`` set to ``literal``, written as is."""
    rest = json.dumps({k: v for k, v in arguments.items() if k != field})[1:-1]
    args = f'{{{rest}{", " if rest else ""}"{field}": {literal}}}'
    return (
        '{"jsonrpc": "2.0", "id": 7, "method": "tools/call", '
        f'"params": {{"name": "{tool}", "arguments": {args}}}}}'
    ).encode()


def _call(served: Served, body: bytes) -> httpx.Response:
    """``body`` posted to /mcp; the connection then serves the next request, and the
    server logged no traceback meanwhile."""
    logged = served.log.stat().st_size
    before = served.client.get("/healthz")
    answer = served.client.post("/mcp", content=body, headers={"Content-Type": "application/json"})
    after = served.client.get("/healthz")
    assert before.status_code == after.status_code == 200
    ports = [
        r.extensions["network_stream"].get_extra_info("client_addr")[1] for r in (before, after)
    ]
    assert ports[0] == ports[1], "the connection was not kept"
    with served.log.open("rb") as log:
        log.seek(logged)
        new = log.read().decode(errors="replace")
    assert "Traceback" not in new and "ERROR" not in new, new[-3000:]
    return answer


def _cases(values: dict[str, str]) -> list[tuple[str, str, str, str]]:
    return [
        (tool, field, name, literal)
        for tool, (_, fields) in TOOLS.items()
        for field in fields
        for name, literal in values.items()
    ]


def _id(value: object) -> str:
    return str(value)[:12]


@pytest.mark.parametrize(("tool", "field", "name", "literal"), _cases(REFUSED), ids=_id)
def test_a_bad_number_is_a_tool_error_naming_the_argument(
    served: Served, tool: str, field: str, name: str, literal: str
):
    answer = _call(served, _request(tool, TOOLS[tool][0], field, literal))
    assert answer.status_code == 200, answer.text[:300]
    result = answer.json()["result"]
    assert result["isError"] is True, (name, result)
    text = result["content"][0]["text"]
    assert field in text, (name, text)
    assert "Traceback" not in text


@pytest.mark.parametrize("literal", TTL_BELOW_ONE.values(), ids=TTL_BELOW_ONE.keys())
def test_a_ttl_below_one_second_is_refused_as_rest_refuses_it(served: Served, literal: str):
    answer = _call(served, _request("store_memory", TOOLS["store_memory"][0], "ttl", literal))
    result = answer.json()["result"]
    assert result["isError"] is True
    assert "ttl of" in result["content"][0]["text"]
    assert "give 1 to 315360000 seconds" in result["content"][0]["text"]


@pytest.mark.parametrize(("tool", "field", "name", "literal"), _cases(UNREADABLE), ids=_id)
def test_an_unreadable_request_is_a_parse_error(
    served: Served, tool: str, field: str, name: str, literal: str
):
    answer = _call(served, _request(tool, TOOLS[tool][0], field, literal))
    assert answer.status_code == 400, answer.text[:300]
    error = answer.json()["error"]
    assert error["code"] == -32700 and error["message"].startswith("Parse error"), error


def test_the_good_calls_still_work(served: Served):
    """The table's calls, with their good arguments: the server answers them."""
    for tool, (arguments, _) in TOOLS.items():
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": tool, "arguments": arguments},
        }
        answer = _call(served, json.dumps(body).encode())
        assert answer.json()["result"]["isError"] is False, (tool, answer.text[:300])
