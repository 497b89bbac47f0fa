"""``/api/users/{user_id}/...`` (issue 32) over ASGI: a conversation stored and recalled
as the library does it in process, per user within the key's tenant, behind spec 001's
opt-in, with the error bodies of every route."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from memstack.clock import ManualClock
from memstack.embeddings import HashEmbedder, LocalEmbedder
from memstack.longterm.render import render_recalled
from memstack.providers.scripted import ScriptedProvider
from memstack.service.principal import Principal
from memstack.transports.app import create_app
from memstack.wiring import Services, open_services
from tests.server.conftest import auth
from tests.service.test_users_jobs import FACTS, extractor

NOW = 1_778_230_800.0  # 2026-05-08T09:00:00Z
TURNS: list[dict[str, Any]] = [
    {"speaker": "Caroline", "text": "I moved to Berlin last spring.", "time": NOW - 60},
    {"speaker": "Melanie", "text": "How do you like the city?", "time": "2026-05-08T08:59:30Z"},
    {"role": "user", "name": "Caroline", "content": "I love it, the lakes are great."},
    {"role": "assistant", "content": "Lakes near Berlin are lovely in summer."},
]


@dataclass
class UserKeys:
    acme: str
    other: str
    off: str
    """An acme key without the long-term right: long-term memory is off for it."""


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(NOW)


@pytest.fixture
def services(tmp_path: Path, clock: ManualClock) -> Iterator[Services]:
    services = open_services(
        store_url=f"sqlite:///{tmp_path / 'users.db'}",
        redis_url=None,
        embedder=HashEmbedder(),
        clock=clock,
    )
    yield services
    services.close()


@pytest.fixture
def user_keys(services: Services) -> UserKeys:
    return UserKeys(
        acme=services.keys.create(tenant="acme", long_term=True)[0],
        other=services.keys.create(tenant="other", long_term=True)[0],
        off=services.keys.create(tenant="acme")[0],
    )


async def _store(api: httpx.AsyncClient, key: str, user: str = "u1") -> list[str]:
    answer = await api.post(
        f"/api/users/{user}/turns",
        json={"session_id": "s1", "turns": TURNS},
        headers=auth(key),
    )
    assert answer.status_code == 200, answer.text
    outcomes = answer.json()["turns"]
    assert [t["outcome"] for t in outcomes] == ["stored"] * len(TURNS)
    return [t["id"] for t in outcomes]


def _error(answer: httpx.Response, status: int) -> dict[str, Any]:
    assert answer.status_code == status, answer.text
    error: dict[str, Any] = answer.json()["error"]
    return error


# -- every endpoint's happy path ---------------------------------------------------------


async def test_turns_of_both_shapes_are_stored_verbatim_with_their_metadata(
    api: httpx.AsyncClient, user_keys: UserKeys
) -> None:
    body = {
        "turns": [
            {
                "speaker": "Caroline",
                "text": "I adopted a dog.",
                "session_id": "s9",
                "time": 1_778_000_000,
                "id": "turn-1",
                "metadata": {"channel": "sms", "tags": ["pets"]},
            },
            {"role": "user", "content": "His name is Oscar.", "session_id": "s9"},
        ]
    }
    answer = await api.post("/api/users/u1/turns", json=body, headers=auth(user_keys.acme))
    assert answer.status_code == 200, answer.text
    turns = answer.json()["turns"]
    assert turns[0] == {"id": "turn-1", "outcome": "stored", "reason": None}
    assert turns[1]["outcome"] == "stored"
    assert answer.json()["job_id"] is None  # no extraction model configured

    again = await api.post("/api/users/u1/turns", json=body, headers=auth(user_keys.acme))
    assert again.json()["turns"][0] == {"id": "turn-1", "outcome": "duplicate", "reason": None}

    listed = await api.get("/api/users/u1/memories", headers=auth(user_keys.acme))
    assert listed.status_code == 200, listed.text
    by_id = {m["id"]: m for m in listed.json()["memories"]}
    first = by_id["turn-1"]
    assert first["text"] == "Caroline: I adopted a dog."
    assert first["metadata"] == {"channel": "sms", "tags": ["pets"]}
    assert (first["speaker"], first["session_id"], first["turn_seq"]) == ("Caroline", "s9", 0)
    assert first["created_at"] == "2026-05-05T16:53:20.000Z"
    second = by_id[turns[1]["id"]]
    assert second["text"] == "user: His name is Oscar."
    assert second["metadata"] == {}
    assert second["created_at"] == "2026-05-08T09:00:00.000Z"  # no time: now


async def test_remember_recall_context_history_forget(
    api: httpx.AsyncClient, user_keys: UserKeys
) -> None:
    key = auth(user_keys.acme)
    await _store(api, user_keys.acme)
    fact = await api.post(
        "/api/users/u1/memories",
        json={"text": "Caroline lives in Berlin.", "kind": "fact", "importance": 0.9},
        headers=key,
    )
    assert fact.status_code == 201, fact.text
    assert fact.json()["outcome"] == "stored"
    old_id = fact.json()["id"]
    newer = await api.post(
        "/api/users/u1/memories",
        json={"text": "Caroline lives in Potsdam.", "supersedes": [old_id]},
        headers=key,
    )
    assert newer.status_code == 201, newer.text
    new_id = newer.json()["id"]

    recalled = await api.post(
        "/api/users/u1/recall", json={"query": "Where does Caroline live?", "k": 3}, headers=key
    )
    assert recalled.status_code == 200, recalled.text
    results = recalled.json()["results"]
    assert 0 < len(results) <= 3
    assert old_id not in [r["id"] for r in results]  # superseded: history, not recall
    top = results[0]
    assert set(top["scores"]) >= {"similarity", "keyword", "recency", "importance", "score"}
    assert top["score"] == top["scores"]["score"]

    block = await api.get(
        "/api/users/u1/context", params={"query": "Where does Caroline live?"}, headers=key
    )
    assert block.status_code == 200, block.text
    assert block.json()["block"].startswith("<recalled-memories>")

    history = await api.get(f"/api/users/u1/memories/{old_id}/history", headers=key)
    assert history.status_code == 200, history.text
    versions = history.json()["versions"]
    assert [v["id"] for v in versions] == [old_id, new_id]  # oldest first
    assert versions[0]["superseded_by"] == new_id and versions[0]["valid_to"] is not None
    assert versions[1]["valid_to"] is None

    gone = await api.delete(f"/api/users/u1/memories/{new_id}", headers=key)
    assert gone.status_code == 204 and gone.content == b""
    again = await api.delete(f"/api/users/u1/memories/{new_id}", headers=key)
    assert _error(again, 404)["code"] == "not_found"


async def test_the_bob_question_ranks_berlin_first_through_rest(
    tmp_path: Path, clock: ManualClock
) -> None:
    """Issue 33 with the real local model: the question matches the closed "Bob lives in
    Lisbon" best; Berlin, which replaced it, carries that match above the peanuts."""
    services = open_services(
        store_url=f"sqlite:///{tmp_path / 'bob.db'}",
        redis_url=None,
        embedder=LocalEmbedder(),
        clock=clock,
    )
    key = auth(services.keys.create(tenant="acme", long_term=True)[0])
    transport = httpx.ASGITransport(app=create_app(services))
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://memstack.test") as api:

            async def fact(text: str, *old: str) -> str:
                body = {"text": text, "supersedes": list(old)}
                answer = await api.post("/api/users/bob/memories", json=body, headers=key)
                assert answer.status_code == 201, answer.text
                stored: str = answer.json()["id"]
                return stored

            lisbon = await fact("Bob lives in Lisbon")
            peanuts = await fact("Bob is allergic to peanuts")
            clock.advance(86_400)
            berlin = await fact("Bob moved from Lisbon to Berlin", lisbon)
            body = {"query": "Where does Bob live?", "k": 3}
            recalled = await api.post("/api/users/bob/recall", json=body, headers=key)
    finally:
        services.close()
    assert recalled.status_code == 200, recalled.text
    results = recalled.json()["results"]
    assert [r["id"] for r in results] == [berlin, peanuts]  # the closed Lisbon: history
    assert results[0]["scores"]["inherited_from"] == lisbon
    assert results[1]["scores"]["inherited_from"] is None


