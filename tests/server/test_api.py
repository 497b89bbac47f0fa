import json
from typing import Any

import httpx
import pytest

from tests.server.conftest import Keys, auth

MEMORY = {"agent_id": "bot", "scope": "agent", "key": "coding-style", "value": "Use type hints."}


async def store(
    api: httpx.AsyncClient, key: str, body: dict[str, Any] | None = None
) -> dict[str, Any]:
    response = await api.post("/api/memories", json=body or MEMORY, headers=auth(key))
    assert response.status_code == 201, response.text
    created: dict[str, Any] = response.json()
    return created


async def test_health_needs_no_key(api):
    response = await api.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "long_term": "up", "short_term": "in-process"}


async def test_the_spec_flow(api, keys: Keys):
    created = await store(api, keys.acme)
    assert {k: created[k] for k in ("agent_id", "scope", "key", "value")} == MEMORY
    assert created["id"].startswith("mem_") and created["created_at"].endswith("Z")
    again = await store(api, keys.acme, {**MEMORY, "value": "Prefer dataclasses."})
    assert again["id"] == created["id"]  # upsert
    listed = (
        await api.get("/api/memories?agent_id=bot&scope=agent", headers=auth(keys.acme))
    ).json()
    assert listed["total"] == 1 and listed["memories"][0]["value"] == "Prefer dataclasses."
    found = await api.post(
        "/api/memories/search",
        json={"agent_id": "bot", "query": "coding style"},
        headers=auth(keys.acme),
    )
    assert found.json()["results"][0]["memory"]["id"] == created["id"]
    deleted = await api.delete(f"/api/memories/{created['id']}", headers=auth(keys.acme))
    assert deleted.json() == {"deleted": True, "id": created["id"]}
    assert (
        await api.get(f"/api/memories/{created['id']}", headers=auth(keys.acme))
    ).status_code == 404


async def test_ttl_as_the_spec_sends_it_and_update(api, keys: Keys):
    body = {
        "agent_id": "bot",
        "scope": "session",
        "session_id": "run-1",
        "key": "temp-context",
        "value": "Working on ticket #123",
        "ttl": "2030-01-15T12:00:00Z",
    }
    created = await store(api, keys.acme, body)
    assert created["expires_at"] == "2030-01-15T12:00:00.000Z"
    kept = await api.put(
        f"/api/memories/{created['id']}", json={"value": "Ticket #124"}, headers=auth(keys.acme)
    )
    assert (
        kept.json()["expires_at"] == "2030-01-15T12:00:00.000Z"
        and kept.json()["value"] == "Ticket #124"
    )
    cleared = await api.put(
        f"/api/memories/{created['id']}", json={"ttl": None}, headers=auth(keys.acme)
    )
    assert cleared.json()["expires_at"] is None


async def test_the_spec_ttl_example_as_written(api, keys: Keys):
    """Spec 004's example: scope session without a session_id, an expiry now past."""
    body = {
        "agent_id": "bot",
        "scope": "session",
        "key": "temp-context",
        "value": "Working on ticket #123",
        "ttl": "2025-01-15T12:00:00Z",
    }
    created = await store(api, keys.acme, body)
    assert created["session_id"] == "default"
    assert created["expires_at"] == "2025-01-15T12:00:00.000Z"  # stored already expired
    listed = await api.get("/api/memories?agent_id=bot", headers=auth(keys.acme))
    assert listed.json()["total"] == 0
    live = await store(api, keys.acme, {**body, "ttl": None})
    assert live["id"] == created["id"] and live["session_id"] == "default"
    context = await api.get("/api/context?agent_id=bot", headers=auth(keys.acme))
    assert "temp-context" in context.text


async def test_context_renders_memories_and_knowledge(api, keys: Keys):
    await store(
        api,
        keys.acme,
        {"agent_id": "bot", "key": "user-preference", "value": "Prefers concise responses."},
    )
    await store(
        api,
        keys.acme,
        {
            "agent_id": "bot",
            "key": "project-context",
            "value": "Using Python 3.12 and FastAPI.",
            "scope": "global",
        },
    )
    doc = await api.post(
        "/api/knowledge",
        json={"title": "Deploy guide", "text": "Deploys go out blue-green on Tuesdays."},
        headers=auth(keys.acme),
    )
    assert doc.status_code == 201
    context = (
        await api.get("/api/context?agent_id=bot&query=how+do+we+deploy", headers=auth(keys.acme))
    ).json()
    assert context["memories_block"] == (
        "<memories>\n"
        '<memory key="user-preference" scope="agent">\nPrefers concise responses.\n</memory>\n'
        '<memory key="project-context" scope="global">\nUsing Python 3.12 and FastAPI.\n</memory>\n'
        "</memories>"
    )
    assert '<document title="Deploy guide">' in context["knowledge_block"]
    assert context["prompt"].startswith("<memories>") and "<knowledge>" in context["prompt"]


