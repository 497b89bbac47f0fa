"""Fixtures: a ``store`` for every backend, and the throwaway PostgreSQL behind one."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from memstack.clock import ManualClock
from memstack.storage import (
    InMemoryRecordStore,
    PostgresRecordStore,
    RecordStore,
    SQLiteRecordStore,
)

BACKENDS = ["memory", "sqlite", "postgres"]

StoreFactory = Callable[[str], RecordStore]


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def make_store(
    request: pytest.FixtureRequest, tmp_path: Path, clock: ManualClock
) -> Iterator[StoreFactory]:
    """Open a set-up store of a backend; every store it made is closed after the test."""
    opened: list[RecordStore] = []

    def make(backend: str) -> RecordStore:
        store: RecordStore
        if backend == "memory":
            store = InMemoryRecordStore(clock=clock)
        elif backend == "sqlite":
            store = SQLiteRecordStore(tmp_path / "memstack.db", clock=clock)
        elif backend == "postgres":
            url: str = request.getfixturevalue("postgres_url")
            schema: str = request.getfixturevalue("pg_schema")
            store = PostgresRecordStore(url, clock=clock, schema=schema)
        else:
            raise AssertionError(backend)
        opened.append(store)
        store.setup()
        return store

    yield make
    for store in opened:
        store.close()


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, make_store: StoreFactory) -> RecordStore:
    """One set-up, empty store per backend."""
    return make_store(request.param)
