"""Run the vendored Agents SDK session tests against ``MemstackSession``.

- Every test runs twice, on memstack's SQLite store and on PostgreSQL (``backend``).
- The tests that probe the SDK's ``SQLiteSession`` internals (its tables, connections and
  locks) cannot apply: they are deselected by name, each with its reason
  (``NOT_APPLICABLE``), listed at the end of the run and in README.md.
- A test that hangs (a deadlock across threads and event loops) ends the run after
  ``HANG_S`` with every thread's stack, instead of hanging it.
"""

from __future__ import annotations

import faulthandler
import os
import sys
import threading
from collections.abc import Generator, Iterator
from pathlib import Path

import pytest
from agents.tracing import setup as tracing_setup
from agents.tracing.provider import DefaultTraceProvider

from memstack.storage import PostgresRecordStore, RecordStore
from tests.adapters.openai_agents.shim import SQLiteSession

HERE = Path(__file__).resolve().parent
HANG_S = 60.0

_TABLES = "it reads or writes the SDK's own SQLite tables (agent_sessions, agent_messages)"
_CONNECTIONS = (
    "it inspects SQLiteSession's per-thread sqlite3 connections (_connections), which "
    "memstack's store does not keep per session"
)
_CORRUPT = (
    "it inserts a row of invalid JSON through SQLiteSession._locked_connection into the "
    "SDK's agent_messages table; memstack stores each item as checked JSON, so no such "
    "row can exist"
)
_INJECTED = (
    "it injects its own sqlite3.Connection (one that fails or pauses) through "
    "SQLiteSession._get_connection and _connections_lock"
)

NOT_APPLICABLE: dict[str, str] = {
    "test_sqlite_session_close_closes_worker_thread_connections": _CONNECTIONS,
    "test_sqlite_session_reaps_connections_from_exited_worker_threads": _CONNECTIONS,
    "test_sqlite_session_closes_retired_connections_before_the_next_allocation": _CONNECTIONS
    + " (it also patches sqlite3.connect to count allocations)",
    "test_sqlite_session_keeps_connections_of_live_worker_threads": _CONNECTIONS,
    "test_sqlite_session_pop_item_skips_corrupt_most_recent": _CORRUPT,
    "test_sqlite_session_pop_item_returns_none_after_dropping_only_corrupt_rows": _CORRUPT,
    "test_sqlite_session_get_items_limit_skips_corrupt_newest_rows": _CORRUPT,
    "test_sqlite_session_get_items_session_settings_limit_skips_corrupt_rows": _CORRUPT,
    "test_sqlite_session_file_lock_is_shared_across_instances": (
        "it checks SQLiteSession's class-level per-file lock registry (_lock, "
        "_file_lock_counts, _file_locks)"
    ),
    "test_sqlite_session_failed_add_items_releases_write_lock": _TABLES
    + " to probe SQLite's write lock after the failed add",
    "test_sqlite_session_failed_clear_session_rolls_back": _TABLES
    + " (drops agent_sessions to make the clear fail)",
    "test_sqlite_session_failed_pop_item_releases_write_lock": _TABLES
    + " (drops agent_messages to make the pop fail)",
    "test_sqlite_session_rollback_failure_evicts_connection": _INJECTED,
    "test_sqlite_session_close_retries_quarantined_connection": _INJECTED
    + " and reads _quarantined_connections",
    "test_sqlite_session_post_commit_cancellation_propagates_after_known_outcome": _INJECTED,
}


_DROPPED = pytest.StashKey[list[str]]()


def _here(item: pytest.Item) -> bool:
    return HERE in Path(str(item.path)).resolve().parents


def _name(item: pytest.Item) -> str:
    return getattr(item, "originalname", item.name)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    dropped = [i for i in items if _here(i) and _name(i) in NOT_APPLICABLE]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = [i for i in items if i not in dropped]
        config.stash[_DROPPED] = [i.nodeid.split("[")[0] for i in dropped]


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    dropped = terminalreporter.config.stash.get(_DROPPED, [])
    if dropped:
        terminalreporter.section("Agents SDK tests not applicable to MemstackSession")
        for test in sorted(set(dropped)):
            runs = dropped.count(test)
            reason = NOT_APPLICABLE[test.rsplit("::", 1)[-1]]
            terminalreporter.line(f"{test} ({runs} deselected): {reason}")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    if not _here(item):
        return (yield)
    watchdog = threading.Timer(HANG_S, _end_the_run, args=(item,))
    watchdog.daemon = True
    watchdog.start()
    try:
        return (yield)
    finally:
        watchdog.cancel()


def _end_the_run(item: pytest.Item) -> None:
    """A hung test's threads cannot be stopped: show every thread's stack on the real
    stderr (out of pytest's capture, as pytest-timeout does) and end the process."""
    capture = item.config.pluginmanager.getplugin("capturemanager")
    if capture is not None:
        capture.suspend_global_capture(in_=True)
    sys.stderr.write(f"\n{item.nodeid} hung for {HANG_S:.0f}s; every thread's stack:\n")
    sys.stderr.flush()
    faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
    sys.stderr.flush()
    os._exit(1)


@pytest.fixture(autouse=True)
def _traces_stay_local(monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs trace to a provider with no processor, so nothing is exported (the SDK's own
    conftest swaps the provider for the same reason)."""
    monkeypatch.setattr(tracing_setup, "GLOBAL_TRACE_PROVIDER", DefaultTraceProvider())


@pytest.fixture(autouse=True, params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The store under every ``SQLiteSession`` a test builds: memstack's SQLite store on
    the test's file, or PostgreSQL (every ``db_path`` of a test in one fresh schema)."""
    if request.param == "postgres":
        url: str = request.getfixturevalue("postgres_url")
        schema: str = request.getfixturevalue("pg_schema")

        def open_postgres(db_path: str) -> RecordStore:
            return PostgresRecordStore(url, schema=schema)

        monkeypatch.setattr(SQLiteSession, "open_store", staticmethod(open_postgres))
    yield request.param
