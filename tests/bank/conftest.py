"""A ``bank`` for every way a MemoryBank can keep its content."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from memstack.bank import MemoryBank
from memstack.clock import ManualClock
from memstack.storage import InMemoryRecordStore, RecordStore, SQLiteRecordStore

BACKENDS = ["memory", "sqlite", "store"]

BankFactory = Callable[..., MemoryBank]


@pytest.fixture(params=BACKENDS)
def make_bank(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BankFactory]:
    """Open banks of one backend, once per backend (``memory``: the spec's in-process
    bank; ``sqlite``: a file of its own; ``store``: on a given RecordStore); all are
    closed after the test."""
    backend: str = request.param
    opened: list[MemoryBank] = []
    stores: list[RecordStore] = []

    def make(**kwargs: object) -> MemoryBank:
        if backend == "sqlite":
            kwargs.setdefault("path", tmp_path / "bank.db")
        elif backend == "store":
            if not stores:
                stores.append(InMemoryRecordStore(clock=ManualClock()))
            kwargs.setdefault("store", stores[0])
        bank = MemoryBank(**kwargs)  # type: ignore[arg-type]
        opened.append(bank)
        return bank

    yield make
    for bank in opened:
        bank.close()
    for store in stores:
        store.close()


@pytest.fixture
def bank(make_bank: BankFactory) -> MemoryBank:
    """An empty bank without a line cap, once per backend."""
    return make_bank()


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Iterator[SQLiteRecordStore]:
    store = SQLiteRecordStore(tmp_path / "shared.db")
    store.setup()
    yield store
    store.close()