async def test_pages_export_import_and_erase(api: httpx.AsyncClient, user_keys: UserKeys) -> None:
    key = auth(user_keys.acme)
    ids = await _store(api, user_keys.acme)
    seen: list[str] = []
    cursor: str | None = None
    for _ in range(len(ids)):
        params: dict[str, Any] = {"limit": 3} | ({"cursor": cursor} if cursor else {})
        page = await api.get("/api/users/u1/memories", params=params, headers=key)
        assert page.status_code == 200, page.text
        seen += [m["id"] for m in page.json()["memories"]]
        cursor = page.json()["next_cursor"]
        if cursor is None:
            break
    assert sorted(seen) == sorted(ids)  # every turn once, over two pages

    exported = await api.get("/api/users/u1/export", headers=key)
    assert exported.status_code == 200, exported.text
    items = exported.json()["memories"]
    assert len(items) >= len(ids)
    imported = await api.post("/api/users/u2/import", json={"memories": items}, headers=key)
    assert imported.status_code == 200, imported.text
    assert imported.json() == {"stored": len(items), "skipped": 0}
    skipped = await api.post("/api/users/u2/import", json={"memories": items}, headers=key)
    assert skipped.json() == {"stored": 0, "skipped": len(items)}
    copy = await api.get("/api/users/u2/memories", headers=key)
    assert sorted(m["id"] for m in copy.json()["memories"]) == sorted(ids)

    erased = await api.delete("/api/users/u1", headers=key)
    assert erased.status_code == 200, erased.text
    assert erased.json()["deleted"] >= len(ids)
    empty = await api.get("/api/users/u1/memories", headers=key)
    assert empty.json() == {"memories": [], "next_cursor": None}
    kept = await api.get("/api/users/u2/memories", headers=key)
    assert len(kept.json()["memories"]) == len(ids)


