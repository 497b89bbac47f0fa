"""HotRoutes: storing and searching memories without FastAPI's machinery, same answers."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.types import Message, Receive, Scope, Send

from memstack.clock import ManualClock
from memstack.embeddings import HashEmbedder
from memstack.service.memories import MAX_LIST_LIMIT, MAX_LIST_OFFSET
from memstack.service.principal import Principal
from memstack.transports.app import create_app
from memstack.transports.rest import routes
from memstack.transports.rest.hot_routes import HotRoutes
from memstack.wiring import Services, open_services
from tests.server.conftest import Keys, auth, make_keys

LIMIT = 64_000


@pytest.fixture
def frozen(tmp_path: Path) -> Iterator[Services]:
    """Services on a clock that stands still: the same request answers the same bytes."""
    services = open_services(
        store_url=f"sqlite:///{tmp_path / 'hot.db'}",
        redis_url=None,
        embedder=HashEmbedder(),
        clock=ManualClock(),
    )
    yield services
    services.close()


@pytest.fixture
def frozen_keys(frozen: Services) -> Keys:
    return make_keys(frozen)


@dataclass
class Pair:
    hot: httpx.AsyncClient
    plain: httpx.AsyncClient


def _client(services: Services, *, hot_routes: bool) -> httpx.AsyncClient:
    app = create_app(services, max_body_bytes=LIMIT, hot_routes=hot_routes)
    transport = httpx.ASGITransport(app=app)
    return httpx.AsyncClient(transport=transport, base_url="http://memstack.test")


@pytest.fixture
async def pair(frozen: Services) -> AsyncIterator[Pair]:
    async with (
        _client(frozen, hot_routes=True) as hot,
        _client(frozen, hot_routes=False) as plain,
    ):
        yield Pair(hot=hot, plain=plain)


JSON_TYPE = {"Content-Type": "application/json"}
STORE = {"agent_id": "bot", "key": "lang", "value": "The user prefers French."}
SEARCH = {"query": "french", "agent_id": "bot"}


def _requests(keys: Keys) -> list[tuple[str, str, dict[str, str], bytes]]:
    """(id, path, headers, body): good requests and every kind of bad one."""
    good = {**auth(keys.acme), **JSON_TYPE}
    store, search = "/api/memories", "/api/memories/search"

    def body(value: Any) -> bytes:
        return json.dumps(value).encode()

    return [
        ("store", store, good, body(STORE)),
        ("store again", store, good, body(STORE)),
        (
            "store every field",
            store,
            good,
            body(
                {
                    **STORE,
                    "key": "tz",
                    "scope": "session",
                    "session_id": "s1",
                    "metadata": {"source": "chat", "n": [1, 2.5, None]},
                    "ttl": 3600,
                    "provenance": "extracted",
                    "provenance_detail": "gpt-x",
                }
            ),
        ),
        ("store non-ASCII", store, good, body({**STORE, "key": "名前", "value": "Zoë — ünïcode"})),
        ("search", search, good, body(SEARCH)),
        ("search every field", search, good, body({**SEARCH, "mode": "text", "limit": 3})),
        ("search as_of", search, good, body({**SEARCH, "as_of": 1_700_000_000.0})),
        ("search provenances", search, good, body({**SEARCH, "provenances": ["extracted"]})),
        (
            "charset",
            store,
            {**good, "Content-Type": "application/json; charset=utf-8"},
            body(STORE),
        ),
        ("malformed JSON", store, good, b'{"agent_id": "bot",'),
        ("empty body", store, good, b""),
        ("not an object", search, good, b"[1, 2]"),
        ("NaN", search, good, b'{"query": "x", "as_of": NaN}'),
        ("unknown key", store, good, body({**STORE, "colour": "red"})),
        ("wrong type", store, good, body({**STORE, "value": 42})),
        ("missing field", store, good, body({"agent_id": "bot", "key": "k"})),
        ("limit too high", search, good, body({**SEARCH, "limit": 1000})),
        ("bad agent id", store, good, body({**STORE, "agent_id": "-no"})),
        ("bad scope", store, good, body({**STORE, "scope": "planet"})),
        ("session id off-scope", store, good, body({**STORE, "session_id": "s1"})),
        ("secret", store, good, body({**STORE, "value": "my key is sk-" + "a1B2" * 12})),
        (
            "forbidden agent",
            store,
            {**auth(keys.acme_bot_only), **JSON_TYPE},
            body({**STORE, "agent_id": "billing"}),
        ),
        ("other tenant", search, {**auth(keys.other), **JSON_TYPE}, body(SEARCH)),
        ("no key", store, JSON_TYPE, body(STORE)),
        ("bad key", store, {**auth("msk_nope_nope"), **JSON_TYPE}, body(STORE)),
        ("basic scheme", store, {"Authorization": f"Basic {keys.acme}", **JSON_TYPE}, body(STORE)),
        ("no content type", store, auth(keys.acme), body(STORE)),
        (
            "text content type",
            store,
            {**auth(keys.acme), "Content-Type": "text/plain"},
            body(STORE),
        ),
        ("too large", store, good, body({**STORE, "value": "x" * LIMIT})),
        (
            "latin-1 body",
            store,
            good,
            '{"agent_id": "bot", "key": "k", "value": "é"}'.encode("latin-1"),
        ),
    ]


async def test_hot_routes_answer_exactly_as_fastapi_does(pair: Pair, frozen_keys: Keys):
    answered: dict[int, int] = {}
    for name, path, headers, body in _requests(frozen_keys):
        hot = await pair.hot.post(path, headers=headers, content=body)
        plain = await pair.plain.post(path, headers=headers, content=body)
        assert (hot.status_code, hot.content) == (plain.status_code, plain.content), name
        assert hot.headers == plain.headers, name
        answered[hot.status_code] = answered.get(hot.status_code, 0) + 1
    # The list covers answers and refusals of every kind.
    assert {200, 201, 400, 401, 403, 413, 422} <= set(answered), answered


def _list_requests(keys: Keys) -> list[tuple[str, str, dict[str, str]]]:
    """(id, query string, headers): listings the hot route answers and every kind it
    leaves to FastAPI."""
    good = auth(keys.acme)
    return [
        ("list", "", good),
        ("agent", "agent_id=bot", good),
        ("page", "agent_id=bot&limit=1&offset=1", good),
        ("limits", f"limit={MAX_LIST_LIMIT}&offset={MAX_LIST_OFFSET}", good),
        ("past the end", "agent_id=bot&offset=7", good),
        ("non-ASCII agent", "agent_id=%E5%90%8D%E5%89%8D", good),
        ("encoded agent", "agent_id=b%6Ft", good),
        ("bad agent id", "agent_id=-no", good),
        ("blank agent", "agent_id=", good),
        ("long agent", "agent_id=" + "a" * 129, good),
        ("limit 0", "limit=0", good),
        ("limit too high", f"limit={MAX_LIST_LIMIT + 1}", good),
        ("offset too high", f"offset={MAX_LIST_OFFSET + 1}", good),
        ("limit word", "limit=ten", good),
        ("limit plus", "limit=%2B5", good),
        ("limit padded", "limit=05", good),
        ("limit spaced", "limit=%205", good),
        ("limit float", "limit=2.0", good),
        ("negative offset", "offset=-1", good),
        ("repeated", "agent_id=bot&agent_id=ops", good),
        ("scope", "agent_id=bot&scope=agent", good),
        ("as_of", "as_of=1700000000", good),
        ("unknown", "colour=red", good),
        ("flag only", "agent_id", good),
        ("forbidden agent", "agent_id=billing", auth(keys.acme_bot_only)),
        ("allowed agent", "agent_id=bot", auth(keys.acme_bot_only)),
        ("other tenant", "agent_id=bot", auth(keys.other)),
        ("no key", "", {}),
        ("bad key", "agent_id=bot", auth("msk_nope_nope")),
        ("basic scheme", "", {"Authorization": f"Basic {keys.acme}"}),
    ]


async def test_the_list_hot_route_answers_exactly_as_fastapi_does(pair: Pair, frozen_keys: Keys):
    headers = {**auth(frozen_keys.acme), **JSON_TYPE}
    for n in range(3):
        await pair.plain.post("/api/memories", headers=headers, json={**STORE, "key": f"k{n}"})
    # A global memory too: a listing of agent_id alone shows it, one with scope=agent not.
    shared = {**STORE, "key": "shared", "scope": "global"}
    assert (await pair.plain.post("/api/memories", headers=headers, json=shared)).is_success
    answered: dict[int, int] = {}
    for name, query, request_headers in _list_requests(frozen_keys):
        path = f"/api/memories?{query}" if query else "/api/memories"
        hot = await pair.hot.get(path, headers=request_headers)
        plain = await pair.plain.get(path, headers=request_headers)
        assert (hot.status_code, hot.content) == (plain.status_code, plain.content), name
        assert hot.headers == plain.headers, name
        answered[hot.status_code] = answered.get(hot.status_code, 0) + 1
    assert {200, 401, 403, 422} <= set(answered), answered
    listed = (await pair.hot.get("/api/memories?agent_id=bot&limit=2", headers=headers)).json()
    # The clock stands still: the store's order is by id then; a page of two of the four.
    assert len({m["key"] for m in listed["memories"]} & {"k0", "k1", "k2", "shared"}) == 2
    assert listed["total"] == 4


class ThroughFastAPI(Exception):
    """Raised by the FastAPI routes' answers in the test below."""


