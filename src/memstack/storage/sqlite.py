"""The SQLite backend: the default, one file, stdlib ``sqlite3``.

- One connection per store, guarded by a lock: calls from many threads take turns,
  and WAL mode with a busy timeout lets other processes read and write the same file.
- Writes run in ``BEGIN IMMEDIATE`` transactions, so a failed batch changes nothing;
  the file's write lock is held from the start, so a batch's expectations are checked
  against every write committed before it, by any process.
- Search indexes live in process, per namespace (``_sqlite_cache``): a float32 matrix
  for the exact vector scan and a ``KeywordIndex`` for BM25, loaded on first use and
  updated in place by this store's own writes; a search ranks keys first and fetches
  only the winners' rows.
"""

from __future__ import annotations

import builtins
import math
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from os import PathLike
from pathlib import Path
from typing import Any

from memstack.clock import Clock
from memstack.errors import ConfigError, StoreUnavailable, WriteConflict
from memstack.storage import _sqlite_query as q
from memstack.storage._keywords import KeywordIndex
from memstack.storage._sqlite_cache import (
    UNREAD,
    CacheDiff,
    NamespaceCache,
    data_version,
    namespace_counts,
)
from memstack.storage._sqlite_schema import migrate
from memstack.storage._vector_rows import Mask, VectorRows
from memstack.storage.backend import (
    DAY_S,
    Accept,
    Cap,
    Gathered,
    Matrix,
    NamespaceInfo,
    Page,
    Ranked,
    Stamp,
    WriteBatch,
    WriteResult,
    candidate_ids,
    check_claims,
    check_expected,
    check_same_records,
    expected_ids,
)
from memstack.storage.base import RecordStore
from memstack.storage.types import Filter, Record, Vector

__all__ = ["SQLiteBackend", "SQLiteRecordStore"]

_BUSY_TIMEOUT_S = 10.0