async def test_an_import_larger_than_the_usual_body_limit_is_taken(
    api: httpx.AsyncClient, user_keys: UserKeys
) -> None:
    key = auth(user_keys.acme)
    await _store(api, user_keys.acme)
    first = (await api.get("/api/users/u1/export", headers=key)).json()["memories"][0]
    words = " ".join(f"word{i}" for i in range(450))[:3_900]
    items = [first | {"id": f"big-{i}", "text": f"{i} {words}"} for i in range(400)]
    assert len(json.dumps({"memories": items})) > 1_500_000  # past the 1 MiB default
    imported = await api.post("/api/users/u3/import", json={"memories": items}, headers=key)
    assert imported.status_code == 200, imported.text[:300]
    assert imported.json() == {"stored": 400, "skipped": 0}
    turns = {"session_id": "s1", "turns": [{"speaker": "a", "text": words}] * 400}
    too_big = await api.post("/api/users/u3/turns", json=turns, headers=key)
    assert _error(too_big, 413)


async def test_an_unknown_job_is_not_found(api: httpx.AsyncClient, user_keys: UserKeys) -> None:
    answer = await api.get("/api/users/u1/jobs/job-404", headers=auth(user_keys.acme))
    assert _error(answer, 404)["code"] == "not_found"


# -- the same ranking and block as in process ---------------------------------------------


async def test_recall_ranks_exactly_as_in_process(
    api: httpx.AsyncClient, user_keys: UserKeys, services: Services
) -> None:
    await _store(api, user_keys.acme)
    # another session's turns, nearer the query than any of s1's
    later = [{"speaker": "Caroline", "text": "What do I like about Berlin? Its lakes."}] * 3
    more = await api.post(
        "/api/users/u1/turns",
        json={"session_id": "s2", "turns": later},
        headers=auth(user_keys.acme),
    )
    assert more.status_code == 200, more.text
    for session, k in (("s1", 4), (None, 7)):
        await _same_as_in_process(api, user_keys, services, session, k)


