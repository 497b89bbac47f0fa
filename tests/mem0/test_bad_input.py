"""Bad input on mem0's routes of a live ``memstack serve``, sent raw with httpx and through
mem0's Python client: every one is a 4xx (never a 500, never a hang) whose JSON body has
mem0's ``detail``, naming the field and how to put it right, which mem0's client raises as
its ``ValidationError`` (400, 422), ``AuthenticationError`` (401, 403),
``MemoryNotFoundError`` (404) or ``MemoryQuotaExceededError`` (413)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from mem0.exceptions import (
    AuthenticationError,
    MemoryNotFoundError,
    MemoryQuotaExceededError,
    ValidationError,
)

from tests.mem0.conftest import Mem0Server, name

MESSAGE = [{"role": "user", "content": "A fact."}]
REVOKED_WITHIN_S = 30.0
"""A bound on the wait, far above the server's ``RECHECK_S``: never a timing claim."""
THOUSANDS = [f"user-{n}" for n in range(10_000)]


def add_body(**fields: Any) -> dict[str, Any]:
    return {"messages": MESSAGE, "user_id": "someone", "infer": False, **fields}


def search_body(**fields: Any) -> dict[str, Any]:
    return {"query": "fact", "filters": {"user_id": "someone"}, **fields}


# name: method, path, JSON body, status, the field the detail names, a hint of the fix
CASES: dict[str, tuple[str, str, Any, int, str, str]] = {
    "top_k a string": (
        "POST", "/v3/memories/search/", search_body(top_k="ten"), 422, "top_k", "integer"
    ),
    "top_k too large": (
        "POST", "/v3/memories/search/", search_body(top_k=1_000), 422, "top_k", "100"
    ),
    "threshold a string": (
        "POST", "/v3/memories/search/", search_body(threshold="high"), 422, "threshold", "number"
    ),
    "query missing": (
        "POST", "/v3/memories/search/", {"filters": {"user_id": "someone"}}, 422, "query",
        "required",
    ),
    "infer a string": ("POST", "/v3/memories/add/", add_body(infer="no"), 422, "infer", "boolean"),
    "metadata a string": (
        "POST", "/v3/memories/add/", add_body(metadata="m"), 422, "metadata", "dictionary"
    ),
    "content a number": (
        "POST", "/v3/memories/add/",
        add_body(messages=[{"role": "user", "content": 5}]), 422, "messages[0].content", "string",
    ),
    "role unknown": (
        "POST", "/v3/memories/add/",
        add_body(messages=[{"role": "robot", "content": "x"}]), 422, "messages[0].role", "user",
    ),
    "no messages": ("POST", "/v3/memories/add/", add_body(messages=[]), 422, "messages", "1"),
    "no entity id on add": (
        "POST", "/v3/memories/add/", {"messages": MESSAGE}, 422, "user_id", "give user_id"
    ),
    "a run_id alone": (
        "POST", "/v3/memories/add/", {"messages": MESSAGE, "run_id": "r1"}, 422, "run_id",
        "user_id",
    ),
    "an unknown body field": (
        "POST", "/v3/memories/add/", add_body(colour="red"), 422, "colour", "not permitted"
    ),
    "unknown filter operator": (
        "POST", "/v3/memories/",
        {"filters": {"user_id": "someone", "created_at": {"between": [1, 2]}}}, 422,
        "filters.created_at.between", "use one of",
    ),
    "unknown filter field": (
        "POST", "/v3/memories/", {"filters": {"user_id": "someone", "colour": "red"}}, 422,
        "filters.colour", "use AND, OR, NOT",
    ),
    "10,000 values in an in list": (
        "POST", "/v3/memories/search/", search_body(filters={"user_id": {"in": THOUSANDS}}), 422,
        "filters.user_id.in", "at most 1000",
    ),
    "filters naming no entity": (
        "POST", "/v3/memories/", {"filters": {"metadata": {"topic": "food"}}}, 422, "filters",
        "user_id",
    ),
    "filters missing": ("POST", "/v3/memories/", {}, 422, "filters", "required"),
    "a bad date": (
        "POST", "/v3/memories/",
        {"filters": {"user_id": "someone", "created_at": {"gte": "yesterday"}}}, 422,
        "filters.created_at.gte", "ISO 8601",
    ),
    "page_size 0": (
        "POST", "/v3/memories/?page_size=0", {"filters": {"user_id": "someone"}}, 422,
        "page_size", "1",
    ),
    "delete_all naming nobody": ("DELETE", "/v1/memories/", None, 422, "user_id", "give user_id"),
    "update without a change": (
        "PUT", "/v1/memories/mem_nope/", {}, 422, "text", "text or metadata"
    ),
    "batch of nothing": ("PUT", "/v1/batch/", {"memories": []}, 422, "memories", "1"),
    "unknown memory": ("GET", "/v1/memories/mem_nope/", None, 404, "memory_id", "no memory"),
    "unknown user memory": (
        "GET", "/v1/memories/u.c29tZW9uZQ.0123/", None, 404, "memory_id", "no current memory"
    ),
    "batch deleting an unknown memory": (
        "DELETE", "/v1/batch/", {"memories": [{"memory_id": "mem_nope"}]}, 404,
        "memories[0].memory_id", "Nothing was changed",
    ),
}  # fmt: skip


