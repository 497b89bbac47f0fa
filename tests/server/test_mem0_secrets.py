"""Issue 30's walk over mem0's write routes (issue 42): every credential of the corpus in
each field an add, an update or a batch update stores, for a user's memory and for an
agent's, and the benign look-alikes; then the bytes of the SQLite store are searched for
every credential's tokens. A write holding a credential is refused whole (422 naming the
field, mem0's way: ``messages[0].content``). ``test_every_write_path`` leaves these routes
to this file."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from memstack.embeddings import HashEmbedder
from memstack.service.types import check_id_part, check_user_id
from memstack.transports.app import create_app
from memstack.wiring import open_services
from tests.security.harness import Tally, accepts, anything, check_storage, file_bytes
from tests.security.test_every_write_path import Slot, cases

Body = dict[str, Any]

MEM0_WRITES = {
    ("POST", "/v3/memories/add/"),
    ("PUT", "/v1/memories/{memory_id}/"),
    ("PUT", "/v1/batch/"),
}
"""The routes of mem0's dialect that store a string; this file walks each."""


def _name(text: str) -> bool:
    return 0 < len(text.strip()) and len(text) <= 100


def _add(n: int, entity: Body, **message: Any) -> Body:
    said = {"role": "user", "content": f"Message {n}."} | message
    return {"messages": [said], "infer": False} | entity


def _user(n: int) -> Body:
    return {"user_id": f"user-{n % 7}"}


def _agent(n: int) -> Body:
    return {"agent_id": f"agent-{n % 7}"}


def _id(name: str) -> Callable[[str], bool]:
    return accepts(lambda t: check_id_part(t, name))


ADD_SLOTS = [
    Slot(
        "user content", anything, lambda t, n: _add(n, _user(n), content=t), "messages[0].content"
    ),
    Slot("user name", _name, lambda t, n: _add(n, _user(n), name=t), "messages[0].name"),
    Slot(
        "user metadata (value)",
        anything,
        lambda t, n: _add(n, _user(n)) | {"metadata": {"note": ["ok", t]}},
        "metadata",
    ),
    Slot(
        "user metadata (key)",
        _name,
        lambda t, n: _add(n, _user(n)) | {"metadata": {t: "x"}},
        "metadata",
    ),
    Slot(
        "user_id", accepts(check_user_id), lambda t, n: _add(n, {"user_id": t}), "user_id", ids=True
    ),
    Slot(
        "run_id",
        _id("session_id"),
        lambda t, n: _add(n, _user(n) | {"run_id": t}),
        "run_id",
        ids=True,
    ),
    Slot(
        "agent content", anything, lambda t, n: _add(n, _agent(n), content=t), "messages[0].content"
    ),
    Slot(
        "agent metadata (value)",
        anything,
        lambda t, n: _add(n, _agent(n)) | {"metadata": {"note": t}},
        "metadata",
    ),
    Slot("agent_id", _id("agent_id"), lambda t, n: _add(n, {"agent_id": t}), "agent_id", ids=True),
    Slot("app_id", _id("agent_id"), lambda t, n: _add(n, {"app_id": t}), "app_id", ids=True),
]
UPDATE_SLOTS = [
    Slot("text", anything, lambda t, n: {"text": t}, "text"),
    Slot("metadata (value)", anything, lambda t, n: {"metadata": {"note": ["ok", t]}}, "metadata"),
]


def _refused(answer: httpx.Response, slot: Slot, prefix: str = "") -> bool:
    """True when the write was refused by the secret filter naming the slot's field, False
    when it was stored; anything else fails the test."""
    if answer.status_code == 200:
        return False
    assert answer.status_code == 422, (slot.name, answer.text)
    body = answer.json()
    assert "looks like a secret" in body["detail"], (slot.name, body)
    assert body["error"]["field"].startswith(prefix + slot.field), (slot.name, body)
    return True


@pytest.fixture
async def api(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    services = open_services(
        store_url=f"sqlite:///{tmp_path / 'mem0.db'}",
        redis_url=None,
        embedder=HashEmbedder(),
        memory_max_items=0,
    )
    key = services.keys.create(tenant="sec42", long_term=True)[0]
    transport = httpx.ASGITransport(app=create_app(services, max_body_bytes=4_000_000))
    async with httpx.AsyncClient(
        transport=transport,
        base_url="http://memstack.test",
        headers={"Authorization": f"Token {key}"},
    ) as client:
        yield client
    services.close()


async def _kept(api: httpx.AsyncClient, entity: Body) -> str:
    answer = await api.post("/v3/memories/add/", json=_add(0, entity))
    assert answer.status_code == 200, answer.text
    memory_id: str = answer.json()["results"][0]["id"]
    return memory_id


async def test_mem0_write_routes_refuse_every_secret(
    api: httpx.AsyncClient, tmp_path: Path
) -> None:
    tallies = {path: Tally(f"mem0 {method} {path}") for method, path in sorted(MEM0_WRITES)}
    n = 0
    for k, slot in enumerate(ADD_SLOTS):
        for label, text, secret in cases(slot.fits, k, ids=slot.ids):
            n += 1
            answer = await api.post("/v3/memories/add/", json=slot.body(text, n))
            tallies["/v3/memories/add/"].add(
                slot.name, label, secret=secret, stored=not _refused(answer, slot)
            )
    for whose, entity in (("user", {"user_id": "updated"}), ("agent", {"agent_id": "updated-bot"})):
        memory_id = await _kept(api, entity)
        for k, slot in enumerate(UPDATE_SLOTS):
            for label, text, secret in cases(slot.fits, k):
                one = await api.put(f"/v1/memories/{memory_id}/", json=slot.body(text, 0))
                tallies["/v1/memories/{memory_id}/"].add(
                    f"{whose} {slot.name}",
                    label,
                    secret=secret,
                    stored=not _refused(one, slot),
                )
                batch = {"memories": [{"memory_id": memory_id} | slot.body(text, 0)]}
                many = await api.put("/v1/batch/", json=batch)
                tallies["/v1/batch/"].add(
                    f"{whose} {slot.name}",
                    label,
                    secret=secret,
                    stored=not _refused(many, slot, "memories[0]."),
                )
    merged = Tally("mem0")
    for tally in tallies.values():
        tally.check()
        merged.stored_benign |= tally.stored_benign
    check_storage(file_bytes(tmp_path), merged)