class SQLiteBackend:
    """A backend in one SQLite file (or ``":memory:"``); the file's folder is created
    when missing.

    The journal is WAL with ``synchronous=NORMAL``: a committed write survives a crash
    of the process, but the last commits may be lost if the machine loses power.
    ``durable=True`` sets ``synchronous=FULL``, which syncs the WAL on every commit, so
    they survive power loss too, at the cost of one fsync per write.

    ``cached_namespaces`` bounds the namespaces whose search indexes stay in process,
    ``cached_records`` the records read from them kept for the next read (see
    ``_sqlite_cache``).
    """

    def __init__(
        self,
        path: str | PathLike[str],
        *,
        cached_namespaces: int = 32,
        cached_records: int = 2_048,
        durable: bool = False,
    ) -> None:
        self.path = str(path)
        self._lock = threading.RLock()
        self._cache = NamespaceCache(cached_namespaces, cached_records)
        self._conn: sqlite3.Connection | None = _connect(self.path, durable=durable)

    @property
    def synchronous(self) -> str:
        """The connection's ``PRAGMA synchronous``: ``"NORMAL"`` or ``"FULL"``."""
        with self._lock:
            if self._conn is None:
                raise StoreUnavailable(f"the SQLite store {self.path!r} is closed.")
            level = self._conn.execute("PRAGMA synchronous").fetchone()[0]
        return {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}[int(level)]

    def setup(self, now: float) -> None:
        with self._write() as conn:
            migrate(conn, now)

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
            self._cache.clear()

    def ping(self) -> None:
        with self._read() as conn:
            conn.execute("SELECT 1")

    # -- writes ---------------------------------------------------------------------

    def write(self, batch: WriteBatch) -> WriteResult:
        with self._lock:
            try:
                with self._write() as conn:
                    result = self._apply(conn, batch)
            except WriteConflict:
                raise  # refused before anything changed: the caches hold
            except BaseException:
                self._cache.clear()  # what it applied in place was rolled back
                raise
        return result

    def _apply(self, conn: sqlite3.Connection, batch: WriteBatch) -> WriteResult:
        check_expected(batch.expect, _stamps(conn, batch))
        stored = {ns: _info(conn, ns) for ns in batch.claims}
        for namespace, info in check_claims(batch.claims, stored).items():
            conn.execute(
                "INSERT INTO namespace_info (namespace, dim, model_id) VALUES (?, ?, ?)"
                " ON CONFLICT (namespace) DO UPDATE SET dim = excluded.dim,"
                " model_id = excluded.model_id",
                (namespace, info.dim, info.model_id),
            )
        touched = {r.namespace for r in batch.upserts}
        touched |= {ns for ns, _ in batch.deletes}
        touched |= {ns for cap in batch.caps for ns in (cap.namespace, *cap.also_from)}
        diff = self._cache.begin(conn, touched)
        if batch.upserts:
            conn.executemany(q.UPSERT, [q.record_params(r) for r in batch.upserts])
            diff.upserted(batch.upserts)
        deleted = sum(_delete(conn, ns, ids, diff) for ns, ids in batch.deletes)
        evicted = {cap.namespace: _evict(conn, cap, batch.now, diff) for cap in batch.caps}
        _forget_empty(conn, {ns for ns, _ in batch.deletes} | set(evicted))
        _bump(conn, touched)
        self._cache.commit(diff)
        return WriteResult(deleted=deleted, evicted=evicted)

    def touch(self, namespace: str, ids: Sequence[str], at: float) -> None:
        with self._lock:
            with self._write() as conn:
                before = namespace_counts(conn, namespace)
                conn.execute(
                    "UPDATE records SET last_accessed_at = ?"
                    " WHERE namespace = ? AND id IN (SELECT value FROM json_each(?))",
                    (at, namespace, q.json_list(ids)),
                )
                conn.execute(
                    "INSERT INTO namespace_versions (namespace, version, touches)"
                    " VALUES (?, 0, 1) ON CONFLICT (namespace) DO UPDATE SET touches = touches + 1",
                    (namespace,),
                )
            self._cache.touched(namespace, ids, before)  # once committed

    def delete_namespace(self, namespace: str) -> int:
        with self._lock, self._write() as conn:
            cursor = conn.execute("DELETE FROM records WHERE namespace = ?", (namespace,))
            conn.execute("DELETE FROM namespace_info WHERE namespace = ?", (namespace,))
            _bump(conn, {namespace})
            self._cache.drop(namespace)
            return cursor.rowcount

    def rename_namespace(self, old: str, new: str) -> int:
        with self._lock, self._write() as conn:
            cursor = conn.execute(
                "UPDATE records SET namespace = ? WHERE namespace = ?", (new, old)
            )
            conn.execute("UPDATE namespace_info SET namespace = ? WHERE namespace = ?", (new, old))
            _bump(conn, {old, new})
            self._cache.drop(old)
            self._cache.drop(new)
            return cursor.rowcount

    def replace_namespace(self, copy: str, namespace: str) -> int:
        with self._lock, self._write() as conn:
            check_same_records(copy, namespace, _held(conn, copy), _held(conn, namespace))
            conn.execute("DELETE FROM records WHERE namespace = ?", (namespace,))
            conn.execute("DELETE FROM namespace_info WHERE namespace = ?", (namespace,))
            cursor = conn.execute(
                "UPDATE records SET namespace = ? WHERE namespace = ?", (namespace, copy)
            )
            conn.execute(
                "UPDATE namespace_info SET namespace = ? WHERE namespace = ?", (namespace, copy)
            )
            _bump(conn, {copy, namespace})
            self._cache.drop(copy)
            self._cache.drop(namespace)
            return cursor.rowcount

    def prune_expired(self, now: float) -> int:
        with self._lock, self._write() as conn:
            touched = {
                row[0]
                for row in conn.execute(
                    "SELECT DISTINCT namespace FROM records WHERE expires_at <= ?", (now,)
                )
            }
            cursor = conn.execute("DELETE FROM records WHERE expires_at <= ?", (now,))
            _forget_empty(conn, touched)
            _bump(conn, touched)
            for namespace in touched:
                self._cache.drop(namespace)
            return cursor.rowcount

    # -- reads ----------------------------------------------------------------------

    def get(
        self, namespace: str, ids: Sequence[str], now: float, *, expired: bool = False
    ) -> builtins.list[Record]:
        with self._read() as conn:
            held = self._cache.held(conn, namespace)
            return self._records(conn, namespace, ids, now, expired, held=held, shared=False)

    def list(self, namespace: str, wanted: Filter, page: Page, now: float) -> builtins.list[Record]:
        after, params = q.keyset(page.order, page.after)
        tail = f"{after} ORDER BY {q.ORDER_BY[page.order]} LIMIT ? OFFSET ?"
        with self._read() as conn:
            return _selected(conn, namespace, wanted, now, tail, [*params, page.limit, page.offset])

    def count(self, namespace: str, wanted: Filter, now: float) -> int:
        clause, params = q.where(namespace, wanted, now)
        with self._read() as conn:
            row = conn.execute(f"SELECT count(*) FROM records r WHERE {clause}", params).fetchone()
        return int(row[0])

    def vector_search(
        self, namespace: str, query: Vector, k: int, wanted: Filter, now: float
    ) -> builtins.list[Ranked]:
        with self._read() as conn:
            vectors = self._cache.rows(conn, namespace)
            if vectors is None:
                return []
            return _nearest(conn, vectors, namespace, query, k, wanted, now)[0]

    def nearest(self, namespace: str, queries: Matrix, now: float) -> builtins.list[Ranked | None]:
        with self._read() as conn:
            vectors = self._cache.rows(conn, namespace)
            if vectors is None:
                return [None] * queries.shape[0]
            return vectors.nearest(queries, vectors.live(now))

    def text_search(
        self, namespace: str, words: Sequence[str], k: int, wanted: Filter, now: float
    ) -> builtins.list[Ranked]:
        with self._read() as conn:
            index = self._cache.words(conn, namespace)
            return _matched(conn, index, namespace, words, k, wanted, now)

    def gather(
        self,
        namespace: str,
        words: Sequence[str],
        query: Vector | None,
        k: int,
        wanted: Filter,
        now: float,
        accept: Accept,
    ) -> Gathered:
        if not wanted.narrows:
            quick = self._gather_settled(namespace, words, query, k, wanted, now, accept)
            if quick is not None:
                return quick
        with self._read() as conn:
            checked = self._cache.held(conn, namespace)  # asked once for the whole read
            index = None
            if words:
                index = self._cache.words(conn, namespace, checked=checked)
                checked = True
            info = None if query is None else _info(conn, namespace)
            vectors = None
            if info is not None:
                accept(info)
                vectors = self._cache.rows(conn, namespace, checked=checked)
                checked = True
            matched, nearest, cosines = _hits(
                conn, namespace, words, index, query, vectors, k, wanted, now
            )
            ids = candidate_ids(matched, nearest)
            found = self._records(
                conn, namespace, ids, now, wanted.include_expired, held=checked, shared=True
            )
            if checked and not wanted.narrows:
                self._cache.settle(conn, namespace, UNREAD if query is None else info)
        records = {r.id: r for r in found}
        return Gathered(matched=matched, nearest=nearest, cosines=cosines, records=records)

    def _gather_settled(
        self,
        namespace: str,
        words: Sequence[str],
        query: Vector | None,
        k: int,
        wanted: Filter,
        now: float,
        accept: Accept,
    ) -> Gathered | None:
        """``gather`` from the cached indexes alone while no other connection has
        committed since the last one checked them (``NamespaceCache.settled``): one
        statement where a read takes four. None: do the read."""
        with self._lock, _translated(self.path):
            conn = self._open()
            settled = self._cache.settled(
                namespace, data_version(conn), words=bool(words), vectors=query is not None
            )
            if settled is None:
                return None
            if query is not None and settled.info is not None:
                accept(settled.info)
            matched, nearest, cosines = _hits(
                conn, namespace, words, settled.words, query, settled.rows, k, wanted, now
            )
            ids = [id for id, _ in matched]
            ids += [id for id, _ in nearest]
            # The indexes hid what expired by now, so every hit's record is visible.
            records = self._cache.records.shared(namespace, ids)
            if records is None:  # read them, in a read that finds the indexes still valid
                with self._read() as conn:
                    if not self._cache.held(conn, namespace):
                        return None
                    found = self._records(conn, namespace, ids, now, False, held=True, shared=True)
                records = {r.id: r for r in found}
        return Gathered(matched=matched, nearest=nearest, cosines=cosines, records=records)

    def _records(
        self,
        conn: sqlite3.Connection,
        namespace: str,
        ids: Sequence[str],
        now: float,
        expired: bool,
        *,
        held: bool,
        shared: bool,
    ) -> builtins.list[Record]:
        """``get`` inside a read; ``held``: the cache's entry for the namespace is valid in
        it (its records may come from the memo), ``shared``: as ``RecordMemo.take``."""
        if not ids:
            return []
        every = Filter(ids=tuple(ids), include_expired=True, include_superseded=True)
        if not held:
            return _selected(conn, namespace, replace(every, include_expired=expired), now)
        found, missing = self._cache.records.take(namespace, ids, shared=shared)
        if missing:
            read = _selected(conn, namespace, replace(every, ids=tuple(missing)), now)
            found += self._cache.records.keep(namespace, read, shared=shared)
        if expired:
            return found
        return [r for r in found if r.expires_at is None or r.expires_at > now]

    def namespaces(self, prefix: str, now: float) -> builtins.list[str]:
        # Both bounds, so the namespace index is read only over the prefix's range (setup
        # looks for legacy names on every open; with a lower bound alone that read every
        # namespace after "ltm_").
        above = _after_prefix(prefix)
        bound = "" if above is None else " AND namespace < ?"
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT DISTINCT namespace FROM records WHERE namespace >= ?{bound}"
                " AND substr(namespace, 1, ?) = ? AND (expires_at IS NULL OR expires_at > ?)"
                " ORDER BY namespace",
                [prefix, *([] if above is None else [above]), len(prefix), prefix, now],
            ).fetchall()
        return [row[0] for row in rows]

    def ready(self, namespace: str) -> bool:
        with self._read() as conn:
            vectors = self._cache.rows(conn, namespace)
            return vectors is None or vectors.ready()

    def namespace_info(self, namespace: str) -> NamespaceInfo | None:
        with self._read() as conn:
            return _info(conn, namespace)

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
            conn = self._open()
            conn.execute(begin)
            try:
                yield conn
                conn.commit()
            except BaseException:
                if conn.in_transaction:
                    conn.rollback()
                raise

    def _open(self) -> sqlite3.Connection:
        """The connection (hold the lock)."""
        if self._conn is None:
            raise StoreUnavailable(f"the SQLite store for {self.path!r} is closed; open a new one.")
        return self._conn


