"""The long-term store of every backend, on a manual clock, and a service on it, for the
service tests; and a memory as the short-term tier stored it before validity and
provenance."""

from collections.abc import Iterator
from pathlib import Path

import pytest

from memstack import ManualClock
from memstack.embeddings import HashEmbedder
from memstack.service.memories import MemoryService
from memstack.service.stm import InProcessTier
from memstack.storage import (
    InMemoryRecordStore,
    PostgresRecordStore,
    RecordStore,
    SQLiteRecordStore,
)

OLD_STORED_JSON: dict[str, object] = {
    "id": "mem_1",
    "tenant": "acme",
    "agent_id": "bot",
    "scope": "agent",
    "key": "k",
    "value": "v",
    "session_id": None,
    "metadata": {},
    "expires_at": None,
    "created_at": 10.0,
    "updated_at": 12.0,
}


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


@pytest.fixture
def service(records: RecordStore, clock: ManualClock) -> MemoryService:
    return MemoryService(
        records=records,
        embedder=HashEmbedder(),
        short_term=InProcessTier(max_entries=20),
        clock=clock,
    )