async def _same_as_in_process(
    api: httpx.AsyncClient, user_keys: UserKeys, services: Services, session: str | None, k: int
) -> None:
    text = "what does Caroline like about Berlin?"
    query = {"query": text, "k": k, "session_id": session, "touch": False}
    over_rest = await api.post("/api/users/u1/recall", json=query, headers=auth(user_keys.acme))
    assert over_rest.status_code == 200, over_rest.text
    caller = Principal(tenant="acme", long_term=True)
    in_process = await services.users.recall(
        caller, "u1", text, k=k, session_id=session, touch=False
    )
    got = [(r["id"], r["score"], r["scores"]) for r in over_rest.json()["results"]]
    assert len(got) == k
    results = over_rest.json()["results"]
    assert {r["session_id"] for r in results} == {"s1", "s2"}  # a bonus, never a filter
    if session is not None:  # the caller's session counts as the best evidence
        bonus = {r["session_id"]: r["scores"]["session"] for r in results}
        assert bonus["s1"] == bonus["s2"] > 0
    assert got == [
        (
            m.id,
            m.score,
            {
                "score": m.scores.score,
                "similarity": m.scores.similarity,
                "keyword": m.scores.keyword,
                "relevance": m.scores.relevance,
                "recency": m.scores.recency,
                "importance": m.scores.importance,
                "session": m.scores.session,
                "speaker": m.scores.speaker,
                "time": m.scores.time,
                "calibrated": m.scores.calibrated,
                "inherited_from": m.scores.inherited_from,
            },
        )
        for m in in_process
    ]


async def test_the_context_block_is_what_render_makes(
    api: httpx.AsyncClient, user_keys: UserKeys, services: Services
) -> None:
    await _store(api, user_keys.acme)
    caller = Principal(tenant="acme", long_term=True)
    recalled = await services.users.recall(caller, "u1", "Berlin lakes", k=3, touch=False)
    answer = await api.get(
        "/api/users/u1/context",
        params={"query": "Berlin lakes", "k": 3, "min_score": 0},  # all k: no cut
        headers=auth(user_keys.acme),
    )
    assert answer.status_code == 200, answer.text
    assert answer.json()["block"] == render_recalled(recalled)
    assert answer.json()["block"].count("\n- [event] ") == 3  # three turns, k=3


# -- tenants, the opt-in and the request's veto -------------------------------------------


async def test_the_same_user_id_of_two_tenants_shares_nothing(
    api: httpx.AsyncClient, user_keys: UserKeys
) -> None:
    ids = await _store(api, user_keys.acme)
    other = auth(user_keys.other)
    recalled = await api.post("/api/users/u1/recall", json={"query": "Berlin"}, headers=other)
    assert recalled.json() == {"results": []}
    block = await api.get("/api/users/u1/context", params={"query": "Berlin"}, headers=other)
    assert block.json() == {"block": ""}
    listed = await api.get("/api/users/u1/memories", headers=other)
    assert listed.json() == {"memories": [], "next_cursor": None}
    assert (await api.get("/api/users/u1/export", headers=other)).json() == {"memories": []}
    history = await api.get(f"/api/users/u1/memories/{ids[0]}/history", headers=other)
    assert _error(history, 404)["field"] == "memory_id"
    forgot = await api.delete(f"/api/users/u1/memories/{ids[0]}", headers=other)
    assert _error(forgot, 404)["code"] == "not_found"
    erased = await api.delete("/api/users/u1", headers=other)
    assert erased.json() == {"deleted": 0}
    # the other tenant's own u1, with the same turn ids, is another user
    same = await api.post(
        "/api/users/u1/turns",
        json={"turns": [{"speaker": "Bob", "text": "Hi.", "session_id": "s1", "id": ids[0]}]},
        headers=other,
    )
    assert same.json()["turns"][0]["outcome"] == "stored"
    acme = await api.get("/api/users/u1/memories", headers=auth(user_keys.acme))
    assert sorted(m["id"] for m in acme.json()["memories"]) == sorted(ids)
    texts = {m["text"] for m in acme.json()["memories"]}
    assert "Bob: Hi." not in texts