class SQLiteRecordStore(RecordStore):
    """A ``RecordStore`` on a ``SQLiteBackend``."""

    def __init__(
        self,
        path: str | PathLike[str],
        *,
        clock: Clock | None = None,
        cached_namespaces: int = 32,
        cached_records: int = 2_048,
        durable: bool = False,
    ) -> None:
        self.path = str(path)
        backend = SQLiteBackend(
            path,
            cached_namespaces=cached_namespaces,
            cached_records=cached_records,
            durable=durable,
        )
        super().__init__(backend, clock=clock)

    @classmethod
    def from_url(cls, url: str, *, clock: Clock | None = None) -> SQLiteRecordStore:
        """``sqlite:///relative.db``, ``sqlite:////absolute.db`` or ``sqlite://:memory:``;
        ``?synchronous=full`` opens it durable (see ``SQLiteBackend``)."""
        if not url.startswith("sqlite://"):
            raise ConfigError(f"not a sqlite:// URL: {url!r}; use sqlite:///path/to/file.db.")
        path, _, query = url.removeprefix("sqlite://").partition("?")
        path = path.removeprefix("/") if path != "/:memory:" else ":memory:"
        if not path:
            raise ConfigError(f"{url!r} names no file; use sqlite:///path/to/file.db.")
        return cls(path, clock=clock, durable=_durable(url, query))


