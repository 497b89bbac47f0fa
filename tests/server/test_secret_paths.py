"""Every REST write path runs the secret filter over every stored field (issue 11):
a PEM private key in memory metadata, keys included, is refused with a 422 naming the
field, and nothing changes."""

from typing import Any

import httpx
import pytest

from tests.longterm.secret_corpus import _pem
from tests.server.conftest import Keys, auth

MEMORY = {"agent_id": "bot", "scope": "agent", "key": "deploy-notes", "value": "Blue-green."}
PEM = _pem("RSA ")


async def _state(api: httpx.AsyncClient, key: str) -> Any:
    return (await api.get("/api/memories", headers=auth(key))).json()


@pytest.mark.parametrize(
    ("metadata", "field"),
    [
        ({"key": PEM}, "metadata.key"),
        ({"nested": {"deeper": ["ok", PEM]}}, "metadata.nested.deeper[1]"),
        ({PEM[:40] + "x" * 30: "value"}, "metadata"),
    ],
    ids=["value", "nested", "dict-key"],
)
async def test_post_refuses_a_private_key_in_metadata(api, keys: Keys, metadata, field):
    response = await api.post(
        "/api/memories", json={**MEMORY, "metadata": metadata}, headers=auth(keys.acme)
    )
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["field"] == field
    assert "secret (private key)" in error["message"] and "BEGIN" not in error["message"]
    assert (await _state(api, keys.acme))["total"] == 0


async def test_put_refuses_a_private_key_in_metadata(api, keys: Keys):
    created = (await api.post("/api/memories", json=MEMORY, headers=auth(keys.acme))).json()
    before = await _state(api, keys.acme)
    response = await api.put(
        f"/api/memories/{created['id']}",
        json={"metadata": {"ssh": PEM}},
        headers=auth(keys.acme),
    )
    assert response.status_code == 422, response.text
    assert response.json()["error"]["field"] == "metadata.ssh"
    assert await _state(api, keys.acme) == before


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (
            {
                "title": "Runbook",
                "text": "Restart the pods.",
                "source": "https://x/?sig=" + "Ab1" * 10,
            },
            "source",
        ),
        (
            {"title": "Runbook", "text": "Restart the pods.", "tags": ["ops", PEM[:36] + "abc"]},
            "tags[1]",
        ),
    ],
    ids=["source", "tags"],
)
async def test_knowledge_refuses_secrets_in_source_and_tags(api, keys: Keys, body, field):
    response = await api.post("/api/knowledge", json=body, headers=auth(keys.acme))
    assert response.status_code == 422, response.text
    assert response.json()["error"]["field"] == field
    assert (await api.get("/api/knowledge", headers=auth(keys.acme))).json()["total"] == 0
