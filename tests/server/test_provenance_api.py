"""Provenance over the REST API, the typed client, JSONL export/import and the CLI: stored
over real HTTP, a filter of listing (``?provenance=``, repeatable) and search
(``provenances``), shown beside a hit's scores, validated with 422, kept by upserts and
versions, ``imported`` for an imported line that carries none."""

import io
import json
from typing import Any

import httpx
import pytest
from click.testing import CliRunner

from memstack import InvalidInput
from memstack.cli import main
from memstack.client import MemoryClient
from memstack.client.types import Provenance
from tests.server.conftest import Keys, LiveServer, auth
from tests.server.test_client_typed import fresh  # noqa: F401  (a second server, new database)

PROVENANCES: tuple[Provenance, ...] = ("user_stated", "extracted", "tool_output", "imported")


def store_each(client: MemoryClient) -> dict[str, str]:
    """One memory of each provenance for agent bot: provenance -> its id."""
    return {
        provenance: client.store(
            "bot",
            f"tea.{provenance}",
            f"Green tea, as {provenance} says",
            provenance=provenance,
            provenance_detail=f"via {provenance}",
        )["id"]
        for provenance in PROVENANCES
    }


def test_store_list_and_search_by_provenance_over_http(live: LiveServer, keys: Keys):
    with MemoryClient(live.url, api_key=keys.acme) as client:
        ids = store_each(client)
        for provenance, memory_id in ids.items():
            memory = client.get(memory_id)
            assert (memory["provenance"], memory["provenance_detail"]) == (
                provenance,
                f"via {provenance}",
            )
        plain = client.store("bot", "plain", "Told by the user.")
        assert (plain["provenance"], plain["provenance_detail"]) == ("user_stated", None)

        one = client.list(provenance="tool_output")
        assert [m["id"] for m in one["memories"]] == [ids["tool_output"]] and one["total"] == 1
        two = client.list(agent_id="bot", provenance=["extracted", "imported"])
        assert {m["id"] for m in two["memories"]} == {ids["extracted"], ids["imported"]}
        assert client.list(provenance=["user_stated"])["total"] == 2

        found = client.search("green tea", provenances=["tool_output", "extracted"])
        assert {h["memory"]["id"] for h in found["results"]} == {
            ids["tool_output"],
            ids["extracted"],
        }
        every = client.search("green tea", mode="text", limit=20)["results"]
        assert len(every) == 4
        for hit in every:  # beside similarity and keyword, the memory's provenance
            assert hit["provenance"] == hit["memory"]["provenance"]
            assert set(hit) == {
                "memory",
                "score",
                "similarity",
                "keyword",
                "calibrated",
                "provenance",
            }

    # The repeated query parameter, as sent by hand.
    response = httpx.get(
        f"{live.url}/api/memories",
        params=[("provenance", "tool_output"), ("provenance", "imported")],
        headers=auth(keys.acme),
    )
    assert response.status_code == 200
    assert {m["provenance"] for m in response.json()["memories"]} == {"tool_output", "imported"}


BAD_REQUESTS: list[tuple[str, str, dict[str, Any], str]] = [
    ("POST", "/api/memories", {"provenance": "rumour"}, "provenance"),
    ("POST", "/api/memories", {"provenance": None, "provenance_detail": ""}, "provenance_detail"),
    ("POST", "/api/memories", {"provenance_detail": "x" * 257}, "provenance_detail"),
    ("POST", "/api/memories/search", {"provenances": ["rumour"]}, "provenances.0"),
    ("POST", "/api/memories/search", {"provenances": []}, "provenances"),
]


@pytest.mark.parametrize(("method", "path", "extra", "field"), BAD_REQUESTS)
async def test_a_bad_provenance_is_422_naming_the_field(
    api: httpx.AsyncClient, keys: Keys, method: str, path: str, extra: dict[str, Any], field: str
):
    base = {"agent_id": "bot", "key": "k", "value": "v"} if path == "/api/memories" else {}
    if path.endswith("search"):
        base = {"query": "tea"}
    response = await api.request(method, path, json={**base, **extra}, headers=auth(keys.acme))
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["field"] == field
    if "rumour" in json.dumps(extra):
        assert "'user_stated', 'extracted', 'tool_output' or 'imported'" in error["message"]
    listed = await api.get("/api/memories", headers=auth(keys.acme))
    assert listed.json()["total"] == 0


async def test_a_bad_provenance_filter_on_listing_is_422(api: httpx.AsyncClient, keys: Keys):
    response = await api.get(
        "/api/memories", params={"provenance": "rumour"}, headers=auth(keys.acme)
    )
    assert response.status_code == 422
    error = response.json()["error"]
    assert error["field"].startswith("provenance") and "tool_output" in error["message"]


