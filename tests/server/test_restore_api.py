"""``POST /api/memories/restore`` refuses a bad memory with the field at fault and the
fix, and writes nothing of the call; the key decides the tenant and the agents."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.longterm.secret_corpus import _pem
from tests.server.conftest import Keys, auth

CURRENT = {"value": "Green tea.", "created_at": "2026-01-01T09:30:00.000Z"}
CLOSED = {
    "value": "Black tea.",
    "created_at": "2026-01-01T09:30:00.000Z",
    "valid_to": "2026-01-02T09:30:00.000Z",
    "superseded_by": "mem_x",
    "closed_reason": "superseded",
}


def _memory(*versions: dict[str, Any], **identity: Any) -> dict[str, Any]:
    return {"agent_id": "bot", "scope": "agent", "key": "drink", **identity, "versions": versions}


PEM = _pem("OPENSSH ")


@pytest.mark.parametrize(
    ("memories", "field", "hint"),
    [
        ([_memory({**CLOSED, "valid_to": None})], "memories[0].versions[0].valid_to", "valid_to"),
        ([_memory(CURRENT, CURRENT)], "memories[0].versions", "superseded_by"),
        ([_memory({**CLOSED, "superseded_by": None}, CURRENT)], "memories[0].versions", "latest"),
        (
            [_memory({**CLOSED, "valid_to": "2025-01-01T00:00:00Z"})],
            "memories[0].versions[0].valid_to",
            "before valid_from",
        ),
        ([_memory(CURRENT), _memory(CURRENT)], "memories[1]", "once"),
        ([_memory(CURRENT, scope="session")], "memories[0].session_id", "session_id"),
        ([_memory(CURRENT, session_id="s1")], "memories[0].session_id", "scope"),
        ([_memory({**CURRENT, "agent_id": "ops"})], "memories[0].versions[0].agent_id", "global"),
        (
            [_memory({**CURRENT, "created_at": "yesterday"})],
            "memories.0.versions.0.created_at",
            "ISO",
        ),
        ([_memory({**CURRENT, "metadata": {"key": PEM}})], "memories[0].metadata.key", "secret"),
        ([_memory(*[CLOSED] * 21, CURRENT)], "memories.0.versions", "21"),
        ([], "memories", "at least 1"),
    ],
)
async def test_a_bad_memory_is_refused_naming_the_field_and_the_fix(
    api: httpx.AsyncClient, keys: Keys, memories: list[dict[str, Any]], field: str, hint: str
) -> None:
    answer = await api.post(
        "/api/memories/restore", json={"memories": memories}, headers=auth(keys.acme)
    )
    assert answer.status_code == 422, answer.text
    error = answer.json()["error"]
    assert error["field"] == field and hint in error["message"], error


async def test_one_bad_memory_writes_nothing_of_the_call(
    api: httpx.AsyncClient, keys: Keys
) -> None:
    memories = [_memory(CURRENT, key="fine"), _memory(CURRENT, CURRENT)]
    answer = await api.post(
        "/api/memories/restore", json={"memories": memories}, headers=auth(keys.acme)
    )
    assert answer.status_code == 422 and answer.json()["error"]["field"] == "memories[1].versions"
    listed = await api.get("/api/memories", headers=auth(keys.acme))
    assert listed.json()["total"] == 0


async def test_a_key_restores_only_what_it_may_write(api: httpx.AsyncClient, keys: Keys) -> None:
    limited = auth(keys.acme_bot_only)
    other_agent = await api.post(
        "/api/memories/restore",
        json={"memories": [_memory(CURRENT, agent_id="ops")]},
        headers=limited,
    )
    assert other_agent.status_code == 403
    assert other_agent.json()["error"]["field"] == "memories[0].agent_id"
    shared = await api.post(
        "/api/memories/restore",
        json={"memories": [_memory(CURRENT, scope="global")]},
        headers=limited,
    )
    assert shared.status_code == 403 and shared.json()["error"]["field"] == "memories[0].scope"
    mine = await api.post(
        "/api/memories/restore", json={"memories": [_memory(CLOSED, CURRENT)]}, headers=limited
    )
    assert mine.json() == {"restored": 1, "versions": 2, "skipped": 0}
    other_tenant = await api.get("/api/memories", headers=auth(keys.other))
    assert other_tenant.json()["total"] == 0
    (memory,) = (await api.get("/api/memories", headers=limited)).json()["memories"]
    versions = (await api.get(f"/api/memories/{memory['id']}/history", headers=limited)).json()[
        "versions"
    ]
    assert [(v["value"], v["valid_to"]) for v in versions] == [
        ("Black tea.", "2026-01-02T09:30:00.000Z"),
        ("Green tea.", None),
    ]
