"""A throwaway ``memstack serve`` for ``memstack bench server``.

A fresh temporary directory holds the server's SQLite file and log; a key for a
tenant named ``bench-<random>`` is made with ``memstack keys create`` before the
server starts on a free loopback port. On exit the server is stopped and the
directory deleted, so nothing the benchmark wrote outlives it.

The child gets this process's environment minus every setting that would point it
elsewhere or change its shape (a PostgreSQL or Redis URL, another database file, host,
port, workers, tier sizes), and the embedding provider the benchmark asks for: one
process with the defaults, as the in-process floor (``bench.inprocess``) is built.
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
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import httpx

from memstack.errors import StoreUnavailable

__all__ = ["SpawnedServer", "spawned_server"]

_NOT_INHERITED: Final = (
    "MEMSTACK_POSTGRES_URL",
    "MEMSTACK_REDIS_URL",
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


@dataclass(frozen=True, kw_only=True)
class SpawnedServer:
    url: str
    api_key: str
    tenant: str
    pid: int
    db: Path


@contextmanager
def spawned_server(
    embedder_kind: str,
    *,
    startup_timeout: float = 120.0,
    env: Mapping[str, str] | None = None,
    server_args: Sequence[str] = (),
) -> Iterator[SpawnedServer]:
    """Run a server with embedder ``local`` or ``hash`` until the block ends;
    ``server_args`` go to ``memstack serve`` (``["--durable"]``)."""
    child_env = _child_env(os.environ if env is None else env, embedder_kind)
    with tempfile.TemporaryDirectory(prefix="memstack-bench-server-") as tmp:
        db = Path(tmp) / "bench.db"
        tenant = f"bench-{uuid.uuid4().hex[:10]}"
        key = _create_key(db, tenant, child_env)
        port = _free_port()
        command = [*_memstack(), "serve", *server_args, "--db", str(db), "--host", "127.0.0.1"]
        command += ["--port", str(port)]
        log_path = Path(tmp) / "server.log"
        with log_path.open("wb") as log:
            process = subprocess.Popen(
                command,
                env=child_env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
            try:
                url = f"http://127.0.0.1:{port}"
                _wait_until_ready(url, process, log_path, startup_timeout)
                yield SpawnedServer(url=url, api_key=key, tenant=tenant, pid=process.pid, db=db)
            finally:
                _stop(process)


def _memstack() -> list[str]:
    return [sys.executable, "-m", "memstack"]


def _child_env(env: Mapping[str, str], embedder_kind: str) -> dict[str, str]:
    child = {k: v for k, v in env.items() if k not in _NOT_INHERITED}
    child["MEMSTACK_MEMORY_EMBEDDING_PROVIDER"] = embedder_kind
    return child


def _create_key(db: Path, tenant: str, env: Mapping[str, str]) -> str:
    done = subprocess.run(
        [*_memstack(), "keys", "create", "--tenant", tenant, "--json", "--db", str(db)],
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
    return str(json.loads(done.stdout)["key"])


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _wait_until_ready(
    url: str, process: subprocess.Popen[bytes], log: Path, timeout: float
) -> None:
    deadline = time.monotonic() + timeout
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
        f"the benchmark server did not answer on {url} within {timeout:.0f}s; "
        f"its output:\n{log.read_text(errors='replace')[-2000:]}"
    )


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
