"""The vendored SDK tests' ``SQLiteSession``, built as a ``MemstackSession``.

The SDK's tests construct ``SQLiteSession(session_id, db_path, ..., session_settings=)``;
this subclass takes that signature and adds nothing else: the session under test is
``MemstackSession`` with every method its own, on a memstack record store opened by
``open_store`` from ``db_path``: a real SQLite file (``":memory:"``, the SDK's default,
is SQLite's private in-memory database, as in the SDK), or PostgreSQL when the folder's
``conftest.py`` swaps ``open_store`` for the ``postgres`` run. ``close()`` closes the
store it opened. The SDK's table-name arguments are accepted and unused: memstack keeps
its own schema.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from memstack.adapters.openai_agents import MemstackSession
from memstack.storage import RecordStore, SQLiteRecordStore

__all__ = ["SQLiteSession", "open_sqlite"]


def open_sqlite(db_path: str) -> RecordStore:
    """memstack's SQLite store on the file the SDK test names (or ``:memory:``)."""
    return SQLiteRecordStore(db_path)


class SQLiteSession(MemstackSession):
    """``SQLiteSession``'s constructor over a ``MemstackSession``."""

    open_store: ClassVar[Callable[[str], RecordStore]] = staticmethod(open_sqlite)

    def __init__(
        self,
        session_id: str,
        db_path: str | Path = ":memory:",
        sessions_table: str = "agent_sessions",
        messages_table: str = "agent_messages",
        session_settings: Any = None,
    ) -> None:
        records = type(self).open_store(str(db_path))
        try:
            records.setup()
            super().__init__(session_id, records, session_settings=session_settings)
        except BaseException:
            records.close()
            raise

    def close(self) -> None:
        super().close()
        self.records.close()
