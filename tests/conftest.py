"""Test-wide guards: no test may reach a real network service (an LLM API above all)."""

from __future__ import annotations

import ipaddress
import socket
import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from tests.servers import (
    PostgresServer,
    RedisCluster,
    running_postgres,
    running_redis,
    running_redis_cluster,
    running_replica,
)


def _is_local(address: Any) -> bool:
    if isinstance(address, str | bytes):  # a Unix socket path
        return True
    host = address[0] if isinstance(address, tuple) else address
    if host in ("localhost", ""):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@pytest.fixture(autouse=True, scope="session")
def _forbid_network() -> Iterator[None]:
    """Refuse every outbound connection that is not to this machine."""
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex

    def connect(self: socket.socket, address: Any) -> None:
        if not _is_local(address):
            raise RuntimeError(f"tests must not reach the network (tried {address!r})")
        real_connect(self, address)

    def connect_ex(self: socket.socket, address: Any) -> int:
        if not _is_local(address):
            raise RuntimeError(f"tests must not reach the network (tried {address!r})")
        return real_connect_ex(self, address)

    setattr(socket.socket, "connect", connect)  # noqa: B010
    setattr(socket.socket, "connect_ex", connect_ex)  # noqa: B010
    try:
        yield
    finally:
        setattr(socket.socket, "connect", real_connect)  # noqa: B010
        setattr(socket.socket, "connect_ex", real_connect_ex)  # noqa: B010


@pytest.fixture(autouse=True, scope="session")
def _memstack_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Commands run without --db keep their data in a throwaway MEMSTACK_HOME, not the
    user's data folder (subprocesses inherit it)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MEMSTACK_HOME", str(tmp_path_factory.mktemp("memstack-home")))
        yield


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A real PostgreSQL + pgvector server for the whole session, started on first use."""
    with running_postgres() as server:
        yield server.url


@pytest.fixture(scope="session")
def replicated_postgres() -> Iterator[tuple[PostgresServer, PostgresServer]]:
    """A PostgreSQL primary of its own and a hot standby streaming from it, for the
    session, started on first use. A test that stops either, or pauses the standby's
    replay, puts it back before it ends."""
    with running_postgres() as primary, running_replica(primary) as standby:
        yield primary, standby


@pytest.fixture(scope="session")
def redis_cluster() -> Iterator[RedisCluster]:
    """A throwaway Redis Cluster of three masters for the session (tests use a key prefix
    of their own; a test that restarts a node waits for the cluster to settle)."""
    with running_redis_cluster() as cluster:
        yield cluster


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """A real Redis server (no persistence) for the whole session, started on first use."""
    with running_redis() as server:
        yield server.url


@pytest.fixture
def pg_schema(request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh schema name, dropped with everything in it after the test."""
    url: str = request.getfixturevalue("postgres_url")
    schema = f"t_{uuid.uuid4().hex[:12]}"
    yield schema
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
