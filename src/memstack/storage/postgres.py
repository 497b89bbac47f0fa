"""The PostgreSQL backend: pgvector and tsvector, for many servers and users.

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

from memstack.clock import Clock
from memstack.errors import ConfigError, StoreUnavailable
from memstack.storage import _postgres_query as q
from memstack.storage._postgres_schema import LOCK_KEY, MIGRATIONS
from memstack.storage.backend import (
    DAY_S,
    Cap,
    Matrix,
    NamespaceInfo,
    Page,
    Ranked,
    WriteBatch,
    WriteResult,
    check_claims,
)
from memstack.storage.base import RecordStore
from memstack.storage.types import Filter, Record, Vector

if TYPE_CHECKING:
    import psycopg
    from psycopg_pool import ConnectionPool

__all__ = ["PostgresBackend", "PostgresRecordStore"]

_INSTALL = 'PostgresRecordStore needs psycopg and psycopg_pool: pip install "memstack[postgres]"'


class PostgresBackend:
    """A backend in PostgreSQL tables under ``schema`` (default ``memstack``).

    Pass a conninfo string or URL (the store then owns, opens on first use, and closes
    its pool), or an open ``psycopg_pool.ConnectionPool`` that the caller closes.
    """

    def __init__(
        self,
        conninfo_or_pool: str | ConnectionPool[Any],
        *,
        schema: str = "memstack",
        min_size: int = 1,
        max_size: int = 8,
        timeout: float = 30.0,
    ) -> None:
        _import_psycopg()
        from psycopg_pool import ConnectionPool

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

    def setup(self, now: float) -> None:
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
                    (version, now),
                )

    def close(self) -> None:
        with self._open_lock:
            self._closed = True
            if self._owns_pool:
                self._pool.close()

    # -- writes ---------------------------------------------------------------------

    def write(self, batch: WriteBatch) -> WriteResult:
        rows = sorted(batch.upserts, key=lambda r: (r.namespace, r.id))  # one lock order
        with self._connection() as conn:
            for namespace in sorted(batch.claims):
                conn.execute(
                    "SELECT pg_advisory_xact_lock(hashtextextended(%s, %s))",
                    (f"{self._schema}.{namespace}", LOCK_KEY),
                )
            stored = {ns: self._info(conn, ns) for ns in batch.claims}
            for namespace, info in check_claims(batch.claims, stored).items():
                conn.execute(
                    f"INSERT INTO {self._schema}.namespace_info (namespace, dim, model_id)"
                    " VALUES (%s, %s, %s) ON CONFLICT (namespace) DO UPDATE"
                    " SET dim = EXCLUDED.dim, model_id = EXCLUDED.model_id",
                    (namespace, info.dim, info.model_id),
                )
            if rows:
                with conn.cursor() as cursor:
                    cursor.executemany(
                        q.upsert_sql(self._schema), [q.record_params(r) for r in rows]
                    )
            deleted = sum(self._delete(conn, ns, ids) for ns, ids in batch.deletes)
            evicted = {cap.namespace: self._evict(conn, cap, batch.now) for cap in batch.caps}
            self._forget_empty(conn, {ns for ns, _ in batch.deletes} | set(evicted))
        return WriteResult(deleted=deleted, evicted=evicted)

    def _delete(self, conn: psycopg.Connection[Any], namespace: str, ids: Sequence[str]) -> int:
        return conn.execute(
            f"DELETE FROM {self._schema}.records WHERE namespace = %s AND id = ANY(%s::text[])",
            (namespace, list(ids)),
        ).rowcount

    def _evict(self, conn: psycopg.Connection[Any], cap: Cap, now: float) -> builtins.list[str]:
        """Delete the lowest-retention records beyond ``cap.keep``, chosen with a LIMIT."""
        live = "namespace = %s AND (expires_at IS NULL OR expires_at > %s)"
        row = conn.execute(
            f"SELECT count(*) FROM {self._schema}.records WHERE {live}", (cap.namespace, now)
        ).fetchone()
        excess = (0 if row is None else int(row[0])) - cap.keep
        if excess <= 0:
            return []
        doomed = [
            str(r[0])
            for r in conn.execute(
                f"SELECT id FROM {self._schema}.records WHERE {live} ORDER BY"
                " %s * power(0.5, greatest(0.0, %s - greatest(created_at,"
                " coalesce(last_accessed_at, created_at))) / %s / %s) + %s * importance,"
                ' created_at, id COLLATE "C" LIMIT %s',
                (
                    cap.namespace,
                    now,
                    cap.recency_weight,
                    now,
                    DAY_S,
                    cap.half_life_days,
                    cap.importance_weight,
                    excess,
                ),
            ).fetchall()
        ]
        for namespace in (cap.namespace, *cap.also_from):
            self._delete(conn, namespace, doomed)
        return doomed

    def _forget_empty(self, conn: psycopg.Connection[Any], namespaces: set[str]) -> None:
        for namespace in sorted(namespaces):
            conn.execute(
                f"DELETE FROM {self._schema}.namespace_info i WHERE i.namespace = %s"
                f" AND NOT EXISTS (SELECT 1 FROM {self._schema}.records r"
                " WHERE r.namespace = %s)",
                (namespace, namespace),
            )

    def delete_namespace(self, namespace: str) -> int:
        with self._connection() as conn:
            removed = conn.execute(
                f"DELETE FROM {self._schema}.records WHERE namespace = %s", (namespace,)
            ).rowcount
            conn.execute(
                f"DELETE FROM {self._schema}.namespace_info WHERE namespace = %s", (namespace,)
            )
        return removed

    def rename_namespace(self, old: str, new: str) -> int:
        with self._connection() as conn:
            moved = conn.execute(
                f"UPDATE {self._schema}.records SET namespace = %s WHERE namespace = %s",
                (new, old),
            ).rowcount
            conn.execute(
                f"UPDATE {self._schema}.namespace_info SET namespace = %s WHERE namespace = %s",
                (new, old),
            )
        return moved

    def touch(self, namespace: str, ids: Sequence[str], at: float) -> None:
        self._rowcount(
            f"UPDATE {self._schema}.records SET last_accessed_at = %s"
            " WHERE namespace = %s AND id = ANY(%s::text[])",
            (at, namespace, list(ids)),
        )

    def prune_expired(self, now: float) -> int:
        with self._connection() as conn:
            gone = conn.execute(
                f"DELETE FROM {self._schema}.records WHERE expires_at <= %s RETURNING namespace",
                (now,),
            ).fetchall()
            self._forget_empty(conn, {str(row[0]) for row in gone})
        return len(gone)

    # -- reads ----------------------------------------------------------------------

    def get(
        self, namespace: str, ids: Sequence[str], now: float, *, expired: bool = False
    ) -> builtins.list[Record]:
        return self._select(namespace, Filter(ids=tuple(ids), include_expired=expired), now)

    def list(self, namespace: str, wanted: Filter, page: Page, now: float) -> builtins.list[Record]:
        tail = f"ORDER BY {q.ORDER_BY[page.order]} LIMIT %s OFFSET %s"
        return self._select(namespace, wanted, now, tail, [page.limit, page.offset])

    def count(self, namespace: str, wanted: Filter, now: float) -> int:
        clause, params = q.where(namespace, wanted, now)
        with self._connection() as conn:
            row = conn.execute(
                f"SELECT count(*) FROM {self._schema}.records r WHERE {clause}", params
            ).fetchone()
        return 0 if row is None else int(row[0])

    def vector_search(
        self, namespace: str, query: Vector, k: int, wanted: Filter, now: float
    ) -> builtins.list[Ranked]:
        clause, params = q.where(namespace, wanted, now)
        sql = (
            "SELECT r.id, 1 - (r.embedding <=> v.q) AS score"
            f" FROM {self._schema}.records r, (SELECT %s::vector AS q) v"
            f" WHERE {clause} AND r.dim = %s"
            ' ORDER BY r.embedding <=> v.q, r.id COLLATE "C" LIMIT %s'
        )
        with self._connection() as conn:
            rows = conn.execute(
                sql, [q.vector_text(query), *params, int(query.shape[0]), k]
            ).fetchall()
        return [(str(row[0]), min(1.0, max(-1.0, float(row[1])))) for row in rows]

    def nearest(
        self, namespace: str, queries: Matrix, now: float
    ) -> builtins.list[tuple[str, float] | None]:
        out: builtins.list[Ranked | None] = []
        for query in queries:
            hits = self.vector_search(namespace, query, 1, Filter(), now)
            out.append(hits[0] if hits else None)
        return out

    def text_search(
        self, namespace: str, words: Sequence[str], k: int, wanted: Filter, now: float
    ) -> builtins.list[Ranked]:
        tsquery, word_params = q.tsquery(words)
        clause, params = q.where(namespace, wanted, now)
        sql = (
            "SELECT r.id, ts_rank_cd(r.tsv, t.q, 1) AS score"
            f" FROM {self._schema}.records r, (SELECT {tsquery} AS q) t"
            f" WHERE numnode(t.q) > 0 AND r.tsv @@ t.q AND {clause}"
            ' ORDER BY score DESC, r.id COLLATE "C" LIMIT %s'
        )
        with self._connection() as conn:
            rows = conn.execute(sql, [*word_params, *params, k]).fetchall()
        return [(str(row[0]), float(row[1])) for row in rows]

    def namespaces(self, prefix: str, now: float) -> builtins.list[str]:
        sql = (
            f'SELECT DISTINCT namespace COLLATE "C" AS ns FROM {self._schema}.records'
            " WHERE starts_with(namespace, %s) AND (expires_at IS NULL OR expires_at > %s)"
            " ORDER BY ns"
        )
        with self._connection() as conn:
            rows = conn.execute(sql, (prefix, now)).fetchall()
        return [row[0] for row in rows]

    def namespace_info(self, namespace: str) -> NamespaceInfo | None:
        with self._connection() as conn:
            return self._info(conn, namespace)

    def _info(self, conn: psycopg.Connection[Any], namespace: str) -> NamespaceInfo | None:
        row = conn.execute(
            f"SELECT dim, model_id FROM {self._schema}.namespace_info WHERE namespace = %s",
            (namespace,),
        ).fetchone()
        return None if row is None else NamespaceInfo(dim=int(row[0]), model_id=row[1])

    def _select(
        self,
        namespace: str,
        wanted: Filter,
        now: float,
        tail: str = "",
        tail_params: Sequence[Any] = (),
    ) -> builtins.list[Record]:
        clause, params = q.where(namespace, wanted, now)
        sql = f"SELECT {q.columns()} FROM {self._schema}.records r WHERE {clause} {tail}"
        with self._connection() as conn:
            rows = conn.execute(sql, [*params, *tail_params]).fetchall()
        return [q.record_from_row(row) for row in rows]

    def _rowcount(self, sql: str, params: Sequence[Any]) -> int:
        with self._connection() as conn:
            return conn.execute(sql, params).rowcount

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


class PostgresRecordStore(RecordStore):
    """A ``RecordStore`` on a ``PostgresBackend``: a conninfo string or URL (the store
    then owns, opens on first use, and closes its pool), or an open pool the caller closes."""

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
        backend = PostgresBackend(
            conninfo_or_pool, schema=schema, min_size=min_size, max_size=max_size, timeout=timeout
        )
        super().__init__(backend, clock=clock)

    @classmethod
    def from_url(
        cls, url: str, *, clock: Clock | None = None, schema: str = "memstack"
    ) -> PostgresRecordStore:
        """``postgresql://user:password@host:port/db?...``, a libpq URL."""
        return cls(url, clock=clock, schema=schema)


def _import_psycopg() -> None:
    try:
        import psycopg  # noqa: F401
        import psycopg_pool  # noqa: F401
    except ImportError as exc:
        raise ConfigError(_INSTALL) from exc
