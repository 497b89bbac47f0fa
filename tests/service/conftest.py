"""The long-term store of every backend, on a manual clock, for the service tests."""

from collections.abc import Iterator
from pathlib import Path

import pytest

from memstack import ManualClock
from memstack.storage import (
    InMemoryRecordStore,
    PostgresRecordStore,
    RecordStore,
    SQLiteRecordStore,
)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(start=1_780_000_000.0)


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def records(
    request: pytest.FixtureRequest, tmp_path: Path, clock: ManualClock
) -> Iterator[RecordStore]:
    store: RecordStore
    if request.param == "memory":
        store = InMemoryRecordStore(clock=clock)
    elif request.param == "sqlite":
        store = SQLiteRecordStore(tmp_path / "mem.db", clock=clock)
    else:
        schema = request.getfixturevalue("pg_schema")
        store = PostgresRecordStore(
            request.getfixturevalue("postgres_url"), clock=clock, schema=schema
        )
    store.setup()
    yield store
    store.close()
