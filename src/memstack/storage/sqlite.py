"""SQLiteRecordStore: the default backend, one file, stdlib ``sqlite3``.

- One connection per store, guarded by a lock: calls from many threads take turns,
  and WAL mode with a busy timeout lets other processes read and write the same file.
- Writes run in ``BEGIN IMMEDIATE`` transactions, so a failed batch changes nothing.
- Keywords: an external-content FTS5 table kept in step by triggers, ranked by ``bm25()``
  (document frequencies are taken over the whole file, not one namespace).
- Vectors: float32 BLOBs, searched by an exact numpy scan (see ``_sqlite_vectors``).
"""

from __future__ import annotations

import builtins
import json
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from os import PathLike
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from memstack.clock import Clock, SystemClock
from memstack.errors import ConfigError, StoreUnavailable
from memstack.storage import _sqlite_query as q
from memstack.storage import _validate as check
from memstack.storage._sqlite_schema import migrate
from memstack.storage._sqlite_vectors import VectorCache
from memstack.storage._text import query_words
from memstack.storage._vectors import cosine_scores, top_k
from memstack.storage.types import Filter, Order, Record, ScoredRecord

__all__ = ["SQLiteRecordStore"]

_BUSY_TIMEOUT_S = 10.0


class SQLiteRecordStore:
    """A ``RecordStore`` in one SQLite file (or ``":memory:"``); the file's folder is
    created when missing."""

    def __init__(
        self,
        path: str | PathLike[str],
        *,
        clock: Clock | None = None,
        cached_namespaces: int = 32,
    ) -> None:
        self.path = str(path)
        self._clock: Clock = clock if clock is not None else SystemClock()
        self._lock = threading.Lock()
        self._cache = VectorCache(cached_namespaces)
        self._conn: sqlite3.Connection | None = _connect(self.path)

    @classmethod
    def from_url(cls, url: str, *, clock: Clock | None = None) -> SQLiteRecordStore:
        """``sqlite:///relative.db``, ``sqlite:////absolute.db`` or ``sqlite://:memory:``."""
        if not url.startswith("sqlite://"):
            raise ConfigError(f"not a sqlite:// URL: {url!r}; use sqlite:///path/to/file.db.")
        path = url.removeprefix("sqlite://")
        path = path.removeprefix("/") if path != "/:memory:" else ":memory:"
        if not path:
            raise ConfigError(f"{url!r} names no file; use sqlite:///path/to/file.db.")
        return cls(path, clock=clock)

    def setup(self) -> None:
        with self._write() as conn:
            migrate(conn, self._clock.now())

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
            self._cache.clear()

    def upsert(self, records: Sequence[Record]) -> None:
        batch = check.check_batch(records)
        if not batch.records:
            return
        with self._write() as conn:
            check.check_stored_dims(batch, lambda ns: _stored_dim(conn, ns))
            conn.executemany(q.UPSERT, [q.record_params(r) for r in batch.records])
            _bump(conn, {r.namespace for r in batch.records})

    def get(self, namespace: str, ids: Sequence[str]) -> builtins.list[Record]:
        namespace = check.check_namespace(namespace)
        wanted = check.check_ids(ids)
        if not wanted:
            return []
        found = {r.id: r for r in self._select(namespace, Filter(ids=tuple(wanted)))}
        return [found[i] for i in wanted if i in found]

    def delete(self, namespace: str, ids: Sequence[str]) -> int:
        namespace = check.check_namespace(namespace)
        wanted = check.check_ids(ids)
        if not wanted:
            return 0
        with self._write() as conn:
            cursor = conn.execute(
                "DELETE FROM records"
                " WHERE namespace = ? AND id IN (SELECT value FROM json_each(?))",
                (namespace, q.json_list(wanted)),
            )
            _bump(conn, {namespace})
            return cursor.rowcount

    def delete_namespace(self, namespace: str) -> int:
        namespace = check.check_namespace(namespace)
        with self._write() as conn:
            cursor = conn.execute("DELETE FROM records WHERE namespace = ?", (namespace,))
            _bump(conn, {namespace})
            return cursor.rowcount

    def list(
        self,
        namespace: str,
        *,
        filter: Filter | None = None,
        limit: int = 100,
        offset: int = 0,
        order: Order = "created_desc",
    ) -> builtins.list[Record]:
        namespace = check.check_namespace(namespace)
        wanted = check.check_filter(filter)
        limit = check.check_positive(limit, "limit")
        offset = check.check_offset(offset)
        order = check.check_order(order)
        return self._select(
            namespace, wanted, f"ORDER BY {q.ORDER_BY[order]} LIMIT ? OFFSET ?", [limit, offset]
        )

    def count(self, namespace: str, filter: Filter | None = None) -> int:
        namespace = check.check_namespace(namespace)
        wanted = check.check_filter(filter)
        clause, params = q.where(namespace, wanted, self._clock.now())
        with self._read() as conn:
            row = conn.execute(f"SELECT count(*) FROM records r WHERE {clause}", params).fetchone()
        return int(row[0])

    def vector_search(
        self,
        namespace: str,
        vector: npt.ArrayLike,
        *,
        k: int,
        filter: Filter | None = None,
    ) -> builtins.list[ScoredRecord]:
        namespace = check.check_namespace(namespace)
        k = check.check_positive(k, "k")
        wanted = check.check_filter(filter)
        query = check.check_vector(vector, "vector")
        now = self._clock.now()
        with self._read() as conn:
            entry = self._cache.matrix(conn, namespace)
            if entry.dim is None:
                return []
            check.check_query_dim(query, entry.dim)
            scores = cosine_scores(entry.unit_rows, query)  # one pass, no copy of the matrix
            rows = _candidates(entry.pks, entry.expires_at, conn, namespace, wanted, now)
            best = top_k(scores[rows], k) if rows is not None else top_k(scores, k)
            if rows is not None:
                best = rows[best]
            pks = [int(p) for p in entry.pks[best]]
            found = _records_by_pk(conn, pks)
        return [
            ScoredRecord(record=found[pk], score=float(score))
            for pk, score in zip(pks, scores[best], strict=True)
            if pk in found
        ]

    def text_search(
        self,
        namespace: str,
        query: str,
        *,
        k: int,
        filter: Filter | None = None,
    ) -> builtins.list[ScoredRecord]:
        namespace = check.check_namespace(namespace)
        words = query_words(check.check_query(query))
        k = check.check_positive(k, "k")
        wanted = check.check_filter(filter)
        if not words:
            return []
        clause, params = q.where(namespace, wanted, self._clock.now())
        sql = (
            f"SELECT {q.COLUMNS}, bm25(records_fts) AS rank FROM records_fts"
            " JOIN records r ON r.pk = records_fts.rowid"
            f" WHERE records_fts MATCH ? AND {clause} ORDER BY rank, r.id LIMIT ?"
        )
        with self._read() as conn:
            rows = conn.execute(sql, [q.fts_query(words), *params, k]).fetchall()
        return [ScoredRecord(record=q.record_from_row(row), score=-float(row[-1])) for row in rows]

    def touch(self, namespace: str, ids: Sequence[str], at: float) -> None:
        namespace = check.check_namespace(namespace)
        wanted = check.check_ids(ids)
        at = check.check_time(at, "at")
        if not wanted:
            return
        with self._write() as conn:
            conn.execute(
                "UPDATE records SET last_accessed_at = ?"
                " WHERE namespace = ? AND id IN (SELECT value FROM json_each(?))",
                (at, namespace, q.json_list(wanted)),
            )

    def namespaces(self, prefix: str = "") -> builtins.list[str]:
        prefix = check.check_text(prefix, "prefix")
        with self._read() as conn:
            rows = conn.execute(
                "SELECT DISTINCT namespace FROM records"
                " WHERE namespace >= ? AND substr(namespace, 1, ?) = ?"
                " AND (expires_at IS NULL OR expires_at > ?) ORDER BY namespace",
                (prefix, len(prefix), prefix, self._clock.now()),
            ).fetchall()
        return [row[0] for row in rows]

    def prune_expired(self, now: float) -> int:
        now = check.check_time(now, "now")
        with self._write() as conn:
            touched = conn.execute(
                "SELECT DISTINCT namespace FROM records WHERE expires_at <= ?", (now,)
            ).fetchall()
            cursor = conn.execute("DELETE FROM records WHERE expires_at <= ?", (now,))
            _bump(conn, {row[0] for row in touched})
            return cursor.rowcount

    def _select(
        self, namespace: str, wanted: Filter, tail: str = "", tail_params: Sequence[Any] = ()
    ) -> builtins.list[Record]:
        clause, params = q.where(namespace, wanted, self._clock.now())
        sql = f"SELECT {q.COLUMNS} FROM records r WHERE {clause} {tail}"
        with self._read() as conn:
            rows = conn.execute(sql, [*params, *tail_params]).fetchall()
        return [q.record_from_row(row) for row in rows]

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        """The connection inside one read transaction: a consistent snapshot."""
        with self._transaction("BEGIN") as conn:
            yield conn

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """The connection inside a write transaction, rolled back if anything fails."""
        with self._transaction("BEGIN IMMEDIATE") as conn:
            yield conn

    @contextmanager
    def _transaction(self, begin: str) -> Iterator[sqlite3.Connection]:
        with self._lock, _translated(self.path):
            if self._conn is None:
                raise StoreUnavailable(
                    f"the SQLite store for {self.path!r} is closed; open a new one."
                )
            conn = self._conn
            conn.execute(begin)
            try:
                yield conn
                conn.commit()
            except BaseException:
                if conn.in_transaction:
                    conn.rollback()
                raise


