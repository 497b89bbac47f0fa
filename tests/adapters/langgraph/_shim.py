"""The vendored LangGraph store tests' stores and fixtures, built on ``MemstackStore``.

LangGraph's tests construct ``InMemoryStore(index=, ttl=)``,
``SqliteStore.from_conn_string(conn, index=, ttl=)`` and
``AsyncSqliteStore.from_conn_string(...)``; the classes here take those signatures and
add nothing else: the store under test is ``MemstackStore`` with every method its own, on
memstack's SQLite record store. ``InMemoryStore`` gets a fresh SQLite file of its own;
the SQLite stores open the file their test names, or SQLite's private in-memory database
for ``":memory:"``, as LangGraph's do. The async store is opened as ``afrom_url`` opens
one: bound to the running loop, so a sync call made on it raises.

The SQLite store's private helpers the tests import (``_escape_glob_literal``, ...) are
only used by tests deselected as not applicable (README.md); they raise if called.
``MockerFixture`` is the part of pytest-mock the tests use (``stub``, ``spy``).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any, NoReturn
from unittest import mock

from langgraph.store.base import IndexConfig, TTLConfig

from memstack.adapters.langgraph import MemstackStore
from memstack.storage import RecordStore, SQLiteRecordStore

__all__ = [
    "NS_MATCH_FUNCTION",
    "AsyncSqliteStore",
    "BaseSqliteStore",
    "Databases",
    "InMemoryStore",
    "MockerFixture",
    "SqliteIndexConfig",
    "SqliteStore",
    "_escape_glob_literal",
    "_namespace_match_pattern",
]

SqliteIndexConfig = IndexConfig


class Databases:
    """The SQLite databases the stores of one test open; the conftest closes them."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.opened: list[RecordStore] = []

    def open(self, conn_string: str | None = None) -> RecordStore:
        path = conn_string or str(self.folder / f"store-{len(self.opened)}.db")
        records = SQLiteRecordStore(path)
        self.opened.append(records)
        records.setup()
        return records

    def close_all(self) -> None:
        for records in self.opened:
            records.close()


databases: Databases | None = None
"""Set for each test by the folder's conftest."""


def _open(conn_string: str | None = None) -> RecordStore:
    assert databases is not None, "the conftest of tests/adapters/langgraph sets this"
    return databases.open(conn_string)


class InMemoryStore(MemstackStore):
    """``InMemoryStore(index=, ttl=)`` as a MemstackStore on a SQLite file of its own."""

    def __init__(self, *, index: IndexConfig | None = None, ttl: TTLConfig | None = None) -> None:
        super().__init__(_open(), index=index, ttl=ttl)


class SqliteStore(MemstackStore):
    """``SqliteStore.from_conn_string`` and ``setup`` over a MemstackStore."""

    @classmethod
    @contextmanager
    def from_conn_string(
        cls, conn_string: str, *, index: IndexConfig | None = None, ttl: TTLConfig | None = None
    ) -> Iterator[SqliteStore]:
        store = cls(_open(conn_string), index=index, ttl=ttl)
        try:
            yield store
        finally:
            store.close()

    def setup(self) -> None:
        self.records.setup()


class AsyncSqliteStore(MemstackStore):
    """``AsyncSqliteStore.from_conn_string`` and ``setup`` over a MemstackStore bound to
    the running loop."""

    @classmethod
    @asynccontextmanager
    async def from_conn_string(
        cls, conn_string: str, *, index: IndexConfig | None = None, ttl: TTLConfig | None = None
    ) -> AsyncIterator[AsyncSqliteStore]:
        records = await asyncio.to_thread(_open, conn_string)
        store = cls(records, index=index, ttl=ttl, loop=asyncio.get_running_loop())
        try:
            yield store
        finally:
            store.close()

    async def setup(self) -> None:
        await asyncio.to_thread(self.records.setup)


def _not_applicable(name: str) -> Callable[..., NoReturn]:
    def call(*args: object, **kwargs: object) -> NoReturn:
        raise NotImplementedError(f"{name} is SqliteStore's own SQL; MemstackStore has none.")

    return call


NS_MATCH_FUNCTION = "_langgraph_namespace_match"
BaseSqliteStore = _not_applicable("BaseSqliteStore")
_escape_glob_literal = _not_applicable("_escape_glob_literal")
_namespace_match_pattern = _not_applicable("_namespace_match_pattern")


class MockerFixture:
    """pytest-mock's ``mocker``, as far as the vendored tests use it."""

    def __init__(self) -> None:
        self._patches: list[Any] = []

    def stub(self, name: str | None = None) -> mock.MagicMock:
        return mock.MagicMock(spec=lambda *args, **kwargs: None, name=name)

    def spy(self, obj: object, name: str) -> mock.MagicMock:
        """Record the calls of ``obj.name`` (``self`` first, for a class's method) and
        let each through to the real method."""
        original = getattr(obj, name)
        patcher = mock.patch.object(obj, name, side_effect=original, autospec=True)
        spied: mock.MagicMock = patcher.start()
        self._patches.append(patcher)
        return spied

    def stop_all(self) -> None:
        for patcher in reversed(self._patches):
            patcher.stop()
