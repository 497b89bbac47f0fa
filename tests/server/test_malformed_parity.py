"""Malformed bodies over real HTTP: the fast path (``hot_routes``) and FastAPI answer the
same status and error for the same body, never a 5xx, and keep the connection open.

Two uvicorn servers over one set of services: one with the hot routes, one without
(``create_app(hot_routes=False)``), each on its own keep-alive ``httpx.Client``. Every
case is sent to both; then a good request on the same client must be served over the
same TCP connection (the same local port): after a 500, uvicorn closes the connection
and the client's next request met a reset.
"""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

from memstack.clock import ManualClock
from memstack.embeddings import HashEmbedder
from memstack.transports.app import create_app
from memstack.transports.rest.body_limits import KNOWLEDGE_BODY_BYTES
from memstack.wiring import Services, open_services
from tests.server.conftest import auth, make_keys

MIB = 1_048_576
STORE = {"agent_id": "parity-bot", "key": "language", "value": "The user prefers French."}
SEARCH = {"query": "French", "agent_id": "parity-bot"}
UPDATE = {"value": "The user prefers Portuguese."}
KNOWLEDGE_SEARCH = {"query": "refunds"}
KNOWLEDGE = {"title": "Refunds", "text": "Refunds are paid within 14 days."}

# A literal as it appears in the body (not all are JSON json.dumps can write), and the
# status it gets in a numeric field.
HUGE = {
    "2**1024": str(2**1024),
    "-2**1024": str(-(2**1024)),
    "10**5000": "1" + "0" * 5000,
    "NaN": "NaN",
    "Infinity": "Infinity",
    "-Infinity": "-Infinity",
    "1e400": "1e400",
}
TTL_OUT_OF_RANGE = ["0", "0.5", "1e-133", "-1", "315360001", str(2**1024), "NaN"]
TTL_RULE = "give 1 to 315360000 seconds"
DEEP = "nested too deeply"


@dataclass(frozen=True)
class Case:
    name: str
    body: bytes
    status: int
    field: str | None = None
    """The ``error.field`` the answer names, when it names one."""
    says: str = ""
    """What the error message says, in part."""
    chunked: bool = False


def _with(base: dict[str, Any], field: str, literal: str) -> bytes:
    """``base`` with ``field`` set to ``literal``, written as is."""
    rest = json.dumps({k: v for k, v in base.items() if k != field})[1:-1]
    return f'{{{rest}{", " if rest else ""}"{field}": {literal}}}'.encode()


def _deep(depth: int) -> str:
    return "[" * depth + "]" * depth


def _cases(base: dict[str, Any], numeric: Iterable[str], nested: str) -> list[Case]:
    """The table for a route whose good body is ``base``: ``numeric`` are its number
    fields, ``nested`` one that a deep value goes into."""
    cases = [
        Case("malformed JSON", b'{"query": "x",', 400, "body"),
        Case("single quotes", b"{'query': 'x'}", 400, "body"),
        Case("not JSON at all", b"remember this", 400, "body"),
        Case("empty body", b"", 400, "body"),
        Case("an array", b"[]", 422, "body"),
        Case("a number", b"1", 422, "body"),
        Case("a string", b'"x"', 422, "body"),
        Case("null", b"null", 422, "body"),
        Case(
            "bad UTF-8",
            json.dumps(base).encode()[:-1] + b', "x": "\xff\xfe"}',
            400,
            "body",
            "not UTF-8",
        ),
        Case("unknown key", json.dumps({**base, "bogus": 1}).encode(), 422, "bogus"),
        Case("deep 1,000 at the top", _deep(1_000).encode(), 400, "body", DEEP),
        Case("deep 100,000 at the top", _deep(100_000).encode(), 400, "body", DEEP),
        Case(f"deep 1,000 in {nested}", _with(base, nested, _deep(1_000)), 400, "body", DEEP),
        Case(f"deep 100,000 in {nested}", _with(base, nested, _deep(100_000)), 400, "body", DEEP),
        Case("over 1 MiB", _padded(base, MIB), 413, "body", "over 1048576 bytes"),
        Case(
            "over 1 MiB, chunked",
            _padded(base, MIB),
            413,
            "body",
            "over 1048576 bytes",
            chunked=True,
        ),
    ]
    for field, value in base.items():
        wrong = "12345" if isinstance(value, str) else '"12345"'
        cases.append(Case(f"{field} of a wrong type", _with(base, field, wrong), 422, field))
    for field in numeric:
        for name, literal in HUGE.items():
            body = _with(base, field, literal)
            if name == "10**5000":  # json.loads refuses more than 4300 digits
                cases.append(Case(f"{field} {name}", body, 400, "body", "4300 digits"))
            else:
                cases.append(Case(f"{field} {name}", body, 422, field))
        cases.append(Case(f"{field} a list", _with(base, field, "[1]"), 422, field))
    return cases