def _durable(url: str, query: str) -> bool:
    if query.lower() in ("", "synchronous=normal"):
        return False
    if query.lower() == "synchronous=full":
        return True
    raise ConfigError(
        f"{url!r}: the only option of a sqlite:// URL is ?synchronous=full (or normal)."
    )


def _connect(path: str, *, durable: bool = False) -> sqlite3.Connection:
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
            conn.execute(f"PRAGMA synchronous = {'FULL' if durable else 'NORMAL'}")
            _ensure_pow(conn)
        except BaseException:
            conn.close()
            raise
    return conn


def _ensure_pow(conn: sqlite3.Connection) -> None:
    """Eviction's retention score needs ``pow``; SQLite builds without the math
    functions get Python's."""
    try:
        conn.execute("SELECT pow(0.5, 1.0)")
    except sqlite3.OperationalError:
        conn.create_function("pow", 2, math.pow, deterministic=True)


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


def _after_prefix(prefix: str) -> str | None:
    """The least string above every string that starts with ``prefix`` (in code point
    order, SQLite's BINARY order of UTF-8 text); None when there is none."""
    for i in range(len(prefix) - 1, -1, -1):
        if ord(prefix[i]) < 0x10FFFF:
            return prefix[:i] + chr(ord(prefix[i]) + 1)
    return None


