"""Run LangGraph's own store tests (vendored here) against ``MemstackStore``.

- The stores the tests construct are ``MemstackStore`` on real SQLite databases
  (``_shim.py``); each test's databases are closed after it.
- The tests that probe ``SqliteStore``'s own SQL (its tables, its migrations, its SQL
  helpers and the guards of SQL it builds) cannot apply: they are deselected by name,
  each with its reason (``NOT_APPLICABLE``, also in README.md), and listed at the end of
  the run.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.adapters.langgraph import _shim

HERE = "tests/adapters/langgraph/"

NOT_APPLICABLE: dict[str, str] = {
    "test_sqlite_store.py::test_nonnull_migrations": (
        "reads SqliteStore.MIGRATIONS, the SQL that creates its tables; memstack's "
        "schema is its own (storage/_sqlite_schema.py)"
    ),
    "test_sqlite_store.py::test_escape_glob_literal": (
        "unit test of SqliteStore's private _escape_glob_literal (GLOB escaping for its SQL)"
    ),
    "test_sqlite_store.py::test_namespace_match_pattern": (
        "unit test of SqliteStore's private _namespace_match_pattern (a regex for its SQL function)"
    ),
    "test_sqlite_store.py::test_list_namespaces_prefix_uses_indexable_condition": (
        "inspects the SQL text BaseSqliteStore builds for list_namespaces (GLOB vs its "
        "registered function)"
    ),
    "test_sqlite_store.py::test_sql_injection_vulnerability": (
        "SqliteStore refuses filter keys outside [A-Za-z0-9_.-] because it splices them "
        "into SQL; memstack builds no SQL from a filter key and matches any key, as "
        "InMemoryStore does"
    ),
    "test_sqlite_store.py::test_vector_store_initialization": (
        "after its index_config checks (which pass), queries sqlite_master for "
        "SqliteStore's vector tables through store.conn"
    ),
}
"""Test (file::name, every parametrization) -> why it cannot apply to MemstackStore."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    kept: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    for item in items:
        name = item.nodeid.removeprefix(HERE).split("[")[0]
        (dropped if item.nodeid.startswith(HERE) and name in NOT_APPLICABLE else kept).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept
        config.stash[_DESELECTED] = dropped


_DESELECTED = pytest.StashKey[list[pytest.Item]]()


def pytest_terminal_summary(
    terminalreporter: pytest.TerminalReporter, config: pytest.Config
) -> None:
    dropped = config.stash.get(_DESELECTED, [])
    if dropped:
        terminalreporter.section("LangGraph store tests not applicable to MemstackStore")
        for item in dropped:
            name = item.nodeid.removeprefix(HERE).split("[")[0]
            terminalreporter.write_line(f"{item.nodeid}: {NOT_APPLICABLE[name]}")


@pytest.fixture(autouse=True)
def _databases(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    databases = _shim.Databases(tmp_path)
    monkeypatch.setattr(_shim, "databases", databases)
    yield
    databases.close_all()


@pytest.fixture
def mocker() -> Iterator[_shim.MockerFixture]:
    fixture = _shim.MockerFixture()
    yield fixture
    fixture.stop_all()