def _padded(base: dict[str, Any], size: int) -> bytes:
    return json.dumps({**base, "pad": "x" * size}).encode()


def _ttl_cases(base: dict[str, Any]) -> list[Case]:
    """One rule for every out-of-range or mistyped TTL, with one message."""
    literals = [*TTL_OUT_OF_RANGE, *(v for k, v in HUGE.items() if k != "10**5000")]
    cases = [Case(f"ttl {t[:12]}", _with(base, "ttl", t), 422, "ttl", TTL_RULE) for t in literals]
    return [*cases, Case("ttl not a time", _with(base, "ttl", '"soon"'), 422, "ttl", "not a time")]


STORE_CASES = [
    *_cases(STORE, ["ttl"], "metadata"),
    *_ttl_cases(STORE),
    Case("2**1024 in metadata", _with(STORE, "metadata", f'{{"n": {2**1024}}}'), 201),
]
SEARCH_CASES = _cases(SEARCH, ["limit", "as_of"], "provenances")


@dataclass
class Served:
    url: str
    server: uvicorn.Server
    thread: threading.Thread


def _services(db: Path) -> Services:
    return open_services(
        store_url=f"sqlite:///{db}", redis_url=None, embedder=HashEmbedder(), clock=ManualClock()
    )


def _serve(services: Services, *, hot_routes: bool) -> Served:
    """A real uvicorn server over ``services`` (closed when it stops) in a thread;
    ``log_config=None`` leaves its logging to the root logger, so a traceback it logs
    reaches ``caplog``."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    # The server's own body limit (1 MiB); services of its own: the knowledge indexer
    # runs on the loop of the server that started it.
    app = create_app(services, hot_routes=hot_routes, owns_services=True)
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_config=None)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the server did not start"
        time.sleep(0.02)
    return Served(f"http://127.0.0.1:{port}", server, thread)


@dataclass
class Pair:
    hot: httpx.Client
    plain: httpx.Client
    memory_id: str


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    db: Path = tmp_path_factory.mktemp("parity") / "parity.db"
    first = _services(db)
    key = make_keys(first).acme  # in the file both servers read
    hot = _serve(first, hot_routes=True)
    plain = _serve(_services(db), hot_routes=False)
    try:
        with (
            httpx.Client(base_url=hot.url, headers=auth(key), timeout=30) as hot_client,
            httpx.Client(base_url=plain.url, headers=auth(key), timeout=30) as plain_client,
        ):
            stored = hot_client.post("/api/memories", json=STORE)
            assert stored.status_code == 201, stored.text
            yield Pair(hot_client, plain_client, stored.json()["id"])
    finally:
        for served in (hot, plain):
            served.server.should_exit = True
            served.thread.join(timeout=10)


def _local_port(response: httpx.Response) -> int:
    """The client's port of the connection ``response`` came over."""
    port: int = response.extensions["network_stream"].get_extra_info("client_addr")[1]
    return port


