"""``memstack serve --workers 2``: two worker processes serve one port over shared tiers."""

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import redis
from click.testing import CliRunner

from memstack.cli import main
from memstack.embeddings import BatchingEmbedder, CachedEmbedder, EmbeddingSettings, HashEmbedder
from memstack.settings import ServerSettings
from memstack.wiring import open_services
from tests.servers import free_port


def test_settings_survive_the_trip_through_the_environment(tmp_path: Path):
    env = {"MEMSTACK_MEMORY_EMBEDDING_PROVIDER": "hash", "STM_MAX_ENTRIES": "7"}
    flags = {"db": tmp_path / "x.db", "redis_url": "redis://127.0.0.1:1/3", "workers": 3}
    settings = ServerSettings.from_env(env, **flags)
    assert settings.workers == 3 and settings.stm_max_entries == 7
    assert ServerSettings.from_env({**env, **settings.to_env()}) == settings
    assert ServerSettings.from_env({}).workers == 1


@dataclass(frozen=True, kw_only=True)
class Served:
    url: str
    key: str
    process: subprocess.Popen[str]
    redis_url: str


def test_an_embedder_the_services_build_is_batched_and_cached(tmp_path: Path):
    built = open_services(
        store_url=f"sqlite:///{tmp_path / 'a.db'}",
        redis_url=None,
        embedding_settings=EmbeddingSettings(provider="hash"),
    )
    given = HashEmbedder()
    passed_in = open_services(
        store_url=f"sqlite:///{tmp_path / 'b.db'}", redis_url=None, embedder=given
    )
    try:
        assert isinstance(built.embedder, CachedEmbedder)
        assert isinstance(built.embedder.inner, BatchingEmbedder)
        assert built.batching is built.embedder.inner  # its lanes stop with the services
        assert built.embedder.model_id == "hash:64"
        assert built.memories.embedder is built.embedder
        assert passed_in.embedder is given and passed_in.memories.embedder is given
    finally:
        built.close()
        passed_in.close()


def _worker_pids(parent: int, count: int) -> list[int]:
    """The pids of the ``count`` worker processes uvicorn spawned under ``parent``."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        children = Path(f"/proc/{parent}/task/{parent}/children").read_text().split()
        workers = [
            int(pid)
            for pid in children
            if b"spawn_main" in Path(f"/proc/{pid}/cmdline").read_bytes()
        ]
        if len(workers) == count:
            return workers
        time.sleep(0.05)
    raise AssertionError(f"expected {count} worker processes under {parent}")


@contextmanager
def _only(serving: int, workers: list[int]) -> Iterator[None]:
    """Every worker but ``serving`` stopped (SIGSTOP), so ``serving`` accepts every request."""
    stopped = [pid for pid in workers if pid != serving]
    for pid in stopped:
        os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        for pid in stopped:
            os.kill(pid, signal.SIGCONT)


def _wait_healthy(url: str) -> dict[str, str]:
    deadline = time.monotonic() + 60
    while True:
        try:
            response = httpx.get(f"{url}/healthz", timeout=10)
            if response.status_code == 200:
                health: dict[str, str] = response.json()
                return health
        except httpx.TransportError:
            if time.monotonic() > deadline:
                raise
        time.sleep(0.05)


@pytest.fixture
def served(tmp_path: Path, redis_url: str) -> Iterator[Served]:
    """``memstack serve --workers 2`` over a temp SQLite db and a Redis database of its own."""
    db = tmp_path / "workers.db"
    created = CliRunner().invoke(
        main, ["keys", "create", "--tenant", "default", "--json", "--db", str(db)]
    )
    assert created.exit_code == 0, created.output
    key = json.loads(created.stdout)["key"]
    port = free_port()
    env = {**os.environ, "MEMSTACK_MEMORY_EMBEDDING_PROVIDER": "hash", "PYTHONUNBUFFERED": "1"}
    for name in ("MEMSTACK_POSTGRES_URL", "MEMSTACK_REDIS_URL", "MEMSTACK_WORKERS"):
        env.pop(name, None)
    redis_db = redis_url.rsplit("/", 1)[0] + "/9"  # a database of its own in the shared Redis
    with redis.Redis.from_url(redis_db) as client:
        client.flushdb()
    command = [sys.executable, "-m", "memstack", "serve", "--workers", "2"]
    command += ["--redis-url", redis_db, "--db", str(db), "--port", str(port)]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env
    )
    try:
        yield Served(url=f"http://127.0.0.1:{port}", key=key, process=process, redis_url=redis_db)
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
        if process.stdout:
            process.stdout.close()


def test_two_worker_processes_serve_requests_over_shared_tiers(served: Served):
    url, key, process = served.url, served.key, served.process
    assert process.stdout is not None
    banner = ""
    while "serving on" not in banner:
        line = process.stdout.readline()
        assert line, f"memstack serve exited:\n{banner}"
        banner += line
    assert "No API key existed" not in banner  # the key made beforehand was found
    assert "short-term tier: Redis" in banner
    assert "2 worker processes, loop uvloop, http httptools" in banner
    assert _wait_healthy(url) == {"status": "ok", "long_term": "up", "short_term": "up"}
    first, second = _worker_pids(process.pid, 2)
    headers = {"Authorization": f"Bearer {key}"}
    agent = f"agent-{uuid.uuid4().hex[:8]}"

    with _only(first, [first, second]):  # stored by one worker process...
        assert _wait_healthy(url)["short_term"] == "up"
        stored = httpx.post(
            f"{url}/api/memories",
            headers=headers,
            json={"agent_id": agent, "key": "colour", "value": "blue"},
            timeout=30,
        )
        assert stored.status_code == 201, stored.text
    memory_id = stored.json()["id"]
    with redis.Redis.from_url(served.redis_url) as client:  # the worker wrote to Redis
        held = [client.hkeys(name) for name in client.scan_iter("*:memories")]
    assert [memory_id.encode()] in held

    with _only(second, [first, second]):  # ...read back through the other
        got = httpx.get(f"{url}/api/memories/{memory_id}", headers=headers, timeout=30)
        assert got.status_code == 200, got.text
        assert (got.json()["key"], got.json()["value"]) == ("colour", "blue")
        listed = httpx.get(f"{url}/api/memories", params={"agent_id": agent}, headers=headers)
        assert listed.json()["total"] == 1
