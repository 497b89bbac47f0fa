from collections.abc import Iterator

import pytest

from memstack import ManualClock
from memstack.embeddings import HashEmbedder
from memstack.longterm import Collection, LongTermMemory
from memstack.storage import InMemoryRecordStore

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