def _send(client: httpx.Client, method: str, path: str, case: Case) -> httpx.Response:
    """``case`` sent, then a good request: served over the same connection."""
    before = client.get("/healthz")
    assert before.status_code == 200
    content: bytes | Iterator[bytes] = case.body
    if case.chunked:  # no Content-Length: the limit can only count what arrives
        content = (case.body[i : i + 65_536] for i in range(0, len(case.body), 65_536))
    answer = client.request(
        method, path, content=content, headers={"Content-Type": "application/json"}
    )
    after = client.get("/healthz")
    assert after.status_code == 200
    assert _local_port(before) == _local_port(answer) == _local_port(after), (
        f"{case.name}: the connection was not kept"
    )
    return answer


def _check(answer: httpx.Response, case: Case) -> dict[str, Any]:
    assert answer.status_code == case.status, (case.name, answer.text[:300])
    body: dict[str, Any] = answer.json()
    if case.status >= 400:
        error = body["error"]
        assert set(error) <= {"code", "message", "field", "details"}
        assert isinstance(error["code"], str) and error["message"].strip()
        if case.field is not None:
            assert error["field"] == case.field, (case.name, error)
        assert case.says in error["message"], (case.name, error)
    return body


def _parity(pair: Pair, method: str, path: str, case: Case) -> None:
    hot = _check(_send(pair.hot, method, path, case), case)
    plain = _check(_send(pair.plain, method, path, case), case)
    if case.status >= 400:
        assert hot == plain, case.name  # the same error, field and message
    else:
        assert hot.keys() == plain.keys()


@pytest.mark.parametrize("case", STORE_CASES, ids=lambda c: c.name)
def test_storing_answers_alike_on_both_paths(
    pair: Pair, case: Case, caplog: pytest.LogCaptureFixture
):
    _parity(pair, "POST", "/api/memories", case)
    _no_tracebacks(caplog)


@pytest.mark.parametrize("case", SEARCH_CASES, ids=lambda c: c.name)
def test_searching_answers_alike_on_both_paths(
    pair: Pair, case: Case, caplog: pytest.LogCaptureFixture
):
    _parity(pair, "POST", "/api/memories/search", case)
    _no_tracebacks(caplog)


# The routes FastAPI alone answers: the same table, the same statuses.
OTHER_ROUTES = [
    ("PUT", "/api/memories/{id}", [*_cases(UPDATE, ["ttl"], "metadata"), *_ttl_cases(UPDATE)]),
    ("POST", "/api/knowledge/search", _cases(KNOWLEDGE_SEARCH, ["limit"], "query")),
]


@pytest.mark.parametrize(
    ("method", "path", "case"),
    [(method, path, case) for method, path, cases in OTHER_ROUTES for case in cases],
    ids=lambda v: v.name if isinstance(v, Case) else str(v),
)
def test_the_other_body_routes_answer_the_same_table(
    pair: Pair, method: str, path: str, case: Case, caplog: pytest.LogCaptureFixture
):
    _check(_send(pair.hot, method, path.format(id=pair.memory_id), case), case)
    _no_tracebacks(caplog)


@pytest.mark.parametrize("chunked", [False, True], ids=["declared", "chunked"])
def test_a_knowledge_body_over_its_limit_is_refused_with_413(
    pair: Pair, chunked: bool, caplog: pytest.LogCaptureFixture
):
    text = "Refunds are paid within 14 days. " * (KNOWLEDGE_BODY_BYTES // 32)
    body = json.dumps({"title": "Refunds", "text": text}).encode()
    case = Case("over the knowledge body limit", body, 413, "body", chunked=chunked)
    answer = _send(pair.hot, "POST", "/api/knowledge", case)
    error = _check(answer, case)["error"]
    assert f"{KNOWLEDGE_BODY_BYTES} bytes" in error["message"]
    _no_tracebacks(caplog)


def _no_tracebacks(caplog: pytest.LogCaptureFixture) -> None:
    logged = [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
    assert not logged, [r.getMessage() for r in logged]
