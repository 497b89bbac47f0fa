"""Issue 30's walk over the write routes of ``/api/users`` (issue 32): every credential of
the corpus in each field a turn, a fact or an import stores, and the benign look-alikes;
then the bytes of the SQLite store are searched for every credential's tokens.

A turn the filter refuses is answered ``refused`` with the field in its reason, beside
the turns of the same request that were stored; a fact is ``refused``; an import holding
a credential is refused whole (422 naming the field). ``test_every_write_path`` leaves
these routes to this file."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from memstack.embeddings import HashEmbedder
from memstack.longterm.turns import MAX_SPEAKER_CHARS
from memstack.transports.app import create_app
from memstack.wiring import open_services
from tests.security.harness import Tally, anything, check_storage, file_bytes
from tests.security.test_every_write_path import Slot, cases
from tests.server.conftest import auth

Body = dict[str, Any]


def _short(text: str) -> bool:
    return 0 < len(text.strip()) and len(text) <= MAX_SPEAKER_CHARS


def _turn(value: str, n: int, **changes: Any) -> Body:
    return {"speaker": "Ana", "text": "A turn.", "session_id": "s1", "id": f"t{n}"} | changes


def _chat(value: str, n: int, **changes: Any) -> Body:
    return {"role": "user", "content": "A message.", "session_id": "s1", "id": f"t{n}"} | changes


TURN_SLOTS = [
    Slot("speaker", _short, lambda t, n: _turn(t, n, speaker=t), "speaker"),
    Slot("text", anything, lambda t, n: _turn(t, n, text=t), "text"),
    Slot("session_id", _short, lambda t, n: _turn(t, n, session_id=t), "session_id", ids=True),
    Slot("id", _short, lambda t, n: _turn(t, n, id=t), "id", ids=True),
    Slot("metadata (value)", anything, lambda t, n: _turn(t, n, metadata={"note": t}), "metadata"),
    Slot("metadata (key)", _short, lambda t, n: _turn(t, n, metadata={t: "x"}), "metadata"),
    Slot("name (OpenAI)", _short, lambda t, n: _chat(t, n, name=t), "speaker"),
    Slot("content (OpenAI)", anything, lambda t, n: _chat(t, n, content=t), "text"),
]
FACT_SLOTS = [
    Slot("text", anything, lambda t, n: {"text": t}, "text"),
    Slot("metadata (value)", anything, lambda t, n: {"text": f"F{n}", "metadata": {"a": t}}, ""),
]
IMPORT_SLOTS = [
    Slot("text", anything, lambda t, n: {"id": f"i{n}", "text": t}, "text"),
    Slot(
        "metadata (value)",
        anything,
        lambda t, n: {"id": f"i{n}", "text": "x", "metadata": {"a": t}},
        "metadata",
    ),
]


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return tmp_path


@pytest.fixture
async def users_api(folder: Path) -> AsyncIterator[tuple[httpx.AsyncClient, str]]:
    services = open_services(
        store_url=f"sqlite:///{folder / 'users.db'}",
        redis_url=None,
        embedder=HashEmbedder(),
        memory_max_items=0,
    )
    key = services.keys.create(tenant="sec32", long_term=True)[0]
    transport = httpx.ASGITransport(app=create_app(services, max_body_bytes=4_000_000))
    async with httpx.AsyncClient(
        transport=transport, base_url="http://memstack.test", headers=auth(key)
    ) as client:
        yield client, key
    services.close()


async def _walk_turns(http: httpx.AsyncClient, tally: Tally) -> None:
    n = 0
    for k, slot in enumerate(TURN_SLOTS):
        placed = cases(slot.fits, k, ids=slot.ids)
        turns = []
        for _, text, _ in placed:
            n += 1
            turns.append(slot.body(text, n))
        answer = await http.post(f"/api/users/u{k}/turns", json={"turns": turns})
        assert answer.status_code == 200, answer.text
        for i, ((label, _, secret), outcome) in enumerate(
            zip(placed, answer.json()["turns"], strict=True)
        ):
            refused = outcome["outcome"] == "refused"
            assert refused or outcome["outcome"] == "stored", outcome
            if refused:
                assert f"turns[{i}].{slot.field}" in outcome["reason"], (slot.name, outcome)
            tally.add(f"turns {slot.name}", label, secret=secret, stored=not refused)


async def _walk(
    http: httpx.AsyncClient,
    tally: Tally,
    path: str,
    slots: list[Slot],
    refused: Callable[[httpx.Response, Slot], bool],
    wrap: Callable[[Body], Body] = lambda body: body,
) -> None:
    n = 0
    for k, slot in enumerate(slots):
        for label, text, secret in cases(slot.fits, k, ids=slot.ids):
            n += 1
            answer = await http.post(path, json=wrap(slot.body(text, n)))
            tally.add(slot.name, label, secret=secret, stored=not refused(answer, slot))


def _fact_refused(answer: httpx.Response, slot: Slot) -> bool:
    assert answer.status_code == 201, answer.text
    outcome: str = answer.json()["outcome"]
    assert outcome in ("stored", "refused", "duplicate"), answer.text
    return outcome == "refused"


def _import_refused(answer: httpx.Response, slot: Slot) -> bool:
    if answer.status_code == 200:
        return False
    assert answer.status_code == 422, answer.text
    error = answer.json()["error"]
    assert "secret" in error["message"], error
    assert error["field"].startswith(f"memories[0].{slot.field}"), error
    return True


async def test_users_write_routes_refuse_every_secret(
    users_api: tuple[httpx.AsyncClient, str], folder: Path
) -> None:
    http, _ = users_api
    tallies = [Tally("REST users turns"), Tally("REST users facts"), Tally("REST users import")]
    await _walk_turns(http, tallies[0])
    await _walk(http, tallies[1], "/api/users/facts/memories", FACT_SLOTS, _fact_refused)
    await _walk(
        http,
        tallies[2],
        "/api/users/imported/import",
        IMPORT_SLOTS,
        _import_refused,
        wrap=lambda item: {"memories": [item]},
    )
    merged = Tally("REST users")
    for tally in tallies:
        tally.check()
        merged.stored_benign |= tally.stored_benign
    check_storage(file_bytes(folder), merged)
