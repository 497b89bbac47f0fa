"""PostgreSQL stopped under load: a fast, honest 503, and nothing lost or failing after.

A PostgreSQL this module starts itself (``durable``: an acknowledged commit survives the
server being killed) is stopped with ``pg_ctl stop -m immediate`` (every connection cut,
as a crash) and started again on the same port and data directory.

- ``test_every_door_answers_503_while_postgres_is_down``: the app in process (uvicorn in
  a thread); each way into it (the routes ``hot_routes`` answers, FastAPI's, the MCP
  endpoint and an MCP tool) with a key whose check is remembered and with one that must
  be looked up in the store, then ``/healthz``.
- ``test_postgres_outage_under_load``: a real ``memstack serve --postgres-url``; clients
  store, search and list concurrently before, during and after the outage, then after a
  restart with no request in between (every pooled connection died unseen), after
  which one client meets those connections.

While PostgreSQL is down every request must answer 503 with ``Retry-After`` and the
server's JSON error body, each within ``DEADLINE_S`` (a bound that holds on a slow
machine; the server's own is ``REQUEST_TIMEOUT_S``, and the slowest answer is printed);
``/healthz`` 503 with ``long_term: down``. Once it is back no request may fail, and every
acknowledged store must read back with its value.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner

from memstack.cli import main
from memstack.embeddings import HashEmbedder
from memstack.service.api_keys import ApiKeys
from memstack.storage.postgres import PING_TIMEOUT_S, REQUEST_TIMEOUT_S
from memstack.transports.rest.health import PROBE_TTL_S
from memstack.wiring import Services, open_services
from tests.server.conftest import LiveServer, serve_in_thread
from tests.servers import PostgresServer, running_postgres, serve_env, serving_memstack

DEADLINE_S = 5.0
"""Every answer while PostgreSQL is down must come within this (the server's own bound
is ``REQUEST_TIMEOUT_S``, 1.5 s; the margin is for a slow machine)."""
CLIENTS = 4
BEFORE = 6  # requests per client before the outage
DURING = 3  # requests per client while PostgreSQL is down (1-1.5 s each)
AFTER = 20  # requests per client after it is back: none may fail


@pytest.fixture(scope="module")
def postgres() -> Iterator[PostgresServer]:
    with running_postgres(durable=True) as server:
        yield server


@contextmanager
def stopped(postgres: PostgresServer) -> Iterator[float]:
    """PostgreSQL stopped (immediately) for the block; yields when it stopped."""
    postgres.stop()
    try:
        yield time.monotonic()
    finally:
        postgres.start()


def assert_unavailable(response: httpx.Response) -> None:
    assert response.status_code == 503, response.text
    assert response.headers["retry-after"] == "1"
    error = response.json()["error"]
    assert error["code"] == "unavailable"
    assert error["message"].startswith("a backing store is unavailable: PostgreSQL"), error


# -- every door, in process -------------------------------------------------------------


def mcp_call(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    params = {"name": tool, "arguments": arguments}
    return {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}


MCP_HEADERS = {"Accept": "application/json, text/event-stream"}
STORE = {"agent_id": "bot", "key": "colour", "value": "The user likes green."}
DOORS: list[tuple[str, str, dict[str, Any] | None]] = [
    ("POST", "/api/memories", STORE),  # hot_routes
    ("POST", "/api/memories/search", {"agent_id": "bot", "query": "green"}),  # hot_routes
    ("GET", "/api/memories?agent_id=bot", None),  # hot_routes
    ("GET", "/api/memories?agent_id=bot&scope=agent", None),  # FastAPI
    ("GET", "/api/memories/{id}", None),  # FastAPI
    ("POST", "/api/knowledge", {"title": "Colours", "text": "Green is calm."}),  # FastAPI
    ("POST", "/mcp", mcp_call("search_memories", {"agent_id": "bot", "query": "green"})),
]


@pytest.fixture
def services(postgres: PostgresServer) -> Iterator[Services]:
    built = open_services(store_url=postgres.url, redis_url=None, embedder=HashEmbedder())
    # A key once checked is trusted for the whole test, so the "remembered" key never
    # needs the store: its requests reach the services.
    built.keys = ApiKeys(built.records, recheck_s=3_600)
    yield built
    built.close()


@pytest.fixture
def live(services: Services) -> Iterator[LiveServer]:
    running = serve_in_thread(services)
    yield running
    running.server.should_exit = True
    running.thread.join(timeout=10)


def test_every_door_answers_503_while_postgres_is_down(
    postgres: PostgresServer, services: Services, live: LiveServer
) -> None:
    tenant = f"t-{uuid.uuid4().hex[:8]}"
    remembered, looked_up = (services.keys.create(tenant=tenant)[0] for _ in range(2))
    with httpx.Client(base_url=live.url, timeout=DEADLINE_S) as client:

        def call(door: tuple[str, str, dict[str, Any] | None], key: str) -> httpx.Response:
            method, path, body = door
            headers = {"Authorization": f"Bearer {key}", **MCP_HEADERS}
            return client.request(method, path.format(id=memory_id), json=body, headers=headers)

        stored = client.post("/api/memories", json=STORE, headers=_auth(remembered))
        assert stored.status_code == 201, stored.text
        memory_id = stored.json()["id"]
        slowest, slowest_door = 0.0, ""
        with stopped(postgres):
            for door in DOORS:
                for key in (remembered, looked_up):
                    started = time.monotonic()
                    response = call(door, key)  # a ReadTimeout after DEADLINE_S
                    took = time.monotonic() - started
                    if took > slowest:
                        slowest, slowest_door = took, f"{door[0]} {door[1]}"
                    if door[1] == "/mcp" and key == remembered:  # a tool error, for the LLM
                        result = response.json()["result"]
                        assert result["isError"], result
                        assert "a backing store is unavailable" in result["content"][0]["text"]
                    else:
                        assert_unavailable(response)
            time.sleep(PROBE_TTL_S)  # what /healthz knew from before has aged
            started = time.monotonic()
            health = client.get("/healthz")
            health_s = time.monotonic() - started
            assert health.status_code == 503
            assert health.headers["retry-after"] == "1"
            assert health.json() == {
                "status": "degraded",
                "long_term": "down",
                "short_term": "in-process",
            }
        print(
            f"\nPostgreSQL down, {len(DOORS)} doors x 2 keys: slowest 503 {slowest:.2f} s "
            f"({slowest_door}), "
            f"/healthz 503 in {health_s:.2f} s (server bounds {REQUEST_TIMEOUT_S} s, "
            f"{PING_TIMEOUT_S} s)"
        )
        failed = [
            (door[1], response.status_code, response.text)
            for _ in range(3)
            for door in DOORS
            for key in (remembered, looked_up)
            if (response := call(door, key)).status_code >= 400
            or (door[1] == "/mcp" and response.json()["result"]["isError"])
        ]
        assert failed == []
        assert _healthy(lambda: client.get("/healthz")) == {
            "status": "ok",
            "long_term": "up",
            "short_term": "in-process",
        }


def _auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def _healthy(get: Callable[[], httpx.Response]) -> Any:
    """``/healthz``'s body once it answers 200 (its probe is remembered for a second)."""
    deadline = time.monotonic() + DEADLINE_S
    while (response := get()).status_code != 200 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert response.status_code == 200, response.text
    return response.json()