async def test_users_are_listed_per_tenant_in_pages(
    api: httpx.AsyncClient, user_keys: UserKeys
) -> None:
    for user in ("u2", "u1", "ü3"):
        await _store(api, user_keys.acme, user)
    await _store(api, user_keys.other, "x9")
    acme = auth(user_keys.acme)
    first = (await api.get("/api/users", params={"limit": 2}, headers=acme)).json()
    assert first["users"] == ["u1", "u2"]
    after = {"limit": 2, "cursor": first["next_cursor"]}
    assert (await api.get("/api/users", params=after, headers=acme)).json() == {
        "users": ["ü3"],
        "next_cursor": None,
    }
    other = (await api.get("/api/users", headers=auth(user_keys.other))).json()
    assert other == {"users": ["x9"], "next_cursor": None}
    await api.delete("/api/users/u2", headers=acme)
    assert (await api.get("/api/users", headers=acme)).json()["users"] == ["u1", "ü3"]
    bad = await api.get("/api/users", params={"cursor": "c1.nope"}, headers=acme)
    assert _error(bad, 422)["field"] == "cursor"
    assert _error(await api.get("/api/users", headers=auth(user_keys.off)), 403)


async def test_off_for_the_key_is_403_naming_the_fix(
    api: httpx.AsyncClient, user_keys: UserKeys
) -> None:
    off = auth(user_keys.off)
    for method, path, body in (
        ("POST", "/api/users/u1/turns", {"session_id": "s", "turns": TURNS}),
        ("POST", "/api/users/u1/memories", {"text": "Caroline lives in Berlin."}),
        ("POST", "/api/users/u1/recall", {"query": "Berlin"}),
    ):
        error = _error(await api.request(method, path, json=body, headers=off), 403)
        assert error["code"] == "forbidden"
        assert error["field"] == "memory_enabled"
        assert "MEMSTACK_MEMORY_ENABLED" in error["message"]
        assert "--long-term" in error["message"]
    block = await api.get("/api/users/u1/context", params={"query": "Berlin"}, headers=off)
    assert _error(block, 403)["field"] == "memory_enabled"


async def test_a_request_may_veto_memory(api: httpx.AsyncClient, user_keys: UserKeys) -> None:
    key = auth(user_keys.acme)
    await _store(api, user_keys.acme)
    vetoed = await api.post(
        "/api/users/u1/turns",
        json={"session_id": "s2", "memory_enabled": False, "turns": TURNS[:2]},
        headers=key,
    )
    assert vetoed.status_code == 200, vetoed.text
    assert [t["outcome"] for t in vetoed.json()["turns"]] == ["skipped", "skipped"]
    fact = await api.post(
        "/api/users/u1/memories",
        json={"text": "Caroline likes jazz.", "memory_enabled": False},
        headers=key,
    )
    assert fact.json()["outcome"] == "skipped"
    listed = await api.get("/api/users/u1/memories", headers=key)
    assert len(listed.json()["memories"]) == len(TURNS)  # nothing more stored
    recalled = await api.post(
        "/api/users/u1/recall", json={"query": "Berlin", "memory_enabled": False}, headers=key
    )
    assert recalled.json() == {"results": []}
    block = await api.get(
        "/api/users/u1/context",
        params={"query": "Berlin", "memory_enabled": "false"},
        headers=key,
    )
    assert block.json() == {"block": ""}


# -- malformed requests: 4xx naming the field, never a 500 --------------------------------

BAD_TURNS: list[tuple[str, dict[str, Any], int, str]] = [
    (
        "text not a string",
        {"turns": [{"speaker": "a", "text": 5, "session_id": "s"}]},
        422,
        "turns.0.text",
    ),
    (
        "unknown key",
        {"turns": [{"speaker": "a", "text": "hi", "session_id": "s", "mood": 1}]},
        422,
        "turns.0.mood",
    ),
    (
        "unknown body key",
        {"turns": [{"role": "user", "content": "hi", "session_id": "s"}], "user": "u1"},
        422,
        "user",
    ),
    ("no turns", {"turns": []}, 422, "turns"),
    ("turns not a list", {"turns": {"speaker": "a"}}, 422, "turns"),
    (
        "both shapes",
        {"turns": [{"speaker": "a", "content": "hi", "session_id": "s"}]},
        422,
        "turns.0.speaker",
    ),
    ("no text", {"turns": [{"speaker": "a", "session_id": "s"}]}, 422, "turns.0.text"),
    ("no role", {"turns": [{"content": "hi", "session_id": "s"}]}, 422, "turns.0.role"),
    ("no session", {"turns": [{"role": "user", "content": "hi"}]}, 422, "turns.0.session_id"),
    (
        "not a time",
        {"session_id": "s", "turns": [{"role": "user", "content": "hi", "time": "yesterday"}]},
        422,
        "turns.0.time",
    ),
    (
        "time too far",
        {"session_id": "s", "turns": [{"role": "user", "content": "hi", "time": 2**1024}]},
        422,
        "turns.0.time",
    ),
    (
        "time not a number",
        {"session_id": "s", "turns": [{"role": "user", "content": "hi", "time": True}]},
        422,
        "turns.0.time",
    ),
    (
        "metadata not an object",
        {"session_id": "s", "turns": [{"role": "user", "content": "hi", "metadata": [1]}]},
        422,
        "turns.0.metadata",
    ),
    (
        "veto not a bool",
        {"turns": [{"role": "user", "content": "hi", "session_id": "s"}], "memory_enabled": "no"},
        422,
        "memory_enabled",
    ),
]