def _connect(path: str) -> sqlite3.Connection:
    with _translated(path):
        try:
            if path != ":memory:":
                Path(path).parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(
                path, timeout=_BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
            )
        except (sqlite3.OperationalError, OSError) as exc:
            raise ConfigError(
                f"cannot open the SQLite file {path!r} ({exc}); check that its folder "
                "exists and is writable."
            ) from exc
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
        except BaseException:
            conn.close()
            raise
    return conn


@contextmanager
def _translated(path: str) -> Iterator[None]:
    """SQLite's operational errors as memstack errors; everything else passes through."""
    try:
        yield
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):
            raise ConfigError(
                f"the SQLite file {path!r} has no memstack schema; call store.setup() first."
            ) from exc
        raise StoreUnavailable(f"SQLite file {path!r} failed: {exc}") from exc


def _stored_dim(conn: sqlite3.Connection, namespace: str) -> int | None:
    row = conn.execute(
        "SELECT dim FROM records WHERE namespace = ? AND dim IS NOT NULL LIMIT 1", (namespace,)
    ).fetchone()
    return None if row is None else int(row[0])


def _bump(conn: sqlite3.Connection, namespaces: set[str]) -> None:
    """Record a write to each namespace, so every vector cache reloads it."""
    conn.executemany(
        "INSERT INTO namespace_versions (namespace, version) VALUES (?, 1)"
        " ON CONFLICT (namespace) DO UPDATE SET version = version + 1",
        [(ns,) for ns in namespaces],
    )


