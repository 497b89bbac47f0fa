"""A server started with another embedding model than its store's: refused, naming the
command that embeds the memories again; after it, served with the new model."""

from __future__ import annotations

from pathlib import Path

import httpx

from memstack.embeddings import HashEmbedder
from memstack.service.reembed import reembed
from memstack.transports.app import create_app
from memstack.wiring import Services, open_services
from tests.server.conftest import auth

MEMORY = {"agent_id": "bot", "scope": "agent", "key": "home", "value": "Bob lives in Berlin."}
SEARCH = {"agent_id": "bot", "query": "where does Bob live"}


def _services(db: Path, embedder: HashEmbedder) -> Services:
    return open_services(store_url=f"sqlite:///{db}", redis_url=None, embedder=embedder)


async def _call(services: Services, key: str, path: str, body: dict[str, str]) -> httpx.Response:
    transport = httpx.ASGITransport(app=create_app(services))
    async with httpx.AsyncClient(transport=transport, base_url="http://memstack.test") as api:
        return await api.post(path, json=body, headers=auth(key))


async def test_a_switched_model_is_refused_until_the_memories_are_embedded_again(tmp_path: Path):
    db = tmp_path / "server.db"
    old = _services(db, HashEmbedder(dim=8))
    try:
        key = old.keys.create(tenant="acme")[0]
        assert (await _call(old, key, "/api/memories", MEMORY)).status_code == 201
    finally:
        old.close()
    new = _services(db, HashEmbedder(dim=16))
    try:
        for path, body in (("/api/memories/search", SEARCH), ("/api/memories", MEMORY)):
            refused = await _call(new, key, path, {**body})
            assert refused.status_code == 500, refused.text
            error = refused.json()["error"]
            assert error["code"] == "config_error"
            assert "'hash:8', not 'hash:16'" in error["message"]
            assert "memstack memories reembed" in error["message"]
        reembed(new.records, HashEmbedder(dim=16))
        found = await _call(new, key, "/api/memories/search", SEARCH)
        assert found.status_code == 200
        assert [hit["memory"]["value"] for hit in found.json()["results"]] == [MEMORY["value"]]
        assert (await _call(new, key, "/api/memories", MEMORY)).status_code == 201
    finally:
        new.close()
