"""PostgresRecordStore: PostgreSQL with pgvector and tsvector, for many servers and users.

psycopg 3 and psycopg_pool are imported here only, when a store is made; without them
the store raises ``ConfigError`` naming the extra to install.

- Thread-safe through a ``psycopg_pool.ConnectionPool``; each call is one transaction.
- Vectors: exact cosine with pgvector's ``<=>`` (score = 1 - distance), over the rows of
  one namespace and the query's dimension (see ``_postgres_schema`` for why no HNSW).
- Keywords: a generated ``tsvector`` (english), queried with the words of the user's
  text OR-ed together (``plainto_tsquery(w1) || plainto_tsquery(w2) ...``, so no input
  is tsquery syntax) and ranked by ``ts_rank_cd`` normalized by document length.
"""

from __future__ import annotations

import builtins
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import numpy.typing as npt

from memstack.clock import Clock, SystemClock
from memstack.errors import ConfigError, StoreUnavailable
from memstack.storage import _postgres_query as q
from memstack.storage import _validate as check
from memstack.storage._postgres_schema import LOCK_KEY, MIGRATIONS
from memstack.storage._text import query_words
from memstack.storage.types import Filter, Order, Record, ScoredRecord

if TYPE_CHECKING:
    import psycopg
    from psycopg_pool import ConnectionPool

__all__ = ["PostgresRecordStore"]

_INSTALL = 'PostgresRecordStore needs psycopg and psycopg_pool: pip install "memstack[postgres]"'


