from collections.abc import Iterator
from pathlib import Path

import pytest

from memstack import ManualClock
from memstack.embeddings import HashEmbedder, LocalEmbedder
from memstack.longterm import Collection, LongTermMemory
from memstack.storage import (
    InMemoryRecordStore,
    PostgresRecordStore,
    RecordStore,
    SQLiteRecordStore,
)

NOW = 1_780_000_000.0


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(start=NOW)


@pytest.fixture
def store(clock: ManualClock) -> Iterator[InMemoryRecordStore]:
    store = InMemoryRecordStore(clock=clock)
    store.setup()
    yield store
    store.close()


@pytest.fixture
def embedder() -> HashEmbedder:
    return HashEmbedder()


@pytest.fixture
def memory(store, embedder, clock) -> LongTermMemory:
    return LongTermMemory(
        collection=Collection(user_id="alice", namespace="chat"),
        store=store,
        embedder=embedder,
        clock=clock,
    )


@pytest.fixture(scope="session")
def local_embedder() -> LocalEmbedder:
    """The real MiniLM model, loaded once."""
    return LocalEmbedder()


@pytest.fixture(params=["sqlite", "postgres"])
def real_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[RecordStore]:
    """A real SQLite file, then a real PostgreSQL (a schema of its own)."""
    store: RecordStore
    if request.param == "sqlite":
        store = SQLiteRecordStore(tmp_path / "ltm.db")
    else:
        url: str = request.getfixturevalue("postgres_url")
        store = PostgresRecordStore(url, schema=f"ltm_{tmp_path.name[-12:].replace('-', '_')}")
    store.setup()
    yield store
    store.delete_namespace(Collection(user_id="alice").name)
    store.delete_namespace(Collection(user_id="bob").name)
    store.close()
