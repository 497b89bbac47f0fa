"""``memstack serve --postgres-read-url``: a real server over a primary and a streaming hot
standby (``running_replica``). It reads on the standby, reads back a write at once while
the standby's replay is paused, answers with the standby down, and answers 503 with
``Retry-After`` (never a 500, never a stale answer) once the primary is down too."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

import httpx
import psycopg
import pytest
from click.testing import CliRunner

from memstack.cli import main
from tests.servers import (
    PostgresServer,
    serve_env,
    serving_memstack,
)

Pair = tuple[PostgresServer, PostgresServer]


@pytest.fixture
def servers(replicated_postgres: Pair) -> Pair:
    """The session's primary and its streaming standby (``replicated_postgres``)."""
    return replicated_postgres


def _clients_of(standby: str) -> int:
    """Client connections to the standby other than this one."""
    with psycopg.connect(standby, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity"
            " WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()"
        ).fetchone()
    return 0 if row is None else int(row[0])


def _paused(standby: str, paused: bool) -> None:
    with psycopg.connect(standby, autocommit=True) as conn:
        conn.execute("SELECT pg_wal_replay_pause()" if paused else "SELECT pg_wal_replay_resume()")


def test_serve_reads_on_the_standby_and_around_it(servers: Pair, tmp_path: Path) -> None:
    primary, standby = servers
    created = CliRunner().invoke(
        main, ["keys", "create", "--tenant", "t", "--json", "--postgres-url", primary.url]
    )
    assert created.exit_code == 0, created.output
    auth = {"Authorization": f"Bearer {json.loads(created.stdout)['key']}"}
    flags = ["--postgres-url", primary.url, "--postgres-read-url", standby.url]
    with (
        serving_memstack(flags, env=serve_env(), log=tmp_path / "serve.log") as served,
        httpx.Client(base_url=served.url, headers=auth, timeout=10) as client,
    ):
        assert _clients_of(standby.url) > 0, served.tail()  # its pool reads there
        _paused(standby.url, True)
        try:
            value = f"The user likes green {uuid.uuid4().hex[:6]}."
            stored = client.post(
                "/api/memories", json={"agent_id": "bot", "key": "colour", "value": value}
            )
            assert stored.status_code in (200, 201), stored.text
            listed = client.get("/api/memories", params={"agent_id": "bot"})
            assert [m["value"] for m in listed.json()["memories"]] == [value], listed.text
        finally:
            _paused(standby.url, False)
        standby.stop()
        try:
            listed = client.get("/api/memories", params={"agent_id": "bot"})
            assert listed.status_code == 200, listed.text
            primary.stop()
            try:
                down = client.get("/api/memories", params={"agent_id": "bot"})
                assert down.status_code == 503, down.text
                assert down.headers["retry-after"] == "1"
            finally:
                primary.start()
        finally:
            standby.start()
        deadline = time.monotonic() + 30
        while (again := client.get("/api/memories", params={"agent_id": "bot"})).status_code != 200:
            assert time.monotonic() < deadline, again.text
            time.sleep(0.1)
        assert [m["value"] for m in again.json()["memories"]] == [value]
