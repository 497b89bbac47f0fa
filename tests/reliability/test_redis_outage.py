"""Redis stopped and restarted under load: context heals to what the long-term tier says.

A real ``memstack serve --redis-url`` (one process, then ``--workers 2``) over a SQLite
file and a Redis this module starts itself, so it can kill it and start it again on the
same port: once empty (no persistence), once with its old data (``appendonly yes`` and
``appendfsync always``, so every acknowledged command is on disk when it is killed).

Each case: several agents write concurrently; Redis is killed; they keep writing,
updating and deleting (every request must still succeed); Redis comes back; each agent
writes once more (the write that used to make a cold bucket look complete); then
``/api/context`` of every agent is compared with the long-term tier's own view, built from
``GET /api/memories``: the newest ``STM_MAX_ENTRIES`` of the agent's bucket by update time
and the newest of the global bucket. The figures are printed; all must be 0.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner

from memstack.cli import main
from tests.servers import (
    _redis_answers,
    free_port,
    redis_server_binary,
    serve_env,
    serving_memstack,
)

AGENTS = 6
STM_MAX = 12
BEFORE = 16  # memories each agent writes before the outage (more than STM_MAX)
DURING = 14  # operations each agent makes while Redis is down
OUTAGE_S = 1.5


@dataclass(kw_only=True)
class Redis:
    """A Redis on a fixed port that can be killed and started again, with or without AOF."""

    port: int
    work_dir: Path
    persistent: bool
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        persistence = ["--appendonly", "yes", "--appendfsync", "always"]
        if not self.persistent:
            persistence = ["--appendonly", "no"]
        with (self.work_dir / "output.log").open("ab") as output:
            self.process = subprocess.Popen(
                [
                    str(redis_server_binary()),
                    *("--bind", "127.0.0.1", "--port", str(self.port), "--save", ""),
                    *persistence,
                    *("--dir", str(self.work_dir), "--daemonize", "no"),
                ],
                cwd=self.work_dir,
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
            )
        if not _redis_answers(self.process, self.port):
            raise RuntimeError((self.work_dir / "output.log").read_text())

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)


@contextmanager
def redis_server(*, persistent: bool) -> Iterator[Redis]:
    work_dir = Path(tempfile.mkdtemp(prefix="memstack-outage-redis-"))
    server = Redis(port=free_port(), work_dir=work_dir, persistent=persistent)
    try:
        server.start()
        yield server
    finally:
        server.kill()
        shutil.rmtree(work_dir, ignore_errors=True)


@contextmanager
def memstack_serve(redis_url: str, workers: int, tmp: Path) -> Iterator[httpx.Client]:
    """``memstack serve`` on a fresh SQLite file; yields a client with its API key."""
    db = tmp / "outage.db"
    created = CliRunner().invoke(
        main, ["keys", "create", "--tenant", "default", "--json", "--db", str(db)]
    )
    assert created.exit_code == 0, created.output
    key = json.loads(created.stdout)["key"]
    flags = ["--workers", str(workers), "--redis-url", redis_url, "--db", str(db)]
    env = serve_env(STM_MAX_ENTRIES=str(STM_MAX))
    headers = {"Authorization": f"Bearer {key}"}
    with (
        serving_memstack(flags, env=env, log=tmp / "serve.log") as served,
        httpx.Client(base_url=served.url, headers=headers, timeout=30) as client,
    ):
        yield client


@dataclass(kw_only=True)
class Load:
    """Every agent's writes, from one thread per agent; failures are collected, not raised."""

    client: httpx.Client
    agents: list[str]
    failures: list[str] = field(default_factory=list)
    requests: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def run(self, operations: int, *, phase: str) -> None:
        threads = [
            threading.Thread(target=self._agent, args=(agent, operations, phase))
            for agent in self.agents
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    def _agent(self, agent: str, operations: int, phase: str) -> None:
        rng = random.Random(f"{agent}-{phase}")
        for i in range(operations):
            ids = self._ids(agent) if phase != "before" else []
            roll = rng.random()
            if ids and roll < 0.25:
                self._call("DELETE", f"/api/memories/{rng.choice(ids)}")
            elif ids and roll < 0.55:
                body = {"value": f"{agent} updated in {phase} #{i}"}
                self._call("PUT", f"/api/memories/{rng.choice(ids)}", json=body)
            else:
                scope = "global" if rng.random() < 0.15 else "agent"
                body = {"agent_id": agent, "key": f"{phase}-{i}", "value": f"{agent} {phase} #{i}"}
                self._call("POST", "/api/memories", json={**body, "scope": scope})
            if i % 3 == 0:
                self._call("GET", "/api/context", params={"agent_id": agent})

    def _ids(self, agent: str) -> list[str]:
        listed = self.client.get("/api/memories", params={"agent_id": agent, "limit": 500})
        return [m["id"] for m in listed.json()["memories"] if m["scope"] == "agent"]

    def _call(self, method: str, path: str, **kwargs: Any) -> None:
        response = self.client.request(method, path, **kwargs)
        with self._lock:
            self.requests += 1
            if response.status_code >= 400 and not (
                method == "DELETE" and response.status_code == 404  # deleted by a twin
            ):
                self.failures.append(f"{method} {path}: {response.status_code} {response.text}")


@dataclass(frozen=True, kw_only=True)
class Diff:
    expected: int
    missing: int
    stale: int
    ghost: int


def compare(client: httpx.Client, agent: str) -> Diff:
    """``/api/context`` against the long-term tier's view of the same agent."""

    def newest(params: dict[str, str]) -> list[dict[str, Any]]:
        listed = client.get("/api/memories", params={**params, "limit": "500"}).json()
        assert listed["total"] == len(listed["memories"])
        rows = listed["memories"]
        return sorted(rows, key=lambda m: (m["updated_at"], m["id"]), reverse=True)[:STM_MAX]

    own = newest({"agent_id": agent, "scope": "agent"})
    expected = {m["id"]: m for m in own + newest({"scope": "global"})}
    context = client.get("/api/context", params={"agent_id": agent}).json()
    got = {m["id"]: m for m in context["memories"]}
    fields = ("value", "updated_at")
    return Diff(
        expected=len(expected),
        missing=len(expected.keys() - got.keys()),
        stale=sum(
            any(got[i][f] != expected[i][f] for f in fields) for i in expected.keys() & got.keys()
        ),
        ghost=len(got.keys() - expected.keys()),
    )


CASES = [
    pytest.param(False, 1, id="empty-redis-1-process"),
    pytest.param(True, 1, id="aof-redis-1-process"),
    pytest.param(False, 2, id="empty-redis-2-workers"),
    pytest.param(True, 2, id="aof-redis-2-workers"),
]


@pytest.mark.parametrize(("persistent", "workers"), CASES)
def test_context_equals_the_long_term_tier_after_redis_returns(
    persistent: bool, workers: int, tmp_path: Path
) -> None:
    with (
        redis_server(persistent=persistent) as redis,
        memstack_serve(redis.url, workers, tmp_path) as client,
    ):
        agents = [f"agent-{uuid.uuid4().hex[:6]}" for _ in range(AGENTS)]
        load = Load(client=client, agents=agents)
        load.run(BEFORE, phase="before")
        started = time.monotonic()
        redis.kill()
        load.run(DURING, phase="during")
        time.sleep(max(0.0, OUTAGE_S - (time.monotonic() - started)))
        redis.start()
        load.run(1, phase="after")  # one write per agent into a (maybe) cold bucket
        diffs = [compare(client, agent) for agent in agents]
    total = Diff(
        expected=sum(d.expected for d in diffs),
        missing=sum(d.missing for d in diffs),
        stale=sum(d.stale for d in diffs),
        ghost=sum(d.ghost for d in diffs),
    )
    print(
        f"\nredis {'with AOF' if persistent else 'empty'}, {workers} process(es): "
        f"{load.requests} requests, {len(load.failures)} failed; context of {AGENTS} agents "
        f"against the long-term tier: {total.expected} expected, {total.missing} missing, "
        f"{total.stale} stale, {total.ghost} deleted-or-extra"
    )
    assert load.failures == []
    assert total == Diff(expected=total.expected, missing=0, stale=0, ghost=0)