@pytest.mark.parametrize(
    ("body", "status", "field"), [c[1:] for c in BAD_TURNS], ids=[c[0] for c in BAD_TURNS]
)
async def test_bad_turns_are_refused_naming_the_field(
    api: httpx.AsyncClient, user_keys: UserKeys, body: dict[str, Any], status: int, field: str
) -> None:
    answer = await api.post("/api/users/u1/turns", json=body, headers=auth(user_keys.acme))
    error = _error(answer, status)
    assert error["code"] == "invalid_input"
    assert error["field"] == field, error
    listed = await api.get("/api/users/u1/memories", headers=auth(user_keys.acme))
    assert listed.json()["memories"] == []


BAD_OTHERS: list[tuple[str, str, str, dict[str, Any] | None, str]] = [
    ("recall k 0", "POST", "/api/users/u1/recall", {"query": "x", "k": 0}, "k"),
    ("recall k text", "POST", "/api/users/u1/recall", {"query": "x", "k": "3"}, "k"),
    ("recall no query", "POST", "/api/users/u1/recall", {"k": 3}, "query"),
    ("recall unknown key", "POST", "/api/users/u1/recall", {"query": "x", "mode": "a"}, "mode"),
    ("recall bad as_of", "POST", "/api/users/u1/recall", {"query": "x", "as_of": "then"}, "as_of"),
    (
        "fact importance 2",
        "POST",
        "/api/users/u1/memories",
        {"text": "x", "importance": 2},
        "importance",
    ),
    ("fact bad kind", "POST", "/api/users/u1/memories", {"text": "x", "kind": "rumour"}, "kind"),
    ("fact empty text", "POST", "/api/users/u1/memories", {"text": ""}, "text"),
    ("import not a list", "POST", "/api/users/u1/import", {"memories": {}}, "memories"),
    ("bad user id", "POST", "/api/users/-bad%20id/recall", {"query": "x"}, "user_id"),
    ("long user id", "GET", "/api/users/" + "u" * 300 + "/memories", None, "user_id"),
    ("limit 0", "GET", "/api/users/u1/memories?limit=0", None, "limit"),
    ("bad cursor", "GET", "/api/users/u1/memories?cursor=zzz", None, "cursor"),
    ("context no query", "GET", "/api/users/u1/context", None, "query"),
    ("context k 1000", "GET", "/api/users/u1/context?query=x&k=1000", None, "k"),
]


@pytest.mark.parametrize(
    ("method", "path", "body", "field"), [c[1:] for c in BAD_OTHERS], ids=[c[0] for c in BAD_OTHERS]
)
async def test_bad_requests_are_422_naming_the_field(
    api: httpx.AsyncClient,
    user_keys: UserKeys,
    method: str,
    path: str,
    body: dict[str, Any] | None,
    field: str,
) -> None:
    answer = await api.request(method, path, json=body, headers=auth(user_keys.acme))
    error = _error(answer, 422)
    assert error["code"] == "invalid_input"
    assert error["field"] == field, error