def _candidates(
    pks: npt.NDArray[np.int64],
    expires_at: npt.NDArray[np.float64],
    conn: sqlite3.Connection,
    namespace: str,
    wanted: Filter,
    now: float,
) -> npt.NDArray[np.intp] | None:
    """Matrix rows that pass ``wanted`` at ``now``; ``None`` when every row does."""
    mask = None if wanted.include_expired else expires_at > now
    if q.has_conditions(wanted):
        allowed = np.isin(pks, _filtered_pks(conn, namespace, wanted))
        mask = allowed if mask is None else mask & allowed
    if mask is None or mask.all():
        return None
    return np.flatnonzero(mask)


def _filtered_pks(conn: sqlite3.Connection, namespace: str, wanted: Filter) -> builtins.list[int]:
    clause, params = q.where(namespace, wanted, None)
    rows = conn.execute(
        f"SELECT r.pk FROM records r WHERE {clause} AND r.embedding IS NOT NULL", params
    ).fetchall()
    return [int(row[0]) for row in rows]


def _records_by_pk(conn: sqlite3.Connection, pks: Sequence[int]) -> dict[int, Record]:
    rows = conn.execute(
        f"SELECT {q.COLUMNS} FROM records r WHERE r.pk IN (SELECT value FROM json_each(?))",
        (json.dumps(pks),),
    ).fetchall()
    return {int(row[0]): q.record_from_row(row) for row in rows}
