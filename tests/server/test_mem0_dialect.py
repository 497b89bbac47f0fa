"""mem0's routes over memstack's services, in process: where each entity's memories go,
filters, versions, erasure, the secret filter, rights and bad input. (mem0's own
clients drive a live server in ``tests/mem0``.)"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from memstack.embeddings import HashEmbedder
from memstack.providers.scripted import ScriptedProvider
from memstack.transports.app import create_app
from memstack.transports.mem0.filters import MAX_IN_VALUES, Subject, matches, parse_filters
from memstack.wiring import Services, open_services
from tests.service.test_users_jobs import FACTS, extractor

SECRET = "sk-ant-api03-" + "a1B2c3D4e5F6g7H8i9J0" * 4


def token(key: str) -> dict[str, str]:
    return {"Authorization": f"Token {key}"}


class Mem0:
    """A mem0-shaped caller of the app, with the long-term keys of two tenants."""

    def __init__(self, api: httpx.AsyncClient, services: Services) -> None:
        self.api = api
        self.services = services
        self.acme = services.keys.create(tenant="acme", long_term=True)[0]
        self.other = services.keys.create(tenant="other", long_term=True)[0]
        self.bot_only = services.keys.create(tenant="acme", agents=["bot"], long_term=True)[0]

    async def call(
        self, method: str, path: str, status: int = 200, *, key: str | None = None, **kw: Any
    ) -> Any:
        answer = await self.api.request(method, path, headers=token(key or self.acme), **kw)
        assert answer.status_code == status, answer.text
        return answer.json()

    async def add(self, content: str | list[dict[str, Any]], **kw: Any) -> list[dict[str, Any]]:
        messages = [{"role": "user", "content": content}] if isinstance(content, str) else content
        body = await self.call(
            "POST", "/v3/memories/add/", json={"messages": messages, "infer": False, **kw}
        )
        results: list[dict[str, Any]] = body["results"]
        return results

    async def listed(self, filters: dict[str, Any], **kw: Any) -> list[str]:
        body = await self.call("POST", "/v3/memories/", json={"filters": filters}, **kw)
        return [m["memory"] for m in body["results"]]


@pytest.fixture
async def mem0(services: Services) -> AsyncIterator[Mem0]:
    transport = httpx.ASGITransport(app=create_app(services, max_body_bytes=64_000))
    async with httpx.AsyncClient(transport=transport, base_url="http://memstack.test") as api:
        yield Mem0(api, services)


def error(answer: httpx.Response, status: int) -> dict[str, Any]:
    assert answer.status_code == status, answer.text
    body: dict[str, Any] = answer.json()
    assert body["detail"] == body["error"]["message"]
    found: dict[str, Any] = body["error"]
    return found


# -- keys ---------------------------------------------------------------------------------


@pytest.mark.parametrize("scheme", ["Token", "Bearer", "token"])
async def test_mem0s_header_and_bearer_both_authenticate(mem0: Mem0, scheme: str) -> None:
    answer = await mem0.api.get("/v1/ping/", headers={"Authorization": f"{scheme} {mem0.acme}"})
    assert answer.json() == {
        "status": "ok",
        "org_id": "acme",
        "project_id": "acme",
        "user_email": None,
    }


@pytest.mark.parametrize("header", [None, "Token ", "Basic abc", "Token msk_not_a_key"])
async def test_no_key_or_a_bad_one_is_a_401_with_mem0s_detail(
    mem0: Mem0, header: str | None
) -> None:
    headers = {} if header is None else {"Authorization": header}
    answer = await mem0.api.get("/v1/ping/", headers=headers)
    assert "key" in error(answer, 401)["message"]


async def test_a_revoked_key_is_refused(mem0: Mem0) -> None:
    raw, info = mem0.services.keys.create(tenant="acme")
    mem0.services.keys.revoke(info.id)
    answer = await mem0.api.get("/v1/ping/", headers=token(raw))
    assert error(answer, 401)["message"] == "invalid or revoked API key."


# -- users' memories ------------------------------------------------------------------------


async def test_a_users_messages_are_turns_of_the_users_memory(mem0: Mem0) -> None:
    added = await mem0.add(
        [{"role": "user", "content": "I moved to Lisbon.", "name": "alice"}],
        user_id="alice",
        run_id="s1",
        agent_id="helper",
        metadata={"topic": "home"},
        timestamp=1_700_000_000,
    )
    assert added[0]["event"] == "ADD" and added[0]["user_id"] == "alice"
    bearer = {"Authorization": f"Bearer {mem0.acme}"}
    native = await mem0.api.get("/api/users/alice/memories", headers=bearer)
    (turn,) = native.json()["memories"]
    assert turn["text"] == "alice: I moved to Lisbon."  # the speaker, as a turn is kept
    assert turn["created_at"] == "2023-11-14T22:13:20.000Z"
    got = await mem0.call("GET", f"/v1/memories/{added[0]['id']}/")
    assert got["memory"] == "I moved to Lisbon."
    assert (got["run_id"], got["agent_id"]) == ("s1", "helper")
    assert got["metadata"] == {"topic": "home"}
    assert got["created_at"].startswith("2023-11-14T22:13:20")


async def test_one_users_memories_never_answer_another_user_or_tenant(mem0: Mem0) -> None:
    await mem0.add("I play the cello.", user_id="carol")
    await mem0.add("I play the drums.", user_id="dave")
    await mem0.add("I play the flute.", user_id="carol")
    await mem0.call(
        "POST",
        "/v3/memories/add/",
        json={"messages": [{"role": "user", "content": "I play the oboe."}], "user_id": "carol"},
        key=mem0.other,
    )
    found = await mem0.call(
        "POST",
        "/v3/memories/search/",
        json={"query": "which instrument?", "filters": {"user_id": "carol"}, "threshold": 0},
    )
    assert {m["memory"] for m in found["results"]} == {"I play the cello.", "I play the flute."}
    assert await mem0.listed({"user_id": "carol"}, key=mem0.other) == ["I play the oboe."]


async def test_an_update_is_a_new_version_and_the_old_id_keeps_answering(mem0: Mem0) -> None:
    (added,) = await mem0.add("I live in Lisbon.", user_id="erin", metadata={"a": 1})
    first = added["id"]
    updated = await mem0.call("PUT", f"/v1/memories/{first}/", json={"text": "I live in Porto."})
    assert updated["memory"] == "I live in Porto." and updated["metadata"] == {"a": 1}
    assert (await mem0.call("GET", f"/v1/memories/{first}/"))["memory"] == "I live in Porto."
    await mem0.call("PUT", f"/v1/memories/{first}/", json={"metadata": {"b": 2}})
    assert (await mem0.call("GET", f"/v1/memories/{first}/"))["metadata"] == {"b": 2}
    assert await mem0.listed({"user_id": "erin"}) == ["I live in Porto."]
    await mem0.call("DELETE", f"/v1/memories/{first}/")
    events = await mem0.call("GET", f"/v1/memories/{first}/history/")
    assert [(e["event"], e["old_memory"], e["new_memory"]) for e in events] == [
        ("ADD", None, "I live in Lisbon."),
        ("UPDATE", "I live in Lisbon.", "I live in Porto."),
        ("DELETE", "I live in Porto.", None),
    ]
    gone = await mem0.api.get(f"/v1/memories/{first}/", headers=token(mem0.acme))
    assert error(gone, 404)["field"] == "memory_id"
    assert await mem0.listed({"user_id": "erin"}) == []


async def test_an_id_keeps_answering_however_many_updates_ago(mem0: Mem0) -> None:
    """mem0's clients keep the id an add answered; a memory updated a hundred times still
    answers to it."""
    (added,) = await mem0.add("Version 0.", user_id="ivan")
    first = added["id"]
    for n in range(1, 101):
        updated = await mem0.call("PUT", f"/v1/memories/{first}/", json={"text": f"Version {n}."})
        assert updated["id"] == first
    assert (await mem0.call("GET", f"/v1/memories/{first}/"))["memory"] == "Version 100."
    assert await mem0.listed({"user_id": "ivan"}) == ["Version 100."]
    await mem0.call("DELETE", f"/v1/memories/{first}/")
    gone = await mem0.api.get(f"/v1/memories/{first}/", headers=token(mem0.acme))
    assert error(gone, 404)["field"] == "memory_id"


async def test_delete_all_erases_one_user_and_nothing_of_another(mem0: Mem0) -> None:
    await mem0.add("Mine.", user_id="frank", run_id="r1")
    await mem0.add("Also mine.", user_id="frank", run_id="r2")
    await mem0.add("Not frank's.", user_id="grace")
    await mem0.call("DELETE", "/v1/memories/", params={"user_id": "frank", "run_id": "r1"})
    assert await mem0.listed({"user_id": "frank"}) == ["Also mine."]
    await mem0.call("DELETE", "/v1/memories/", params={"user_id": "frank"})
    assert await mem0.listed({"user_id": "frank"}) == []
    assert await mem0.listed({"user_id": "grace"}) == ["Not frank's."]
    refused = await mem0.api.delete("/v1/memories/", headers=token(mem0.acme))
    assert error(refused, 422)["field"] == "user_id"


async def test_a_secret_in_any_message_stores_nothing(mem0: Mem0) -> None:
    messages = [
        {"role": "user", "content": "Harmless."},
        {"role": "user", "content": f"my key is {SECRET}"},
    ]
    answer = await mem0.api.post(
        "/v3/memories/add/",
        json={"messages": messages, "user_id": "hank", "infer": False},
        headers=token(mem0.acme),
    )
    found = error(answer, 422)
    assert found["field"] == "messages[1].content" and SECRET not in answer.text
    assert await mem0.listed({"user_id": "hank"}) == []
    (kept,) = await mem0.add("Harmless.", user_id="hank")
    answer = await mem0.api.put(
        f"/v1/memories/{kept['id']}/", json={"text": SECRET}, headers=token(mem0.acme)
    )
    assert error(answer, 422)["field"] == "text"
    answer = await mem0.api.put(
        "/v1/batch/",
        json={"memories": [{"memory_id": kept["id"], "metadata": {"token": SECRET}}]},
        headers=token(mem0.acme),
    )
    assert error(answer, 422)["field"].startswith("memories[0].metadata")
    assert await mem0.listed({"user_id": "hank"}) == ["Harmless."]


async def test_a_key_without_the_long_term_right_is_told_the_fix(mem0: Mem0) -> None:
    plain = mem0.services.keys.create(tenant="acme")[0]
    answer = await mem0.api.post(
        "/v3/memories/add/",
        json={"messages": "hello", "user_id": "ivan"},
        headers=token(plain),
    )
    assert "--long-term" in error(answer, 403)["message"]


# -- agents' and apps' memories -------------------------------------------------------------


async def test_an_agents_messages_are_its_keyed_memories(mem0: Mem0) -> None:
    (added,) = await mem0.add("Reply in French.", agent_id="bot")
    (run,) = await mem0.add("Ticket 42 is open.", agent_id="bot", run_id="w1")
    (app,) = await mem0.add("The product is called Nimbus.", app_id="nimbus")
    bearer = {"Authorization": f"Bearer {mem0.acme}"}

    async def native(memory_id: str) -> dict[str, Any]:
        found: dict[str, Any] = (
            await mem0.api.get(f"/api/memories/{memory_id}", headers=bearer)
        ).json()
        return found

    keyed = await native(added["id"])
    assert (keyed["agent_id"], keyed["scope"], keyed["value"]) == (
        "bot",
        "agent",
        "Reply in French.",
    )
    assert (await native(run["id"]))["scope"] == "session"
    assert (await native(app["id"]))["scope"] == "global"
    assert sorted(await mem0.listed({"agent_id": "bot"})) == [
        "Reply in French.",
        "Ticket 42 is open.",
    ]
    assert await mem0.listed({"app_id": "nimbus"}) == ["The product is called Nimbus."]
    await mem0.call("PUT", f"/v1/memories/{added['id']}/", json={"text": "Reply in German."})
    events = await mem0.call("GET", f"/v1/memories/{added['id']}/history/")
    assert [e["event"] for e in events] == ["ADD", "UPDATE"]
    await mem0.call("DELETE", "/v1/memories/", params={"agent_id": "bot"})
    assert await mem0.listed({"agent_id": "bot"}) == []
    assert await mem0.listed({"app_id": "nimbus"}) == ["The product is called Nimbus."]


async def test_a_key_bound_to_one_agent_acts_for_it_alone(mem0: Mem0) -> None:
    await mem0.add("Mine.", agent_id="bot")
    answer = await mem0.api.post(
        "/v3/memories/add/",
        json={"messages": "Not mine.", "agent_id": "billing"},
        headers=token(mem0.bot_only),
    )
    assert error(answer, 403)["field"] == "agent_id"
    assert await mem0.listed({"agent_id": "bot"}, key=mem0.bot_only) == ["Mine."]


# -- filters ----------------------------------------------------------------------------------


async def test_filters_select_by_logic_dates_metadata_and_categories(mem0: Mem0) -> None:
    await mem0.add("Old trip.", user_id="jo", metadata={"topic": "travel"}, timestamp=1_600_000_000)
    await mem0.add("New trip.", user_id="jo", metadata={"topic": "travel"}, timestamp=1_700_000_000)
    await mem0.add("Work note.", user_id="jo", metadata={"topic": "work"}, timestamp=1_700_000_000)
    await mem0.add("Kim's.", user_id="kim")
    cases: list[tuple[dict[str, Any], set[str]]] = [
        (
            {"AND": [{"user_id": "jo"}, {"created_at": {"gte": "2022-01-01"}}]},
            {"New trip.", "Work note."},
        ),
        ({"user_id": "jo", "metadata": {"topic": {"ne": "travel"}}}, {"Work note."}),
        ({"user_id": {"in": ["jo", "kim"]}, "metadata": {"topic": "work"}}, {"Work note."}),
        (
            {
                "OR": [
                    {"user_id": "kim"},
                    {"AND": [{"user_id": "jo"}, {"timestamp": {"lt": 1_650_000_000}}]},
                ]
            },
            {"Kim's.", "Old trip."},
        ),
        ({"user_id": "jo", "NOT": [{"metadata": {"topic": "travel"}}]}, {"Work note."}),
        ({"user_id": "*", "keywords": {"icontains": "TRIP"}}, {"Old trip.", "New trip."}),
        (
            {"user_id": "jo", "categories": {"contains": "event"}},
            {"Old trip.", "New trip.", "Work note."},
        ),
    ]
    for filters, expected in cases:
        assert set(await mem0.listed(filters)) == expected, filters


async def test_get_all_pages_with_mem0s_envelope(mem0: Mem0) -> None:
    for n in range(5):
        await mem0.add(f"Note {n}.", user_id="lee", timestamp=1_700_000_000 + n)
    first = await mem0.call(
        "POST",
        "/v3/memories/",
        params={"page": 1, "page_size": 2},
        json={"filters": {"user_id": "lee"}},
    )
    assert first["count"] == 5 and first["previous"] is None
    assert [m["memory"] for m in first["results"]] == ["Note 4.", "Note 3."]
    assert "page=2" in first["next"]
    last = await mem0.call(
        "POST",
        "/v3/memories/",
        params={"page": 3, "page_size": 2},
        json={"filters": {"user_id": "lee"}},
    )
    assert [m["memory"] for m in last["results"]] == ["Note 0."] and last["next"] is None


@pytest.mark.parametrize(
    ("filters", "field"),
    [
        ({"user_id": {"between": [1, 2]}}, "filters.user_id.between"),
        ({"colour": "red"}, "filters.colour"),
        ({"AND": {"user_id": "a"}}, "filters.AND"),
        ({"user_id": {"in": ["x"] * (MAX_IN_VALUES * 10)}}, "filters.user_id.in"),
        ({"user_id": "a", "created_at": {"gte": "yesterday"}}, "filters.created_at.gte"),
        ({"metadata": {"topic": "x"}}, "filters"),
        ({"run_id": "r1"}, "filters.run_id"),
        ({}, "filters"),
        ({"user_id": {"in": [{"a": 1}]}}, "filters.user_id.in[0]"),
    ],
)
async def test_a_bad_filter_is_a_422_naming_its_place(
    mem0: Mem0, filters: dict[str, Any], field: str
) -> None:
    answer = await mem0.api.post(
        "/v3/memories/search/", json={"query": "q", "filters": filters}, headers=token(mem0.acme)
    )
    assert error(answer, 422)["field"] == field


def test_a_deep_filter_is_refused_before_it_is_walked() -> None:
    nested: dict[str, Any] = {"user_id": "a"}
    for _ in range(50):
        nested = {"AND": [nested]}
    with pytest.raises(Exception, match="nest at most"):
        parse_filters(nested)


def test_not_excludes_and_wildcard_needs_a_value() -> None:
    subject = Subject(id="m", text="t", user_id="u", created_at=0, updated_at=0)
    assert matches(parse_filters({"user_id": "*"}), subject)
    assert not matches(parse_filters({"agent_id": "*"}), subject)
    assert not matches(parse_filters({"NOT": {"user_id": "u"}}), subject)
    assert matches(parse_filters({"OR": [{"user_id": "x"}, {"user_id": {"ne": "x"}}]}), subject)


# -- bad input, the rest of mem0's platform ---------------------------------------------------


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/v3/memories/add/", {"messages": [], "user_id": "a"}, "messages"),
        (
            "/v3/memories/add/",
            {"messages": [{"role": "user", "content": 5}], "user_id": "a"},
            "messages[0].content",
        ),
        ("/v3/memories/add/", {"messages": "hi", "user_id": "a", "colour": 1}, "colour"),
        ("/v3/memories/add/", {"messages": "hi"}, "user_id"),
        (
            "/v3/memories/add/",
            {"messages": "hi", "user_id": "a", "filters": {"user_id": "b"}},
            "user_id",
        ),
        ("/v3/memories/add/", {"messages": "x" * 5_000, "user_id": "a"}, "messages[0].content"),
        ("/v3/memories/search/", {"query": "q"}, "filters"),
        (
            "/v3/memories/search/",
            {"query": "q", "filters": {"user_id": "a"}, "top_k": 1000},
            "top_k",
        ),
        ("/v3/memories/search/", {"query": "", "filters": {"user_id": "a"}}, "query"),
        (
            "/v3/memories/search/",
            {"query": "q", "filters": {"user_id": "a"}, "threshold": 2},
            "threshold",
        ),
    ],
)
async def test_bad_bodies_are_422s_naming_the_field(
    mem0: Mem0, path: str, body: dict[str, Any], field: str
) -> None:
    answer = await mem0.api.post(path, json=body, headers=token(mem0.acme))
    assert error(answer, 422)["field"] == field


async def test_malformed_json_and_an_oversized_body_answer_4xx(mem0: Mem0) -> None:
    headers = {**token(mem0.acme), "Content-Type": "application/json"}
    answer = await mem0.api.post("/v3/memories/add/", content=b"{not json", headers=headers)
    assert error(answer, 400)["field"] == "body"
    huge = {"messages": "x" * 100_000, "user_id": "a"}
    answer = await mem0.api.post("/v3/memories/add/", json=huge, headers=headers)
    assert answer.status_code == 413


@pytest.mark.parametrize("memory_id", ["nope", "u.bm9wZQ.x", "u.!!!.x", "u..", "mem_" + "0" * 32])
async def test_an_unknown_id_is_a_404(mem0: Mem0, memory_id: str) -> None:
    for method in ("GET", "DELETE"):
        answer = await mem0.api.request(
            method, f"/v1/memories/{memory_id}/", headers=token(mem0.acme)
        )
        assert answer.status_code == 404, answer.text


async def test_a_batch_checks_every_id_before_it_changes_any(mem0: Mem0) -> None:
    (kept,) = await mem0.add("Keep me.", user_id="max")
    answer = await mem0.api.request(
        "DELETE",
        "/v1/batch/",
        json={"memories": [{"memory_id": kept["id"]}, {"memory_id": "nope"}]},
        headers=token(mem0.acme),
    )
    assert error(answer, 404)["field"] == "memories[1].memory_id"
    assert await mem0.listed({"user_id": "max"}) == ["Keep me."]
    await mem0.call(
        "PUT", "/v1/batch/", json={"memories": [{"memory_id": kept["id"], "text": "Changed."}]}
    )
    assert await mem0.listed({"user_id": "max"}) == ["Changed."]
    await mem0.call("DELETE", "/v1/batch/", json={"memories": [{"memory_id": kept["id"]}]})
    assert await mem0.listed({"user_id": "max"}) == []


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/api/v1/orgs/organizations/"),
        ("PATCH", "/api/v1/orgs/organizations/o/projects/p/"),
        ("POST", "/api/v1/webhooks/projects/p/"),
        ("POST", "/v1/exports/"),
        ("POST", "/v1/summary/"),
        ("POST", "/v1/feedback/"),
        ("GET", "/v2/profiles/settings/"),
        ("GET", "/v2/entities/user/alice/profile/"),
        ("POST", "/v2/memories/search/"),
    ],
)
async def test_mem0s_platform_routes_say_they_are_not_served(
    mem0: Mem0, method: str, path: str
) -> None:
    answer = await mem0.api.request(method, path, headers=token(mem0.acme))
    found = error(answer, 404)
    assert found["code"] == "not_served" and "memstack does not serve" in found["message"]


async def test_entities_list_users_and_agents(mem0: Mem0) -> None:
    await mem0.add("A.", user_id="nina")
    await mem0.add("B.", agent_id="bot")
    found = await mem0.call("GET", "/v1/entities/")
    assert {(e["type"], e["name"], e["total_memories"]) for e in found["results"]} == {
        ("user", "nina", 1),
        ("agent", "bot", 1),
    }
    await mem0.call("DELETE", "/v2/entities/user/nina/")
    assert await mem0.listed({"user_id": "nina"}) == []


async def test_an_add_with_a_model_is_followed_as_a_mem0_event(tmp_path: Path) -> None:
    services = open_services(
        store_url=f"sqlite:///{tmp_path / 'jobs.db'}",
        redis_url=None,
        embedder=HashEmbedder(),
        extraction_provider=ScriptedProvider(responder=extractor),
        extraction_model="extractor-1",
    )
    transport = httpx.ASGITransport(app=create_app(services))
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://memstack.test") as api:
            mem0 = Mem0(api, services)
            body = {"messages": "I have a beagle named Biscuit.", "user_id": "olga"}
            added = await mem0.call("POST", "/v3/memories/add/", json=body)
            assert added["status"] == "PENDING"
            await services.users.wait_for_jobs()
            event = await mem0.call("GET", f"/v1/event/{added['event_id']}/")
            assert event["status"] == "SUCCEEDED" and len(event["results"]) == len(FACTS)
            listed = set(await mem0.listed({"user_id": "olga"}))
            assert set(FACTS) <= listed
            verbatim = await mem0.call("POST", "/v3/memories/add/", json={**body, "infer": False})
            assert verbatim["status"] == "SUCCEEDED" and verbatim["event_id"] is None
            hidden = await api.get(f"/v1/event/{added['event_id']}/", headers=token(mem0.other))
            assert hidden.status_code == 404
    finally:
        services.close()