async def test_oversized_and_deep_bodies_are_refused(
    api: httpx.AsyncClient, user_keys: UserKeys
) -> None:
    key = auth(user_keys.acme) | {"Content-Type": "application/json"}
    turn = {"speaker": "a", "text": "x" * 3_000, "session_id": "s"}
    big = await api.post("/api/users/u1/turns", json={"turns": [turn] * 30}, headers=key)
    assert _error(big, 413)["field"] == "body"  # the test app's limit is 64,000 bytes
    deep = '{"turns": [{"speaker": "a", "text": "x", "session_id": "s", "metadata": '
    deep += '{"a": ' * 5_000 + "1" + "}" * 5_000 + "}]}"
    answer = await api.post("/api/users/u1/turns", content=deep.encode(), headers=key)
    assert _error(answer, 400)["field"] == "body"
    nested = {"speaker": "a", "text": "x", "session_id": "s", "metadata": _nest(250)}
    answer = await api.post("/api/users/u1/turns", json={"turns": [nested]}, headers=key)
    assert answer.status_code in (400, 422), answer.text
    assert _error(answer, answer.status_code)["field"].startswith(("body", "turns"))
    listed = await api.get("/api/users/u1/memories", headers=auth(user_keys.acme))
    assert listed.json()["memories"] == []


def _nest(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {"leaf": 1}
    for _ in range(depth):
        value = {"a": value}
    return value


# -- the OpenAPI document ------------------------------------------------------------------

USER_PATHS = {
    ("get", "/api/users"),
    ("post", "/api/users/{user_id}/turns"),
    ("get", "/api/users/{user_id}/jobs/{job_id}"),
    ("post", "/api/users/{user_id}/memories"),
    ("get", "/api/users/{user_id}/memories"),
    ("post", "/api/users/{user_id}/recall"),
    ("get", "/api/users/{user_id}/context"),
    ("get", "/api/users/{user_id}/memories/{memory_id}/history"),
    ("delete", "/api/users/{user_id}/memories/{memory_id}"),
    ("delete", "/api/users/{user_id}"),
    ("get", "/api/users/{user_id}/export"),
    ("post", "/api/users/{user_id}/import"),
}


async def test_openapi_lists_every_users_path_under_its_tag(api: httpx.AsyncClient) -> None:
    spec = (await api.get("/openapi.json")).json()
    found = {
        (method, path): op["tags"]
        for path, item in spec["paths"].items()
        for method, op in item.items()
        if path.startswith("/api/users")
    }
    assert set(found) == USER_PATHS
    assert all(tags == ["users"] for tags in found.values())
    turns = spec["paths"]["/api/users/{user_id}/turns"]["post"]
    assert {"400", "401", "403", "413", "422", "503"} <= set(turns["responses"])


# -- extraction jobs ------------------------------------------------------------------------


async def test_a_write_of_turns_queues_an_extraction_job_shown_over_rest(
    tmp_path: Path, clock: ManualClock
) -> None:
    services = open_services(
        store_url=f"sqlite:///{tmp_path / 'jobs.db'}",
        redis_url=None,
        embedder=HashEmbedder(),
        clock=clock,
        extraction_provider=ScriptedProvider(responder=extractor),
        extraction_model="extractor-1",
    )
    acme = services.keys.create(tenant="acme", long_term=True)[0]
    other = services.keys.create(tenant="other", long_term=True)[0]
    transport = httpx.ASGITransport(app=create_app(services))
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://memstack.test") as api:
            answer = await api.post(
                "/api/users/u1/turns", json={"session_id": "s1", "turns": TURNS}, headers=auth(acme)
            )
            job_id = answer.json()["job_id"]
            assert isinstance(job_id, str), answer.text
            await services.users.wait_for_jobs()
            job = await api.get(f"/api/users/u1/jobs/{job_id}", headers=auth(acme))
            assert job.status_code == 200, job.text
            assert job.json()["state"] == "done" and job.json()["error"] is None
            assert len(job.json()["stored"]) == len(FACTS)
            listed = await api.get("/api/users/u1/memories", headers=auth(acme))
            extracted = {m["id"]: m for m in listed.json()["memories"]}
            for memory_id in job.json()["stored"]:
                assert extracted[memory_id]["provenance"] == "extracted"
                assert extracted[memory_id]["text"] in FACTS
            for key, user in ((other, "u1"), (acme, "u2")):  # another tenant's, user's
                hidden = await api.get(f"/api/users/{user}/jobs/{job_id}", headers=auth(key))
                assert _error(hidden, 404)["field"] == "job_id"
    finally:
        services.close()