def check_error(
    response: httpx.Response, status: int, field: str | None, hint: str
) -> dict[str, Any]:
    """``response`` is the error ``status`` with mem0's ``detail`` (memstack's
    ``error.message``) giving the fix (``hint``), and ``error.field`` naming ``field``,
    which a refused input's detail names too."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body: dict[str, Any] = response.json()
    detail = body.get("detail")
    assert isinstance(detail, str), body
    assert hint in detail, body
    assert body["error"]["message"] == detail, body
    assert body["error"]["field"] == field, body
    if field is not None and status in (400, 413, 422):
        assert field in detail, body
    return body


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input_is_a_4xx_naming_the_field_and_the_fix(server: Mem0Server, case: str) -> None:
    method, path, body, status, field, hint = CASES[case]
    with server.raw() as http:
        response = http.request(method, path, json=body)
    check_error(response, status, field, hint)


def test_a_message_over_the_limit_names_the_message_and_the_limit(server: Mem0Server) -> None:
    with server.raw() as http:
        too_long = [{"role": "user", "content": "x" * 200_000}]
        response = http.post("/v3/memories/add/", json=add_body(messages=too_long))
    body = check_error(response, 422, "messages[0].content", "characters")
    assert "turns" not in body["detail"], body  # memstack's name for it, not mem0's


def test_a_body_over_the_limit_is_a_413_with_mem0s_detail(server: Mem0Server) -> None:
    with server.raw() as http:
        response = http.post("/v3/memories/add/", json=add_body(messages="x" * 2_000_000))
    check_error(response, 413, "body", "bytes")


def test_unreadable_json_is_a_400(server: Mem0Server) -> None:
    with server.raw() as http:
        response = http.post(
            "/v3/memories/", content=b'{"filters": ', headers={"content-type": "application/json"}
        )
    check_error(response, 400, "body", "JSON")


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/orgs/organizations/",
        "/api/v1/orgs/organizations/o/projects/p/",
        "/api/v1/webhooks/projects/p/",
        "/v1/exports/",
        "/v1/summary/",
        "/v1/feedback/",
        "/v2/profiles/jobs/",
        "/v2/entities/user/alice/profile/",
    ],
)
def test_mem0_routes_memstack_does_not_serve_say_so(server: Mem0Server, path: str) -> None:
    with server.raw() as http:
        response = http.post(path, json={})
    assert response.status_code == 404, response.text
    body = response.json()
    assert body["error"]["code"] == "not_served"
    assert body["detail"].startswith(f"memstack does not serve mem0's {path}: ")


def test_missing_and_unknown_keys_are_401(server: Mem0Server) -> None:
    for headers in ({}, {"Authorization": "Token"}, {"Authorization": "Basic abc"}):
        response = httpx.get(f"{server.url}/v1/ping/", headers=headers, timeout=30)
        check_error(response, 401, None, "Authorization: Token")
    with server.raw("msk_0123456789abcdef_nothing") as http:
        check_error(http.get("/v1/ping/"), 401, None, "invalid or revoked API key")
    with server.raw() as http:
        bearer = http.get("/v1/ping/", headers={"Authorization": f"Bearer {server.key}"})
    assert bearer.status_code == 200


def test_the_python_client_raises_mem0s_errors(server: Mem0Server) -> None:
    with server.client() as client:
        with pytest.raises(ValidationError, match="top_k"):
            client.search("fact", filters={"user_id": "someone"}, top_k="ten")
        with pytest.raises(ValidationError, match=r"filters\.created_at\.between"):
            client.get_all(filters={"user_id": "someone", "created_at": {"between": [1, 2]}})
        with pytest.raises(ValidationError, match=r"filters\.user_id\.in.*at most 1000"):
            client.search("fact", filters={"user_id": {"in": THOUSANDS}})
        with pytest.raises(ValidationError, match="user_id"):
            client.add(MESSAGE, infer=False)
        with pytest.raises(ValidationError, match="user_id"):
            client.delete_all()
        with pytest.raises(ValidationError, match="characters"):
            client.add([{"role": "user", "content": "x" * 200_000}], user_id="someone")
        for call in (client.get, client.history, client.delete):
            with pytest.raises(MemoryNotFoundError, match="no memory"):
                call("mem_nope")
        with pytest.raises(MemoryNotFoundError):
            client.update("mem_nope", text="x")


def test_the_python_client_raises_a_quota_error_with_the_detail_for_a_body_too_large(
    server: Mem0Server,
) -> None:
    with server.client() as client, pytest.raises(MemoryQuotaExceededError) as too_big:
        client.add("x" * 2_000_000, user_id="someone")
    assert too_big.value.message == too_big.value.details.get("detail"), too_big.value


def test_an_unknown_key_stops_the_python_client_at_its_ping(server: Mem0Server) -> None:
    """mem0's constructor pings and raises ``ValueError`` with the server's detail."""
    with pytest.raises(ValueError, match="invalid or revoked API key"):
        with server.client("msk_0123456789abcdef_nothing"):
            pass


def refused_within(seconds: float, call: Callable[[], object]) -> None:
    """``call`` raises ``AuthenticationError`` before ``seconds`` have passed."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            call()
        except AuthenticationError as exc:
            assert "invalid or revoked API key" in str(exc)
            return
        assert time.monotonic() < deadline, f"the revoked key still works after {seconds} s"
        time.sleep(0.1)