def _hits(
    conn: sqlite3.Connection,
    namespace: str,
    words: Sequence[str],
    index: KeywordIndex[str] | None,
    query: Vector | None,
    vectors: VectorRows[str] | None,
    k: int,
    wanted: Filter,
    now: float,
) -> tuple[builtins.list[Ranked], builtins.list[Ranked], dict[str, float]]:
    """A gather's searches over the namespace's indexes (None: that half is skipped): the
    keyword matches, the nearest records, and the matches' cosines."""
    matched = (
        []
        if index is None or not words
        else _matched(conn, index, namespace, words, k, wanted, now)
    )
    if query is None or vectors is None:
        return matched, [], {}
    nearest, cosines = _nearest(conn, vectors, namespace, query, k, wanted, now, matched)
    return matched, nearest, cosines


def _matched(
    conn: sqlite3.Connection,
    index: KeywordIndex[str],
    namespace: str,
    words: Sequence[str],
    k: int,
    wanted: Filter,
    now: float,
) -> builtins.list[Ranked]:
    if wanted.narrows:
        allowed = _filtered_ids(conn, namespace, wanted, now, embedded=False)
        return index.search(words, k, None, allowed)
    return index.search(words, k, now, None)


def _nearest(
    conn: sqlite3.Connection,
    vectors: VectorRows[str],
    namespace: str,
    query: Vector,
    k: int,
    wanted: Filter,
    now: float,
    matched: Sequence[Ranked] = (),
) -> tuple[builtins.list[Ranked], dict[str, float]]:
    """The ``k`` nearest, and the cosines of the ``matched`` ids."""
    allowed: Mask | None
    if wanted.narrows:  # the rows the database selects, hidden or not
        allowed = vectors.where_keys(_filtered_ids(conn, namespace, wanted, now))
    else:
        allowed = vectors.live(now)
    keys = [id for id, _ in matched]
    return vectors.search_scoring(query, k, allowed, exact=wanted.narrows, keys=keys)


def _info(conn: sqlite3.Connection, namespace: str) -> NamespaceInfo | None:
    row = conn.execute(
        "SELECT dim, model_id FROM namespace_info WHERE namespace = ?", (namespace,)
    ).fetchone()
    return None if row is None else NamespaceInfo(dim=int(row[0]), model_id=row[1])


def _held(conn: sqlite3.Connection, namespace: str) -> dict[str, Stamp]:
    """The stamp of every record of ``namespace`` (expired and closed ones too)."""
    rows = conn.execute(
        "SELECT id, updated_at, valid_to, text FROM records WHERE namespace = ?", (namespace,)
    )
    return {id: (updated_at, valid_to, text) for id, updated_at, valid_to, text in rows}


def _stamps(conn: sqlite3.Connection, batch: WriteBatch) -> dict[tuple[str, str], Stamp]:
    """The stamps of the records ``batch`` expects that exist (expired ones too)."""
    out: dict[tuple[str, str], Stamp] = {}
    for namespace, ids in expected_ids(batch.expect).items():
        rows = conn.execute(
            "SELECT id, updated_at, valid_to, text FROM records"
            " WHERE namespace = ? AND id IN (SELECT value FROM json_each(?))",
            (namespace, q.json_list(ids)),
        )
        out.update({(namespace, str(r[0])): (r[1], r[2], r[3]) for r in rows})
    return out


def _delete(conn: sqlite3.Connection, namespace: str, ids: Sequence[str], diff: CacheDiff) -> int:
    rows = conn.execute(
        "DELETE FROM records WHERE namespace = ? AND id IN (SELECT value FROM json_each(?))"
        " RETURNING id",
        (namespace, q.json_list(ids)),
    ).fetchall()
    diff.removed(namespace, [str(row[0]) for row in rows])
    return len(rows)