# -- a real server under load -------------------------------------------------------------


@contextmanager
def memstack_serve(postgres_url: str, tmp: Path) -> Iterator[httpx.Client]:
    """``memstack serve --postgres-url``; yields a client with a fresh tenant's key."""
    tenant = f"t-{uuid.uuid4().hex[:8]}"
    created = CliRunner().invoke(
        main, ["keys", "create", "--tenant", tenant, "--json", "--postgres-url", postgres_url]
    )
    assert created.exit_code == 0, created.output
    key = json.loads(created.stdout)["key"]
    with (
        serving_memstack(
            ["--postgres-url", postgres_url], env=serve_env(), log=tmp / "serve.log"
        ) as served,
        httpx.Client(base_url=served.url, headers=_auth(key), timeout=DEADLINE_S) as client,
    ):
        yield client


@dataclass(frozen=True, kw_only=True)
class Answer:
    status: int | str  # the HTTP status, or the transport error's name
    seconds: float
    response: httpx.Response | None


@dataclass(kw_only=True)
class Load:
    """Clients storing, searching and listing, one thread each; every answer kept."""

    client: httpx.Client
    acknowledged: dict[str, str] = field(default_factory=dict)  # id -> value
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def run(self, requests: int, phase: str, clients: int = CLIENTS) -> list[Answer]:
        answers: list[Answer] = []
        threads = [
            threading.Thread(target=self._client, args=(f"agent-{i}", requests, phase, answers))
            for i in range(clients)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return answers

    def _client(self, agent: str, requests: int, phase: str, answers: list[Answer]) -> None:
        for i in range(requests):
            value = f"{agent} {phase} #{i}"
            kind = (i + int(agent[-1])) % 3
            started = time.monotonic()
            try:
                if kind == 0:
                    body = {"agent_id": agent, "key": f"{phase}-{i}", "value": value}
                    response = self.client.post("/api/memories", json=body)
                elif kind == 1:
                    body = {"agent_id": agent, "query": phase}
                    response = self.client.post("/api/memories/search", json=body)
                else:
                    response = self.client.get("/api/memories", params={"agent_id": agent})
            except httpx.TransportError as exc:
                answer = Answer(status=type(exc).__name__, seconds=DEADLINE_S, response=None)
            else:
                seconds = time.monotonic() - started
                answer = Answer(status=response.status_code, seconds=seconds, response=response)
                if kind == 0 and response.status_code == 201:
                    with self._lock:
                        self.acknowledged[response.json()["id"]] = value
            with self._lock:
                answers.append(answer)


@dataclass(kw_only=True)
class HealthPoll:
    """``/healthz`` asked every 0.2 s from a thread: (seconds since start, answer)."""

    client: httpx.Client
    answers: list[tuple[float, Answer]] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)

    @contextmanager
    def running(self) -> Iterator[None]:
        thread = threading.Thread(target=self._poll, args=(time.monotonic(),))
        thread.start()
        try:
            yield
        finally:
            self._stop.set()
            thread.join()

    def _poll(self, start: float) -> None:
        while not self._stop.wait(0.2):
            asked = time.monotonic()
            try:
                response = self.client.get("/healthz")
                answer = Answer(
                    status=response.status_code,
                    seconds=time.monotonic() - asked,
                    response=response,
                )
            except httpx.TransportError as exc:
                answer = Answer(status=type(exc).__name__, seconds=DEADLINE_S, response=None)
            self.answers.append((asked - start, answer))


