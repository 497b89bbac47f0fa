"""A throwaway ``memstack serve`` for ``memstack bench server``.

A fresh temporary directory holds the server's log and, unless the server is given a
PostgreSQL URL, its SQLite file; a key for a tenant named ``bench-<random>`` is made with
``memstack keys create`` in the same store before the server starts on a free loopback
port. Once it answers, the benchmark waits until its processes are idle (every worker
has loaded its model), so start-up work stays out of the measurement. On exit the
server is stopped and the directory deleted; on a PostgreSQL or Redis given to it, the
tenant and its key are erased (``bench.erase``), so nothing the benchmark wrote
outlives it.

The child gets this process's environment minus every setting that would point it
elsewhere or change its shape (a PostgreSQL or Redis URL, another database file, host,
port, workers, tier sizes), and the embedding provider the benchmark asks for: the
defaults, as the in-process floor (``bench.inprocess``) is built, with only the store,
short-term tier and worker count the ``ServerShape`` names.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import httpx

from memstack.bench.proc import cpu_seconds
from memstack.errors import StoreUnavailable

__all__ = ["ServerShape", "SpawnedServer", "spawned_server"]

_NOT_INHERITED: Final = (
    "MEMSTACK_POSTGRES_URL",
    "MEMSTACK_POSTGRES_READ_URL",
    "MEMSTACK_REDIS_URL",
    "MEMSTACK_REDIS_CLUSTER",
    "MEMSTACK_DB",
    "MEMSTACK_HOST",
    "MEMSTACK_PORT",
    "MEMSTACK_WORKERS",
    "MEMSTACK_MEMORY_EMBEDDING_MODEL",
    "MEMSTACK_STM_MAX_ENTRIES",
    "STM_MAX_ENTRIES",
    "MEMSTACK_LTM_MAX_ENTRIES",
    "LTM_MAX_ENTRIES",
    "MEMSTACK_DURABLE",
)


_IDLE_CPU_S: Final = 0.05
"""CPU seconds per ``_IDLE_POLL_S`` under which the server counts as idle (10% of a core)."""
_IDLE_POLL_S: Final = 0.5


@dataclass(frozen=True, kw_only=True)
class ServerShape:
    """What the server runs on: SQLite in the temporary directory unless
    ``postgres_url``, with reads on the hot standbys ``postgres_read_urls``; the
    short-term tier in process unless ``redis_url``; ``workers`` processes (more than 1
    needs ``redis_url``, as ``memstack serve`` says)."""

    postgres_url: str | None = None
    postgres_read_urls: tuple[str, ...] = ()
    redis_url: str | None = None
    workers: int = 1

    @property
    def store(self) -> str:
        return "postgres" if self.postgres_url else "sqlite"

    def env(self) -> dict[str, str]:
        """The URLs, for ``keys create`` and ``serve`` alike (in the environment, so no
        password shows in a process list)."""
        urls = {
            "MEMSTACK_POSTGRES_URL": self.postgres_url,
            "MEMSTACK_POSTGRES_READ_URL": ",".join(self.postgres_read_urls),
            "MEMSTACK_REDIS_URL": self.redis_url,
        }
        return {name: url for name, url in urls.items() if url}

    def store_args(self, db: Path) -> list[str]:
        """``--db`` of the SQLite file, when there is no PostgreSQL URL."""
        return [] if self.postgres_url else ["--db", str(db)]


@dataclass(frozen=True, kw_only=True)
class SpawnedServer:
    url: str
    api_key: str
    tenant: str
    pid: int
    db: Path
    """The SQLite file (unused on PostgreSQL); its directory is deleted on exit."""
    store: str = "sqlite"
    workers: int = 1
    erased: dict[str, int] = field(default_factory=dict)
    """Filled on exit when the server ran on a PostgreSQL or Redis given to it: what
    ``bench.erase.erase_tenant`` removed of the tenant there."""


@contextmanager
def spawned_server(
    embedder_kind: str,
    *,
    shape: ServerShape | None = None,
    startup_timeout: float = 120.0,
    env: Mapping[str, str] | None = None,
    server_args: Sequence[str] = (),
) -> Iterator[SpawnedServer]:
    """Run a server with embedder ``local`` or ``hash`` until the block ends, on what
    ``shape`` names; ``server_args`` go to ``memstack serve`` (``["--durable"]``)."""
    shape = shape or ServerShape()
    child_env = _child_env(os.environ if env is None else env, embedder_kind) | shape.env()
    with tempfile.TemporaryDirectory(prefix="memstack-bench-server-") as tmp:
        db = Path(tmp) / "bench.db"
        tenant = f"bench-{uuid.uuid4().hex[:10]}"
        key, key_id = _create_key(shape.store_args(db), tenant, child_env)
        erased: dict[str, int] = {}
        try:
            with _serving(shape, db, child_env, startup_timeout, server_args) as (url, pid):
                yield SpawnedServer(
                    url=url,
                    api_key=key,
                    tenant=tenant,
                    pid=pid,
                    db=db,
                    store=shape.store,
                    workers=shape.workers,
                    erased=erased,
                )
        finally:
            if shape.postgres_url or shape.redis_url:
                from memstack.bench.erase import erase_tenant

                erased |= erase_tenant(
                    tenant,
                    key_id=key_id,
                    postgres_url=shape.postgres_url,
                    redis_url=shape.redis_url,
                )


@contextmanager
def _serving(
    shape: ServerShape,
    db: Path,
    env: Mapping[str, str],
    startup_timeout: float,
    server_args: Sequence[str],
) -> Iterator[tuple[str, int]]:
    """``memstack serve`` on a free port until the block ends: its URL and pid, once
    it answers and has gone idle."""
    port = _free_port()
    command = [*_memstack(), "serve", *server_args, *shape.store_args(db)]
    command += ["--workers", str(shape.workers)]
    command += ["--host", "127.0.0.1", "--port", str(port)]
    log_path = db.parent / "server.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(command, env=dict(env), stdout=log, stderr=subprocess.STDOUT)
        try:
            url = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + startup_timeout
            _wait_until_ready(url, process, log_path, deadline)
            _wait_until_idle(process, log_path, deadline)
            yield url, process.pid
        finally:
            _stop(process)


def _memstack() -> list[str]:
    return [sys.executable, "-m", "memstack"]


def _child_env(env: Mapping[str, str], embedder_kind: str) -> dict[str, str]:
    child = {k: v for k, v in env.items() if k not in _NOT_INHERITED}
    child["MEMSTACK_MEMORY_EMBEDDING_PROVIDER"] = embedder_kind
    return child


def _create_key(store_args: Sequence[str], tenant: str, env: Mapping[str, str]) -> tuple[str, str]:
    """The raw key and its id, made in the store ``store_args`` name."""
    done = subprocess.run(
        [*_memstack(), "keys", "create", "--tenant", tenant, "--json", *store_args],
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if done.returncode != 0:
        raise StoreUnavailable(
            f"memstack keys create failed for the benchmark server: {done.stderr.strip()}"
        )
    made = json.loads(done.stdout)
    return str(made["key"]), str(made["id"])


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _wait_until_ready(
    url: str, process: subprocess.Popen[bytes], log: Path, deadline: float
) -> None:
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise StoreUnavailable(
                f"the benchmark server exited with code {process.returncode}; "
                f"its output:\n{log.read_text(errors='replace')[-2000:]}"
            )
        try:
            if httpx.get(f"{url}/healthz", timeout=2.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise StoreUnavailable(
        f"the benchmark server did not answer on {url} in time; "
        f"its output:\n{log.read_text(errors='replace')[-2000:]}"
    )


def _wait_until_idle(process: subprocess.Popen[bytes], log: Path, deadline: float) -> None:
    """Until the server's processes use under ``_IDLE_CPU_S`` per ``_IDLE_POLL_S`` twice
    running: the first worker answers while the others still load their models."""
    quiet = 0
    used = cpu_seconds(process.pid)
    while quiet < 2:
        if time.monotonic() > deadline or process.poll() is not None:
            raise StoreUnavailable(
                "the benchmark server did not settle (its workers kept busy or it exited); "
                f"its output:\n{log.read_text(errors='replace')[-2000:]}"
            )
        time.sleep(_IDLE_POLL_S)
        before, used = used, cpu_seconds(process.pid)
        quiet = quiet + 1 if used - before < _IDLE_CPU_S else 0


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
