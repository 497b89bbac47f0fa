"""Fixtures: a set-up record store per backend, a settable clock, a deterministic embedder."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memstack.clock import ManualClock
from memstack.embeddings import HashEmbedder
from memstack.storage import (
    InMemoryRecordStore,
    PostgresRecordStore,
    RecordStore,
    SQLiteRecordStore,
)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def embedder() -> HashEmbedder:
    return HashEmbedder(dim=512)


def open_records(backend: str, request: pytest.FixtureRequest, tmp_path: Path, clock: ManualClock):
    if backend == "memory":
        return InMemoryRecordStore(clock=clock)
    if backend == "sqlite":
        return SQLiteRecordStore(tmp_path / "memstack.db", clock=clock)
    url: str = request.getfixturevalue("postgres_url")
    schema: str = request.getfixturevalue("pg_schema")
    return PostgresRecordStore(url, clock=clock, schema=schema)


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def records(
    request: pytest.FixtureRequest, tmp_path: Path, clock: ManualClock
) -> Iterator[RecordStore]:
    """One empty, set-up record store of each backend."""
    store = open_records(request.param, request, tmp_path, clock)
    store.setup()
    yield store
    store.close()


@pytest.fixture
def sqlite_records(tmp_path: Path, clock: ManualClock) -> Iterator[RecordStore]:
    store = SQLiteRecordStore(tmp_path / "memstack.db", clock=clock)
    store.setup()
    yield store
    store.close()
