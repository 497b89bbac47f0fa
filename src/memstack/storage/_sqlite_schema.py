"""The SQLite schema as an append-only list of numbered migrations.

Never edit a released migration; append a new one. ``migrate`` runs inside the
caller's write transaction, so a schema change is all or nothing.

- ``records.pk`` is an explicit INTEGER PRIMARY KEY so ``VACUUM`` cannot renumber the
  rows the external-content FTS5 index points at.
- ``namespace_versions`` counts writes per namespace; the vector cache compares it to
  notice writes made through any connection, in this process or another. Its rows are
  never deleted, so a count never goes back to a value a cache has seen.
- ``records_fts`` (1) was dropped by 3, when keyword ranking moved in process.
- ``namespace_info`` (2) keeps each namespace's embedding dimension and model, so a
  write checks them with one lookup instead of scanning records.
- ``records.context`` (4): text that keyword search reads beside ``text`` (a turn's
  neighbours), never rendered as the memory.
- validity and provenance (5): ``valid_from`` (NULL: since ``created_at``),
  ``valid_to`` (NULL while current), ``superseded_by``, ``closed_reason``, ``provenance``,
  ``provenance_detail``; a partial index finds a namespace's closed records (history, and
  the ``keep_closed`` bound of caps).
- ``namespace_versions.touches`` (6) counts touches (``last_accessed_at`` updates) apart
  from writes: another connection's touch changes no search index, only the records a
  store holds in process.
"""

from __future__ import annotations

import sqlite3

from memstack.errors import ConfigError

__all__ = ["MIGRATIONS", "migrate"]

MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        """CREATE TABLE records (
            pk INTEGER PRIMARY KEY,
            namespace TEXT NOT NULL,
            id TEXT NOT NULL,
            text TEXT NOT NULL,
            metadata TEXT NOT NULL DEFAULT '{}',
            kind TEXT,
            importance REAL NOT NULL,
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL,
            last_accessed_at REAL,
            expires_at REAL,
            embedding BLOB,
            dim INTEGER,
            UNIQUE (namespace, id)
        )""",
        "CREATE INDEX records_ns_created ON records (namespace, created_at)",
        "CREATE INDEX records_ns_updated ON records (namespace, updated_at)",
        "CREATE INDEX records_ns_dim ON records (namespace, dim)",
        "CREATE INDEX records_ns_kind ON records (namespace, kind)",
        "CREATE INDEX records_expires ON records (expires_at) WHERE expires_at IS NOT NULL",
        """CREATE TABLE namespace_versions (
            namespace TEXT PRIMARY KEY,
            version INTEGER NOT NULL
        ) WITHOUT ROWID""",
        """CREATE VIRTUAL TABLE records_fts USING fts5(
            text, content='records', content_rowid='pk',
            tokenize='porter unicode61 remove_diacritics 2'
        )""",
        """CREATE TRIGGER records_fts_insert AFTER INSERT ON records BEGIN
            INSERT INTO records_fts (rowid, text) VALUES (new.pk, new.text);
        END""",
        """CREATE TRIGGER records_fts_delete AFTER DELETE ON records BEGIN
            INSERT INTO records_fts (records_fts, rowid, text) VALUES ('delete', old.pk, old.text);
        END""",
        """CREATE TRIGGER records_fts_update AFTER UPDATE OF text ON records BEGIN
            INSERT INTO records_fts (records_fts, rowid, text) VALUES ('delete', old.pk, old.text);
            INSERT INTO records_fts (rowid, text) VALUES (new.pk, new.text);
        END""",
    ),
    (
        """CREATE TABLE namespace_info (
            namespace TEXT PRIMARY KEY,
            dim INTEGER NOT NULL,
            model_id TEXT
        ) WITHOUT ROWID""",
        """INSERT INTO namespace_info (namespace, dim)
            SELECT namespace, max(dim) FROM records WHERE dim IS NOT NULL GROUP BY namespace""",
    ),
    (
        # Keywords are ranked by the in-process KeywordIndex now (see _keywords); the FTS5
        # index only cost every write its triggers.
        "DROP TRIGGER records_fts_insert",
        "DROP TRIGGER records_fts_delete",
        "DROP TRIGGER records_fts_update",
        "DROP TABLE records_fts",
    ),
    ("ALTER TABLE records ADD COLUMN context TEXT",),
    (
        "ALTER TABLE records ADD COLUMN valid_from REAL",
        "ALTER TABLE records ADD COLUMN valid_to REAL",
        "ALTER TABLE records ADD COLUMN superseded_by TEXT",
        "ALTER TABLE records ADD COLUMN closed_reason TEXT",
        "ALTER TABLE records ADD COLUMN provenance TEXT",
        "ALTER TABLE records ADD COLUMN provenance_detail TEXT",
        "CREATE INDEX records_ns_closed ON records (namespace, valid_to)"
        " WHERE valid_to IS NOT NULL",
    ),
    ("ALTER TABLE namespace_versions ADD COLUMN touches INTEGER NOT NULL DEFAULT 0",),
)


def migrate(conn: sqlite3.Connection, now: float) -> list[int]:
    """Apply the missing migrations in the open transaction; return their numbers."""
    conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations"
        " (version INTEGER PRIMARY KEY, applied_at REAL NOT NULL)"
    )
    done = {int(row[0]) for row in conn.execute("SELECT version FROM schema_migrations")}
    if done and max(done) > len(MIGRATIONS):
        raise ConfigError(
            f"this SQLite file has schema version {max(done)}, newer than the "
            f"{len(MIGRATIONS)} this memstack knows; upgrade memstack."
        )
    applied = []
    for version, statements in enumerate(MIGRATIONS, start=1):
        if version in done:
            continue
        for statement in statements:
            conn.execute(statement)
        conn.execute("INSERT INTO schema_migrations VALUES (?, ?)", (version, now))
        applied.append(version)
    return applied