async def test_knowledge_crud(api, keys: Keys):
    created = (
        await api.post(
            "/api/knowledge",
            json={"title": "Style", "text": "Tabs.\n\nNever spaces.", "tags": ["style"]},
            headers=auth(keys.acme),
        )
    ).json()
    listed = (await api.get("/api/knowledge", headers=auth(keys.acme))).json()
    assert listed["total"] == 1 and listed["documents"][0]["tags"] == ["style"]
    full = (await api.get(f"/api/knowledge/{created['id']}", headers=auth(keys.acme))).json()
    assert full["text"] == "Tabs.\n\nNever spaces."
    hits = (
        await api.post("/api/knowledge/search", json={"query": "spaces"}, headers=auth(keys.acme))
    ).json()
    assert hits["results"][0]["document_id"] == created["id"]
    assert (
        await api.delete(f"/api/knowledge/{created['id']}", headers=auth(keys.acme))
    ).status_code == 200
    assert (
        await api.post("/api/knowledge/search", json={"query": "spaces"}, headers=auth(keys.acme))
    ).json()["results"] == []


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer"},
        {"Authorization": "Bearer nope"},
        {"Authorization": "Basic dXNlcjpwYXNz"},
        {"Authorization": "Bearer msk_0123456789abcdef_" + "A" * 43},
    ],
)
@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/api/memories"),
        ("POST", "/api/memories"),
        ("POST", "/api/memories/search"),
        ("GET", "/api/memories/mem_x"),
        ("PUT", "/api/memories/mem_x"),
        ("DELETE", "/api/memories/mem_x"),
        ("GET", "/api/context?agent_id=bot"),
        ("GET", "/api/knowledge"),
        ("POST", "/api/knowledge"),
        ("POST", "/api/users/u1/turns"),
        ("POST", "/api/users/u1/recall"),
        ("GET", "/api/users/u1/memories"),
        ("DELETE", "/api/users/u1"),
    ],
)
async def test_every_endpoint_needs_a_valid_key(api, keys, headers, method, path):
    response = await api.request(method, path, headers=headers, json={})
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "unauthorized"
    assert response.headers["www-authenticate"] == "Bearer"


async def test_a_revoked_key_stops_working(api, services, keys: Keys):
    raw, info = services.keys.create(tenant="acme")
    assert (await api.get("/api/memories", headers=auth(raw))).status_code == 200
    services.keys.revoke(info.id)
    assert (await api.get("/api/memories", headers=auth(raw))).status_code == 401


async def test_tenants_cannot_reach_each_other(api, keys: Keys):
    mine = await store(api, keys.acme, {**MEMORY, "value": "acme's private style guide"})
    doc = (
        await api.post(
            "/api/knowledge",
            json={"title": "Acme secret plan", "text": "World domination."},
            headers=auth(keys.acme),
        )
    ).json()
    theirs = auth(keys.other)
    for method, path, body in [
        ("GET", f"/api/memories/{mine['id']}", None),
        ("PUT", f"/api/memories/{mine['id']}", {"value": "hijacked"}),
        ("DELETE", f"/api/memories/{mine['id']}", None),
        ("GET", f"/api/knowledge/{doc['id']}", None),
        ("DELETE", f"/api/knowledge/{doc['id']}", None),
    ]:
        response = await api.request(method, path, json=body, headers=theirs)
        assert response.status_code == 404, (method, path)
    assert (await api.get("/api/memories?agent_id=bot", headers=theirs)).json()["total"] == 0
    assert (await api.get("/api/memories", headers=theirs)).json()["total"] == 0
    assert (
        await api.post(
            "/api/memories/search", json={"query": "private style guide"}, headers=theirs
        )
    ).json()["results"] == []
    assert (await api.get("/api/context?agent_id=bot", headers=theirs)).json()["memories"] == []
    assert (
        await api.post("/api/knowledge/search", json={"query": "secret plan"}, headers=theirs)
    ).json()["results"] == []
    assert (await api.get("/api/knowledge", headers=theirs)).json()["total"] == 0
    # the same key under the other tenant is a separate memory, and acme's is untouched
    await store(api, keys.other, {**MEMORY, "value": "other's style"})
    assert (await api.get(f"/api/memories/{mine['id']}", headers=auth(keys.acme))).json()[
        "value"
    ] == "acme's private style guide"


async def test_agent_limited_keys(api, keys: Keys):
    ops = await store(api, keys.acme, {**MEMORY, "agent_id": "ops"})
    limited = auth(keys.acme_bot_only)
    assert (
        await api.post("/api/memories", json={**MEMORY, "agent_id": "ops"}, headers=limited)
    ).status_code == 403
    assert (await api.get("/api/memories?agent_id=ops", headers=limited)).status_code == 403
    assert (await api.get(f"/api/memories/{ops['id']}", headers=limited)).status_code == 404
    assert (await api.post("/api/memories", json=MEMORY, headers=limited)).status_code == 201