async def test_put_and_upsert_keep_or_change_it_and_history_carries_it(
    api: httpx.AsyncClient, keys: Keys
):
    headers = auth(keys.acme)
    body = {"agent_id": "bot", "key": "bob.city", "value": "Lisbon"}
    first = await api.post(
        "/api/memories",
        json={**body, "provenance": "tool_output", "provenance_detail": "crm"},
        headers=headers,
    )
    memory_id = first.json()["id"]
    again = await api.post("/api/memories", json={**body, "value": "Berlin"}, headers=headers)
    assert (again.json()["provenance"], again.json()["provenance_detail"]) == ("tool_output", "crm")
    put = await api.put(
        f"/api/memories/{memory_id}",
        json={"value": "Rome", "provenance": "extracted", "provenance_detail": "gpt-test"},
        headers=headers,
    )
    assert put.status_code == 200
    assert (put.json()["provenance"], put.json()["provenance_detail"]) == ("extracted", "gpt-test")
    bad = await api.put(f"/api/memories/{memory_id}", json={"provenance": "x"}, headers=headers)
    assert (bad.status_code, bad.json()["error"]["field"]) == (422, "provenance")
    history = await api.get(f"/api/memories/{memory_id}/history", headers=headers)
    assert [(v["value"], v["provenance"]) for v in history.json()["versions"]] == [
        ("Lisbon", "tool_output"),
        ("Berlin", "tool_output"),
        ("Rome", "extracted"),
    ]


async def test_openapi_shows_provenance(api: httpx.AsyncClient):
    spec = (await api.get("/openapi.json")).json()
    schemas = spec["components"]["schemas"]
    for name in ("MemoryOut", "SearchHitOut"):
        assert "provenance" in schemas[name]["required"], name
    assert "provenance_detail" in schemas["MemoryOut"]["required"]
    assert {"provenance", "provenance_detail"} <= set(schemas["MemoryCreate"]["properties"])
    assert "provenances" in schemas["SearchRequest"]["properties"]
    listing = spec["paths"]["/api/memories"]["get"]["parameters"]
    assert "provenance" in {p["name"] for p in listing}


def export_lines(client: MemoryClient) -> list[str]:
    out = io.StringIO()
    client.export_jsonl(out)
    return out.getvalue().splitlines()


def test_export_import_keeps_provenance_and_marks_lines_without_it_imported(
    live: LiveServer,
    keys: Keys,
    fresh: tuple[LiveServer, str],  # noqa: F811
):
    target_server, target_key = fresh
    with MemoryClient(live.url, api_key=keys.acme) as source:
        ids = store_each(source)
        lines = export_lines(source)
    assert {json.loads(line)["provenance"] for line in lines} == set(PROVENANCES)
    bare = {"agent_id": "bot", "scope": "agent", "key": "legacy", "value": "From elsewhere."}
    old = {**bare, "key": "old", "provenance": None}  # exported before provenance
    with MemoryClient(target_server.url, api_key=target_key) as target:
        text = "\n".join([*lines, json.dumps(bare), json.dumps(old)])
        assert target.import_jsonl(io.StringIO(text)).imported == 6
        restored = {m["key"]: m for m in target.list(limit=10)["memories"]}
        for provenance, memory_id in ids.items():
            memory = restored[f"tea.{provenance}"]
            assert memory["id"] == memory_id
            assert (memory["provenance"], memory["provenance_detail"]) == (
                provenance,
                f"via {provenance}",
            )
        assert (restored["legacy"]["provenance"], restored["old"]["provenance"]) == (
            "imported",
            "imported",
        )
        assert target.list(provenance="imported")["total"] == 3


def test_import_refuses_an_unknown_provenance_before_writing(live: LiveServer, keys: Keys):
    good = json.dumps({"agent_id": "a", "scope": "agent", "key": "k", "value": "v"})
    bad = json.dumps(
        {"agent_id": "a", "scope": "agent", "key": "k2", "value": "v", "provenance": 1}
    )
    with MemoryClient(live.url, api_key=keys.acme) as client:
        with pytest.raises(InvalidInput, match="provenance 1; use user_stated") as refused:
            client.import_jsonl(io.StringIO(f"{good}\n{bad}\n"))
        assert refused.value.field == "line 2"
        assert client.list()["total"] == 0


def test_the_cli_filters_by_provenance(live: LiveServer, keys: Keys):
    with MemoryClient(live.url, api_key=keys.acme) as client:
        ids = store_each(client)
    env = {"MEMSTACK_URL": live.url, "MEMSTACK_API_KEY": keys.acme}

    def run(*args: str) -> Any:
        result = CliRunner().invoke(main, ["memories", *args, "--json"], env=env)
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)

    listed = run("list", "--provenance", "tool_output", "--provenance", "imported")
    assert {m["id"] for m in listed["memories"]} == {ids["tool_output"], ids["imported"]}
    found = run("search", "green tea", "--provenance", "extracted")
    assert [h["memory"]["id"] for h in found["results"]] == [ids["extracted"]]
    plain = CliRunner().invoke(main, ["memories", "search", "green tea", "--mode", "text"], env=env)
    assert plain.exit_code == 0 and "tool_output" in plain.stdout