async def test_the_hot_routes_answer_without_the_fastapi_routes(
    frozen: Services, frozen_keys: Keys, monkeypatch: pytest.MonkeyPatch
):
    async def refuse(*args: object, **kwargs: object) -> None:
        raise ThroughFastAPI

    # The FastAPI routes look these up in their module when called; HotRoutes holds its own.
    monkeypatch.setattr(routes, "stored", refuse)
    monkeypatch.setattr(routes, "searched", refuse)
    monkeypatch.setattr(routes, "listed", refuse)
    headers = {**auth(frozen_keys.acme), **JSON_TYPE}
    async with _client(frozen, hot_routes=True) as client:
        stored = await client.post("/api/memories", headers=headers, json=STORE)
        found = await client.post("/api/memories/search", headers=headers, json=SEARCH)
        listed = await client.get("/api/memories?agent_id=bot&limit=5", headers=headers)
    assert stored.status_code == 201 and stored.json()["value"] == STORE["value"]
    assert [h["memory"]["key"] for h in found.json()["results"]] == ["lang"]
    assert [m["key"] for m in listed.json()["memories"]] == ["lang"]
    async with _client(frozen, hot_routes=False) as client:
        for path, body in (("/api/memories", STORE), ("/api/memories/search", SEARCH)):
            with pytest.raises(ThroughFastAPI):
                await client.post(path, headers=headers, json=body)
        with pytest.raises(ThroughFastAPI):
            await client.get("/api/memories?agent_id=bot&limit=5", headers=headers)