BAD_REQUESTS = [
    ("POST", "/api/memories", "{not json", 400, "body"),
    ("POST", "/api/memories", json.dumps([1, 2]), 422, "body"),
    ("POST", "/api/memories", json.dumps({**MEMORY, "colour": "red"}), 422, "colour"),
    ("POST", "/api/memories", json.dumps({**MEMORY, "value": 5}), 422, "value"),
    ("POST", "/api/memories", json.dumps({**MEMORY, "value": ""}), 422, "value"),
    ("POST", "/api/memories", json.dumps({**MEMORY, "key": "k" * 300}), 422, "key"),
    (
        "POST",
        "/api/memories",
        json.dumps({k: v for k, v in MEMORY.items() if k != "agent_id"}),
        422,
        "agent_id",
    ),
    ("POST", "/api/memories", json.dumps({**MEMORY, "scope": "team"}), 422, "scope"),
    (
        "POST",
        "/api/memories",
        json.dumps({**MEMORY, "scope": "agent", "session_id": "run-1"}),
        422,
        "session_id",
    ),
    ("POST", "/api/memories", json.dumps({**MEMORY, "ttl": "yesterday"}), 422, "ttl"),
    ("POST", "/api/memories", json.dumps({**MEMORY, "ttl": -3}), 422, "ttl"),
    (
        "POST",
        "/api/memories",
        json.dumps({**MEMORY, "agent_id": "no spaces please"}),
        422,
        "agent_id",
    ),
    (
        "POST",
        "/api/memories",
        json.dumps({**MEMORY, "value": "sk-ant-api03-abcdefghijklmnopqrstuv"}),
        422,
        "value",
    ),
    ("POST", "/api/memories", json.dumps({**MEMORY, "value": "x" * 70_000}), 413, "body"),
    ("POST", "/api/memories/search", json.dumps({"query": ""}), 422, "query"),
    ("POST", "/api/memories/search", json.dumps({"query": "x", "limit": 1000}), 422, "limit"),
    ("POST", "/api/memories/search", json.dumps({"query": "x", "mode": "fuzzy"}), 422, "mode"),
    ("GET", "/api/memories?limit=0", None, 422, "limit"),
    ("GET", "/api/memories?limit=ten", None, 422, "limit"),
    ("GET", "/api/memories?scope=team", None, 422, "scope"),
    ("GET", "/api/memories?offset=-1", None, 422, "offset"),
    ("GET", "/api/context", None, 422, "agent_id"),
    ("PUT", "/api/memories/{id}", json.dumps({"value": 7}), 422, "value"),
    ("PUT", "/api/memories/{id}", json.dumps({"nope": 1}), 422, "nope"),
    ("PUT", "/api/memories/{id}", json.dumps({"ttl": "never"}), 422, "ttl"),
    ("PUT", "/api/memories/{id}", json.dumps({"value": "password = hunter22"}), 422, "value"),
    ("PUT", "/api/memories/{id}", "[", 400, "body"),
    ("POST", "/api/knowledge", json.dumps({"title": "t"}), 422, "text"),
    ("POST", "/api/knowledge", json.dumps({"title": "t", "text": "x", "tags": "a"}), 422, "tags"),
    (
        "POST",
        "/api/knowledge",
        json.dumps({"title": "t", "text": "AKIAIOSFODNN7Q3ZJ5WB"}),
        422,
        "text",
    ),
    ("POST", "/api/knowledge/search", json.dumps({"query": "x", "limit": 0}), 422, "limit"),
]


@pytest.mark.parametrize(("method", "path", "body", "status", "field"), BAD_REQUESTS)
async def test_bad_input_is_a_clear_error_and_changes_nothing(
    api, keys: Keys, method, path, body, status, field
):
    kept = await store(api, keys.acme)
    before = (await api.get("/api/memories", headers=auth(keys.acme))).json()
    response = await api.request(
        method,
        path.replace("{id}", kept["id"]),
        content=body,
        headers={**auth(keys.acme), "Content-Type": "application/json"},
    )
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["field"] == field and error["message"]
    after = (await api.get("/api/memories", headers=auth(keys.acme))).json()
    assert after == before
    assert (await api.get("/api/knowledge", headers=auth(keys.acme))).json()["total"] == 0


async def test_unknown_memory_is_404(api, keys: Keys):
    for method in ("GET", "PUT", "DELETE"):
        response = await api.request(
            method, "/api/memories/mem_doesnotexist", json={"value": "x"}, headers=auth(keys.acme)
        )
        assert response.status_code == 404 and response.json()["error"]["field"] == "id"


async def test_paging(api, keys: Keys):
    for i in range(5):
        await store(api, keys.acme, {**MEMORY, "key": f"k{i}"})
    page = (await api.get("/api/memories?limit=2&offset=1", headers=auth(keys.acme))).json()
    assert (
        page["total"] == 5
        and page["limit"] == 2
        and page["offset"] == 1
        and len(page["memories"]) == 2
    )


async def test_openapi_docs(api):
    spec = (await api.get("/openapi.json")).json()
    assert {
        "/api/memories",
        "/api/memories/search",
        "/api/memories/{memory_id}",
        "/healthz",
    } <= set(spec["paths"])
    assert (await api.get("/docs")).status_code == 200