def _evict(conn: sqlite3.Connection, cap: Cap, now: float, diff: CacheDiff) -> list[str]:
    """Evict the lowest-retention current records beyond ``cap.keep``, chosen in SQL with
    a LIMIT: deleted, or closed as history (``cap.close``); then bound that history."""
    live = f"namespace = ? AND (expires_at IS NULL OR expires_at > ?) AND {_CURRENT}"
    row = conn.execute(f"SELECT count(*) FROM records WHERE {live}", (cap.namespace, now, now))
    excess = int(row.fetchone()[0]) - cap.keep
    doomed: list[str] = []
    if excess > 0:
        doomed = [
            row[0]
            for row in conn.execute(
                f"SELECT id FROM records WHERE {live} ORDER BY ? * pow(0.5, max(0.0, ? -"
                " max(created_at, coalesce(last_accessed_at, created_at))) / ? / ?)"
                " + ? * importance, created_at, id LIMIT ?",
                (
                    cap.namespace,
                    now,
                    now,
                    cap.recency_weight,
                    now,
                    DAY_S,
                    cap.half_life_days,
                    cap.importance_weight,
                    excess,
                ),
            )
        ]
    if doomed and cap.close:
        conn.execute(
            "UPDATE records SET valid_to = ?, closed_reason = 'evicted'"
            " WHERE namespace = ? AND id IN (SELECT value FROM json_each(?))",
            (now, cap.namespace, q.json_list(doomed)),
        )
        rows = conn.execute(
            f"SELECT {q.COLUMNS} FROM records r WHERE r.namespace = ?"
            " AND r.id IN (SELECT value FROM json_each(?))",
            (cap.namespace, q.json_list(doomed)),
        )
        diff.upserted([q.record_from_row(row) for row in rows])
    for namespace in cap.also_from if cap.close else (cap.namespace, *cap.also_from):
        _delete(conn, namespace, doomed, diff)
    if cap.keep_closed is not None:
        _bound_history(conn, cap.namespace, cap.keep_closed, diff)
    return doomed


_CURRENT = q.CURRENT.replace("r.", "")


def _bound_history(conn: sqlite3.Connection, namespace: str, keep: int, diff: CacheDiff) -> None:
    """Delete the closed records of ``namespace`` beyond ``keep``, earliest closed first."""
    closed = "namespace = ? AND valid_to IS NOT NULL"
    row = conn.execute(f"SELECT count(*) FROM records WHERE {closed}", (namespace,))
    excess = int(row.fetchone()[0]) - keep
    if excess > 0:
        oldest = conn.execute(
            f"SELECT id FROM records WHERE {closed} ORDER BY valid_to, id LIMIT ?",
            (namespace, excess),
        )
        _delete(conn, namespace, [str(r[0]) for r in oldest], diff)


def _forget_empty(conn: sqlite3.Connection, namespaces: set[str]) -> None:
    """A namespace left without records forgets its embedding dimension and model."""
    conn.executemany(
        "DELETE FROM namespace_info WHERE namespace = ?"
        " AND NOT EXISTS (SELECT 1 FROM records WHERE namespace = ?)",
        [(ns, ns) for ns in namespaces],
    )


def _bump(conn: sqlite3.Connection, namespaces: set[str]) -> None:
    """Record a write to each namespace, so other processes' vector caches reload it."""
    conn.executemany(
        "INSERT INTO namespace_versions (namespace, version) VALUES (?, 1)"
        " ON CONFLICT (namespace) DO UPDATE SET version = version + 1",
        [(ns,) for ns in namespaces],
    )


def _selected(
    conn: sqlite3.Connection,
    namespace: str,
    wanted: Filter,
    now: float,
    tail: str = "",
    tail_params: Sequence[Any] = (),
) -> builtins.list[Record]:
    clause, params = q.where(namespace, wanted, now)
    sql = f"SELECT {q.COLUMNS} FROM records r WHERE {clause} {tail}"
    rows = conn.execute(sql, [*params, *tail_params]).fetchall()
    return [q.record_from_row(row) for row in rows]


def _filtered_ids(
    conn: sqlite3.Connection, namespace: str, wanted: Filter, now: float, *, embedded: bool = True
) -> builtins.list[str]:
    clause, params = q.where(namespace, wanted, now)
    if embedded:
        clause += " AND r.embedding IS NOT NULL"
    rows = conn.execute(f"SELECT r.id FROM records r WHERE {clause}", params).fetchall()
    return [str(row[0]) for row in rows]