async def test_a_client_gone_mid_body_gets_nothing_stored_and_no_answer(
    frozen: Services, frozen_keys: Keys
):
    passed_on: list[Scope] = []

    async def downstream(scope: Scope, receive: Receive, send: Send) -> None:
        passed_on.append(scope)

    messages: list[Message] = [
        {"type": "http.request", "body": json.dumps(STORE).encode(), "more_body": True},
        {"type": "http.disconnect"},
    ]
    sent: list[Message] = []

    async def receive() -> Message:
        return messages.pop(0)

    async def send(message: Message) -> None:
        sent.append(message)

    scope: Scope = {
        "type": "http",
        "method": "POST",
        "path": "/api/memories",
        "headers": [
            (b"authorization", f"Bearer {frozen_keys.acme}".encode()),
            (b"content-type", b"application/json"),
        ],
    }
    await HotRoutes(downstream, services=frozen)(scope, receive, send)
    assert (sent, passed_on) == ([], [])
    page = await frozen.memories.list(Principal(tenant="acme"), agent_id="bot")
    assert page.total == 0


async def test_a_body_fastapi_refuses_costs_no_key_lookup(
    frozen: Services, frozen_keys: Keys, monkeypatch: pytest.MonkeyPatch
):
    looked_up: list[str] = []
    authenticate = frozen.keys.authenticate

    def counted(raw: str) -> Principal | None:
        looked_up.append(raw)
        return authenticate(raw)

    monkeypatch.setattr(frozen.keys, "authenticate", counted)
    headers = {**auth(frozen_keys.acme), **JSON_TYPE}
    async with _client(frozen, hot_routes=True) as client:
        refused = await client.post("/api/memories", headers=headers, content=b'{"agent_id":')
        stored = await client.post("/api/memories", headers=headers, json=STORE)
    assert (refused.status_code, stored.status_code) == (400, 201)
    # FastAPI refuses malformed JSON before its key dependency runs; only the stored
    # request's key was looked up, once, by the hot route.
    assert looked_up == [frozen_keys.acme]
