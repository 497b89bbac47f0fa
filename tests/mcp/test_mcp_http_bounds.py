"""``GET /mcp`` of a real ``memstack serve``: the stream a stateless server never writes
to ends after ``MEMSTACK_MCP_STREAM_S``, and once its key is revoked; either way the
response is ended properly and the connection serves the next request. A 405 of
``/mcp`` names what it answers in ``Allow``."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from memstack.service.api_keys import ApiKeys
from memstack.wiring import open_records
from tests.servers import ServeProcess, serve_env, serving_memstack

STREAM = {"Accept": "text/event-stream"}
WAIT_S = 60
"""The longest a test waits for a stream to end: far more than the bounds under test
(2 s; the key recheck, 5 s), far less than the one left alone (an hour)."""


def _read_until_ended(response: httpx.Response) -> None:
    """Read ``response`` until the server ends it; fail if it is still open after
    ``WAIT_S`` (the stream carries a ping every 15 s, so a read alone never times out)."""
    deadline = time.monotonic() + WAIT_S
    for _ in response.iter_raw():
        assert time.monotonic() < deadline, "the server did not end the stream"


@dataclass(frozen=True)
class Key:
    keys: ApiKeys
    """The server's keys, from this process."""
    raw: str
    id: str
    db: Path


@pytest.fixture
def key(tmp_path: Path) -> Iterator[Key]:
    """A key of tenant acme in the database the server will use."""
    db = tmp_path / "mcp.db"
    keys = ApiKeys(open_records(f"sqlite:///{db}"))
    raw, info = keys.create(tenant="acme")
    yield Key(keys, raw, info.id, db)
    keys.records.close()


def _serving(key: Key, stream_s: int) -> AbstractContextManager[ServeProcess]:
    env = serve_env(MEMSTACK_MCP_STREAM_S=str(stream_s))
    return serving_memstack(["--db", str(key.db)], env=env, log=key.db.with_suffix(".log"))


def _port(response: httpx.Response) -> int:
    port: int = response.extensions["network_stream"].get_extra_info("client_addr")[1]
    return port


def _client(served: ServeProcess, key: Key) -> httpx.Client:
    auth = {"Authorization": f"Bearer {key.raw}"}
    return httpx.Client(base_url=served.url, headers=auth, timeout=WAIT_S)


def test_a_stream_ends_after_the_longest_a_stream_may_last(key: Key):
    with _serving(key, 2) as served, _client(served, key) as client:
        with client.stream("GET", "/mcp", headers=STREAM) as response:
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/event-stream")
            _read_until_ended(response)
        after = client.get("/healthz")
        assert after.status_code == 200
        assert _port(after) == _port(response)  # ended properly: the connection stays
        assert "Traceback" not in served.tail()


def test_a_stream_ends_once_its_key_is_revoked(key: Key):
    # An hour's bound: only the revocation can end the stream within WAIT_S.
    with _serving(key, 3_600) as served, _client(served, key) as client:
        with client.stream("GET", "/mcp", headers=STREAM) as response:
            assert response.status_code == 200
            key.keys.revoke(key.id)  # as `memstack keys revoke` does, from another process
            _read_until_ended(response)
        after = client.get("/healthz")
        assert _port(after) == _port(response)
        assert client.get("/mcp", headers=STREAM).status_code == 401
        assert "Traceback" not in served.tail()


def test_a_405_of_mcp_says_what_it_answers(key: Key):
    with _serving(key, 2) as served, _client(served, key) as client:
        for method in ("DELETE", "PUT", "PATCH"):
            answer = client.request(method, "/mcp", headers={"Accept": "application/json"})
            assert answer.status_code == 405
            assert answer.headers["Allow"] == "GET, POST"