def test_postgres_outage_under_load(postgres: PostgresServer, tmp_path: Path) -> None:
    with memstack_serve(postgres.url, tmp_path) as client:
        load = Load(client=client)
        assert [a.status for a in load.run(BEFORE, "before") if a.status not in (200, 201)] == []
        health = HealthPoll(client=client)
        with stopped(postgres) as since, health.running():
            during = load.run(DURING, "during")
            outage_s = time.monotonic() - since
        after = load.run(AFTER, "after")
        postgres.stop()  # a restart no request sees: every pooled connection died unseen
        postgres.start()
        quiet = load.run(AFTER, "quiet", clients=1)  # one client meets them all
        healthy = _healthy(lambda: client.get("/healthz"))
        lost = [
            id
            for id, value in load.acknowledged.items()
            if (got := client.get(f"/api/memories/{id}")).status_code != 200
            or got.json()["value"] != value
        ]
    # What /healthz said before the outage is remembered for PROBE_TTL_S.
    polled = [a for at, a in health.answers if at > PROBE_TTL_S + 0.5]
    failed_after = [a.status for a in after + quiet if a.status not in (200, 201)]
    print(
        f"\nPostgreSQL down {outage_s:.1f} s under {CLIENTS} clients: {len(during)} requests, "
        f"slowest {max(a.seconds for a in during):.2f} s (server bound {REQUEST_TIMEOUT_S} s), "
        f"statuses {sorted({str(a.status) for a in during})}; /healthz x{len(polled)}, "
        f"slowest {max((a.seconds for a in polled), default=0):.2f} s, statuses "
        f"{sorted({str(a.status) for a in polled})}; after: {len(after)} requests, after a "
        f"quiet restart: {len(quiet)}, {len(failed_after)} failed, slowest "
        f"{max(a.seconds for a in after + quiet):.2f} s; "
        f"{len(load.acknowledged)} stores acknowledged, {len(lost)} lost"
    )
    for answer in during:
        assert answer.response is not None, answer.status  # no timeout, no dropped request
        assert_unavailable(answer.response)
    assert polled
    for answer in polled:
        assert answer.response is not None, answer.status
        assert answer.response.status_code == 503
        assert answer.response.json()["long_term"] == "down"
        assert answer.response.json()["status"] == "degraded"
    assert failed_after == []
    assert healthy == {"status": "ok", "long_term": "up", "short_term": "in-process"}
    assert lost == []
