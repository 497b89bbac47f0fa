"""What only the PostgreSQL backend promises: schemas, pools, setup under concurrency."""

from __future__ import annotations

import socket
import sys
import threading

import psycopg
import pytest
from psycopg_pool import ConnectionPool

from memstack.clock import ManualClock
from memstack.errors import ConfigError, StoreUnavailable
from memstack.storage import PostgresRecordStore
from memstack.storage._postgres_schema import MIGRATIONS
from tests.storage.records import ids, rec


def test_concurrent_setup_applies_each_migration_once(postgres_url: str, pg_schema: str) -> None:
    stores = [PostgresRecordStore(postgres_url, schema=pg_schema) for _ in range(4)]
    errors: list[BaseException] = []

    def setup(store: PostgresRecordStore) -> None:
        try:
            store.setup()
        except BaseException as exc:  # reported on the main thread
            errors.append(exc)

    threads = [threading.Thread(target=setup, args=(s,)) for s in stores]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for store in stores:
        store.close()
    assert errors == []
    with psycopg.connect(postgres_url) as conn:
        rows = conn.execute(f'SELECT version FROM "{pg_schema}".schema_migrations').fetchall()
    assert rows == [(v,) for v in range(1, len(MIGRATIONS) + 1)]


def test_a_caller_owned_pool_stays_open(postgres_url: str, pg_schema: str) -> None:
    with ConnectionPool(postgres_url, min_size=1, max_size=2, open=True) as pool:
        store = PostgresRecordStore(pool, schema=pg_schema, clock=ManualClock())
        store.setup()
        store.upsert([rec("a", embedding=[1, 2])])
        store.close()
        assert not pool.closed
        with pool.connection() as conn:
            count = conn.execute(f'SELECT count(*) FROM "{pg_schema}".records').fetchone()
        assert count == (1,)
        with pytest.raises(StoreUnavailable, match="closed"):
            store.count("ns")


def test_two_schemas_in_one_database_are_separate(postgres_url: str, pg_schema: str) -> None:
    other = f"{pg_schema}_b"
    first = PostgresRecordStore(postgres_url, schema=pg_schema)
    second = PostgresRecordStore(postgres_url, schema=other)
    try:
        first.setup()
        second.setup()
        first.upsert([rec("a")])
        assert second.count("ns") == 0
        assert ids(first.list("ns")) == ["a"]
    finally:
        first.close()
        second.close()
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA "{other}" CASCADE')


@pytest.mark.parametrize("schema", ["", "Upper", "1st", "a-b", 'x"; DROP', "a" * 64])
def test_schema_must_be_a_plain_identifier(postgres_url: str, schema: str) -> None:
    with pytest.raises(ConfigError, match="schema"):
        PostgresRecordStore(postgres_url, schema=schema)


def test_use_before_setup_says_to_call_setup(postgres_url: str, pg_schema: str) -> None:
    store = PostgresRecordStore(postgres_url, schema=pg_schema)
    try:
        with pytest.raises(ConfigError, match="setup"):
            store.count("ns")
    finally:
        store.close()


def test_a_newer_schema_is_refused(postgres_url: str, pg_schema: str) -> None:
    store = PostgresRecordStore(postgres_url, schema=pg_schema)
    try:
        store.setup()
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            conn.execute(f'INSERT INTO "{pg_schema}".schema_migrations VALUES (99, 0)')
        with pytest.raises(ConfigError, match="upgrade memstack"):
            store.setup()
    finally:
        store.close()


def test_an_unreachable_server_is_store_unavailable() -> None:
    with socket.socket() as sock:  # a loopback port that nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    store = PostgresRecordStore(f"postgresql://postgres@127.0.0.1:{port}/postgres", timeout=0.5)
    try:
        with pytest.raises(StoreUnavailable):
            store.count("ns")
    finally:
        store.close()


def test_without_psycopg_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "psycopg_pool", None)
    with pytest.raises(ConfigError, match=r'pip install "memstack\[postgres\]"'):
        PostgresRecordStore("postgresql://nowhere/db")