class PostgresRecordStore:
    """A ``RecordStore`` in PostgreSQL tables under ``schema`` (default ``memstack``).

    Pass a conninfo string or URL (the store then owns, opens on first use, and closes
    its pool), or an open ``psycopg_pool.ConnectionPool`` that the caller closes.
    """

    def __init__(
        self,
        conninfo_or_pool: str | ConnectionPool[Any],
        *,
        clock: Clock | None = None,
        schema: str = "memstack",
        min_size: int = 1,
        max_size: int = 8,
        timeout: float = 30.0,
    ) -> None:
        _import_psycopg()
        from psycopg_pool import ConnectionPool

        self._clock: Clock = clock if clock is not None else SystemClock()
        self._schema = q.quote_schema(schema)
        self._owns_pool = isinstance(conninfo_or_pool, str)
        if isinstance(conninfo_or_pool, str):
            self._pool: ConnectionPool[Any] = ConnectionPool(
                conninfo_or_pool,
                open=False,
                min_size=min_size,
                max_size=max_size,
                timeout=timeout,
                name=f"memstack-{schema}",
            )
        else:
            self._pool = conninfo_or_pool
        self._open_lock = threading.Lock()
        self._opened = not self._owns_pool
        self._closed = False

    @classmethod
    def from_url(
        cls, url: str, *, clock: Clock | None = None, schema: str = "memstack"
    ) -> PostgresRecordStore:
        """``postgresql://user:password@host:port/db?...``, a libpq URL."""
        return cls(url, clock=clock, schema=schema)

    def setup(self) -> None:
        import psycopg

        with self._connection() as conn:
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (LOCK_KEY,))
            conn.execute(f"CREATE SCHEMA IF NOT EXISTS {self._schema}")
            conn.execute(
                f"CREATE TABLE IF NOT EXISTS {self._schema}.schema_migrations"
                " (version integer PRIMARY KEY, applied_at double precision NOT NULL)"
            )
            rows = conn.execute(f"SELECT version FROM {self._schema}.schema_migrations").fetchall()
            done = {int(row[0]) for row in rows}
            if done and max(done) > len(MIGRATIONS):
                raise ConfigError(
                    f"schema {self._schema} has version {max(done)}, newer than the "
                    f"{len(MIGRATIONS)} this memstack knows; upgrade memstack."
                )
            for version, statements in enumerate(MIGRATIONS, start=1):
                if version in done:
                    continue
                for statement in statements:
                    try:
                        conn.execute(statement.format(schema=self._schema))
                    except (
                        psycopg.errors.InsufficientPrivilege,
                        psycopg.errors.UndefinedFile,
                    ) as e:
                        raise ConfigError(
                            f"migration {version} failed: {e}. pgvector must be installed on "
                            "the server and CREATE EXTENSION vector run by a superuser."
                        ) from e
                conn.execute(
                    f"INSERT INTO {self._schema}.schema_migrations VALUES (%s, %s)",
                    (version, self._clock.now()),
                )

    def close(self) -> None:
        with self._open_lock:
            self._closed = True
            if self._owns_pool:
                self._pool.close()

    def upsert(self, records: Sequence[Record]) -> None:
        batch = check.check_batch(records)
        if not batch.records:
            return
        rows = sorted(batch.records, key=lambda r: (r.namespace, r.id))  # one lock order
        with self._connection() as conn:
            for namespace in sorted(batch.dims):
                conn.execute(
                    "SELECT pg_advisory_xact_lock(hashtextextended(%s, %s))",
                    (f"{self._schema}.{namespace}", LOCK_KEY),
                )
            check.check_stored_dims(batch, lambda ns: self._stored_dim(conn, ns))
            with conn.cursor() as cursor:
                cursor.executemany(q.upsert_sql(self._schema), [q.record_params(r) for r in rows])

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
        sql = f"DELETE FROM {self._schema}.records WHERE namespace = %s AND id = ANY(%s::text[])"
        return self._rowcount(sql, (namespace, wanted))

    def delete_namespace(self, namespace: str) -> int:
        namespace = check.check_namespace(namespace)
        sql = f"DELETE FROM {self._schema}.records WHERE namespace = %s"
        return self._rowcount(sql, (namespace,))

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
        tail = f"ORDER BY {q.ORDER_BY[order]} LIMIT %s OFFSET %s"
        return self._select(namespace, wanted, tail, [limit, offset])

    def count(self, namespace: str, filter: Filter | None = None) -> int:
        namespace = check.check_namespace(namespace)
        wanted = check.check_filter(filter)
        clause, params = q.where(namespace, wanted, self._clock.now())
        with self._connection() as conn:
            row = conn.execute(
                f"SELECT count(*) FROM {self._schema}.records r WHERE {clause}", params
            ).fetchone()
        return 0 if row is None else int(row[0])

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
        clause, params = q.where(namespace, wanted, self._clock.now())
        sql = (
            f"SELECT {q.columns()}, 1 - (r.embedding <=> v.q) AS score"
            f" FROM {self._schema}.records r, (SELECT %s::vector AS q) v"
            f" WHERE {clause} AND r.dim = %s"
            ' ORDER BY r.embedding <=> v.q, r.id COLLATE "C" LIMIT %s'
        )
        with self._connection() as conn:
            stored = self._stored_dim(conn, namespace)
            if stored is None:
                return []
            check.check_query_dim(query, stored)
            rows = conn.execute(sql, [q.vector_text(query), *params, stored, k]).fetchall()
        return [
            ScoredRecord(record=q.record_from_row(row), score=min(1.0, max(-1.0, row[-1])))
            for row in rows
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
        tsquery, word_params = q.tsquery(words)
        clause, params = q.where(namespace, wanted, self._clock.now())
        sql = (
            f"SELECT {q.columns()}, ts_rank_cd(r.tsv, t.q, 1) AS score"
            f" FROM {self._schema}.records r, (SELECT {tsquery} AS q) t"
            f" WHERE numnode(t.q) > 0 AND r.tsv @@ t.q AND {clause}"
            ' ORDER BY score DESC, r.id COLLATE "C" LIMIT %s'
        )
        with self._connection() as conn:
            rows = conn.execute(sql, [*word_params, *params, k]).fetchall()
        return [ScoredRecord(record=q.record_from_row(row), score=float(row[-1])) for row in rows]

    def touch(self, namespace: str, ids: Sequence[str], at: float) -> None:
        namespace = check.check_namespace(namespace)
        wanted = check.check_ids(ids)
        at = check.check_time(at, "at")
        if wanted:
            self._rowcount(
                f"UPDATE {self._schema}.records SET last_accessed_at = %s"
                " WHERE namespace = %s AND id = ANY(%s::text[])",
                (at, namespace, wanted),
            )

    def namespaces(self, prefix: str = "") -> builtins.list[str]:
        prefix = check.check_text(prefix, "prefix")
        sql = (
            f'SELECT DISTINCT namespace COLLATE "C" AS ns FROM {self._schema}.records'
            " WHERE starts_with(namespace, %s) AND (expires_at IS NULL OR expires_at > %s)"
            " ORDER BY ns"
        )
        with self._connection() as conn:
            rows = conn.execute(sql, (prefix, self._clock.now())).fetchall()
        return [row[0] for row in rows]

    def prune_expired(self, now: float) -> int:
        now = check.check_time(now, "now")
        return self._rowcount(f"DELETE FROM {self._schema}.records WHERE expires_at <= %s", (now,))

    def _select(
        self, namespace: str, wanted: Filter, tail: str = "", tail_params: Sequence[Any] = ()
    ) -> builtins.list[Record]:
        clause, params = q.where(namespace, wanted, self._clock.now())
        sql = f"SELECT {q.columns()} FROM {self._schema}.records r WHERE {clause} {tail}"
        with self._connection() as conn:
            rows = conn.execute(sql, [*params, *tail_params]).fetchall()
        return [q.record_from_row(row) for row in rows]

    def _rowcount(self, sql: str, params: Sequence[Any]) -> int:
        with self._connection() as conn:
            return conn.execute(sql, params).rowcount

    def _stored_dim(self, conn: psycopg.Connection[Any], namespace: str) -> int | None:
        row = conn.execute(
            f"SELECT dim FROM {self._schema}.records"
            " WHERE namespace = %s AND dim IS NOT NULL LIMIT 1",
            (namespace,),
        ).fetchone()
        return None if row is None else int(row[0])

    @contextmanager
    def _connection(self) -> Iterator[psycopg.Connection[Any]]:
        """A pooled connection in a transaction: committed if the block succeeds."""
        import psycopg
        import psycopg_pool

        self._open()
        try:
            with self._pool.connection() as conn:
                yield conn
        except psycopg.errors.UndefinedTable as exc:
            raise ConfigError(
                f"the tables of schema {self._schema} are missing; call store.setup() first."
            ) from exc
        except (
            psycopg.OperationalError,
            psycopg.InterfaceError,
            psycopg_pool.PoolTimeout,
            psycopg_pool.PoolClosed,
        ) as exc:
            raise StoreUnavailable(f"PostgreSQL is unavailable: {exc}") from exc

    def _open(self) -> None:
        with self._open_lock:
            if self._closed:
                raise StoreUnavailable("this PostgresRecordStore is closed; open a new one.")
            if not self._opened:
                self._pool.open()
                self._opened = True


def _import_psycopg() -> None:
    try:
        import psycopg  # noqa: F401
        import psycopg_pool  # noqa: F401
    except ImportError as exc:
        raise ConfigError(_INSTALL) from exc