def test_a_revoked_key_stops_working(server: Mem0Server) -> None:
    """``memstack keys revoke`` in another process, while the server runs: the server
    trusts a key it checked for ``RECHECK_S`` (1 s), then refuses it."""
    made = json.loads(server.keys("create", "--tenant", "default", "--long-term", "--json"))
    user = name("olga")
    with server.client(made["key"]) as client:
        client.add(MESSAGE, user_id=user, infer=False)
        server.keys("revoke", made["id"])
        refused_within(REVOKED_WITHIN_S, lambda: client.get_all(filters={"user_id": user}))
        with pytest.raises(AuthenticationError):
            client.add(MESSAGE, user_id=user, infer=False)
    with server.raw(made["key"]) as http:
        check_error(http.get("/v1/ping/"), 401, None, "invalid or revoked API key")
    with pytest.raises(ValueError, match="invalid or revoked API key"):
        with server.client(made["key"]):
            pass
    with server.client() as client:  # the first key still works, and sees the memory
        assert client.get_all(filters={"user_id": user})["count"] == 1


def test_another_tenants_key_sees_nothing_of_this_tenant(server: Mem0Server) -> None:
    made = json.loads(server.keys("create", "--tenant", "other", "--long-term", "--json"))
    user = name("pia")
    with server.client() as client:
        mine = client.add(MESSAGE, user_id=user, infer=False)["results"][0]["id"]
    with server.client(made["key"]) as theirs:
        assert theirs.org_id == "other"
        assert theirs.get_all(filters={"user_id": user})["count"] == 0
        assert theirs.search("fact", filters={"user_id": user}, threshold=0.0) == {"results": []}
        with pytest.raises(MemoryNotFoundError):
            theirs.get(mine)
        with pytest.raises(MemoryNotFoundError):
            theirs.delete(mine)
        assert user not in {e["name"] for e in theirs.users()["results"]}
    with server.client() as client:
        assert client.get(mine)["user_id"] == user
