"""The PostgreSQL backend: pgvector and tsvector, for many servers and users.

psycopg 3, psycopg_pool and pgvector (its psycopg adapter: vectors travel binary) are
imported here only, when a store is made; without them the store raises ``ConfigError``
naming the extra to install.

- Thread-safe through a ``psycopg_pool.ConnectionPool``; each call is one transaction.
- A server that is down is a fast ``StoreUnavailable``: a call waits at most
  ``REQUEST_TIMEOUT_S`` for a connection; the pool keeps trying to connect about once a
  second (``RECONNECT_TIMEOUT_S``), so calls succeed again within about a second of the
  server's return; and a pooled connection answers a ping before a call gets it
  (``_pooled``), so none that died with the server fails a call after it is back.
- Vectors: cosine with pgvector's ``<=>`` (score = 1 - distance). A namespace of at most
  ``exact_limit`` rows is ranked whole, exactly (a 100-row namespace of a million-row
  table: a btree walk and 100 distances); past it, the planner is offered the dimension's
  HNSW index (``_postgres_schema``) with ``hnsw.ef_search`` at least k, growing with the
  graph's rows (``EF_BY_ROWS``: 300 at 10k, 2.5-3 ms instead of a 10-20 ms exact scan) and
  ``hnsw.iterative_scan = relaxed_order``, so filters still yield k rows. A graph past
  ``AWAY_LIMIT`` rows is scanned twice in one statement: for the query, then away from
  the cluster the first scan found (``AWAY_ROWS``,
  ``_postgres_query.hnsw_away_vector_sql``). Should the index yield fewer rows than
  asked, the exact scan runs. The namespace's size is counted (no further than the
  thresholds) once per ``SIZE_TTL_S`` and after the store's own writes changed
  it. On ``bench recall``'s 100k rows (2026-11-23): recall@10 against exact 0.992-0.999
  with both scans at ef_search 400-1000 (0.985-0.996 on 200 other queries); 0.97-0.99
  with one scan at 1000 (migration 7's graph); 0.80 at 200 with pgvector's default graph
  before it
  (``_postgres_schema.HNSW_PARAMS``).
- Keywords: a generated ``tsvector`` (english), queried with the words of the user's
  text OR-ed together (``plainto_tsquery(w1) || plainto_tsquery(w2) ...``, so no input
  is tsquery syntax) and ranked by ``ts_rank_cd`` normalized by document length. Up to
  ``keyword_exact_limit`` rows every match is ranked; in a bigger namespace each word
  brings at most ``WORD_CANDIDATES`` rows (``text_capped_sql``), so a word that matches
  a third of 100k rows no longer has them all ranked (1.8 s -> 20-40 ms). The GIN index
  keeps no pending list (migration 8), which every search would read whole.
- Server settings: the HNSW index and the table should fit in ``shared_buffers``
  (pgvector's advice). At 100k rows they are 195 + 260 MB; at the default 128 MB a hybrid
  recall's p95 was 94-131 ms, at 1 GB 36-39 ms (``tests/servers.py``). With both
  (2026-11-23, 2 busy cores), ``bench recall``'s 100k recall p95 went from 102 ms (two
  runs) to 37 and 42 ms, 2.0-2.1x its floor.
"""

from __future__ import annotations

import builtins
import threading
import time
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from memstack.clock import Clock
from memstack.errors import ConfigError, StoreUnavailable
from memstack.storage import _postgres_query as q
from memstack.storage._postgres_schema import (
    HNSW_MAX_DIM,
    LOCK_KEY,
    MIGRATIONS,
    hnsw_index_name,
    hnsw_index_sql,
)
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
    check_claims,
    check_expected,
    expected_ids,
    gather_apart,
)
from memstack.storage.base import RecordStore
from memstack.storage.types import Filter, Record, Vector

if TYPE_CHECKING:
    import psycopg
    from psycopg.types import TypeInfo
    from psycopg_pool import ConnectionPool

__all__ = ["PostgresBackend", "PostgresRecordStore"]

_INSTALL = (
    'PostgresRecordStore needs psycopg, psycopg_pool and pgvector: pip install "memstack[postgres]"'
)
_STALE_ROWS, _STALE_SHARE = 50, 0.1
"""Statistics are stale when the planner's row count is off by more than 50 rows plus a
tenth of the table (autovacuum's own thresholds for analyzing)."""
SIZE_TTL_S = 30.0
"""How long a namespace's counted size steers its searches (exact or HNSW, full or capped
keyword ranking) before it is counted again. Counting reads the rows' pages: 20 ms for the
10,001 rows of a 100k namespace, a third of its recall. A stale size costs speed only:
both paths return the same kind of answer (an HNSW search that finds fewer than k rows
is redone exactly)."""
_COUNTED = 10_000
"""A namespace's rows are counted at least this far (20 ms at 10k rows, once per
``SIZE_TTL_S``); past it the HNSW index's ``reltuples`` tells the graph's size."""
EF_BY_ROWS: tuple[tuple[int, int], ...] = ((5_000, 200), (10_000, 300), (20_000, 400))
"""(graph rows up to, ``hnsw.ef_search``): the smallest candidate list that kept recall@10
against the exact scan at 0.99 or more at that size; a bigger graph gets the store's
``ef_search`` (``EF_CEILING``). Measured 2026-11-23 on 2 shared cores (``bench recall``'s synthetic
corpus in one namespace, inserted 1,000 rows a statement into the live index as the bench
does; 200 of its real MiniLM queries / 200 others; ms: p50 of a vector search of 50):

    rows  exact ms  recall@10 at ef (bench / other queries)                    HNSW ms
    2k       1.5    ef 40: 1.000 / 1.000 (as fast as the exact scan)           1.6
    5k       6.7    ef 150: 0.9995 / 1.000; 200: 1.000 / 1.000                2.2
    10k     10.4    ef 80-200: 0.994-1.000 / 0.989; 300: 1.000 / 1.000         2.5-3.1
    20k     20.6    ef 200: 0.984 / 0.995; 400: 0.994 / 0.999; 600: 1.000      3.6-4.7
    50k     70-80   ef 400: 0.981 / 0.983; 600: 0.983 / 0.984; 1000: 0.998 / 0.992

At ef 1000 the planner judged a 10k or 20k namespace cheaper to scan whole (11-22 ms;
at 10k it left the index from ef 600 on, at 5k from 300). Hence ``exact_limit`` 5,000
(was 10,000): from 5k rows the graph at ``EF_BY_ROWS`` answers 3-7x faster than the
exact scan; at 2k the two tie. Past 20k nothing short of 1000 kept 0.99 with one scan
(50k above; 100k: ``_postgres_schema.HNSW_PARAMS``); with the second scan
600 kept 0.985 or more at 100k (``AWAY_ROWS``; the table was measured with one scan)."""
AWAY_LIMIT = EF_BY_ROWS[-1][0]
"""A graph of more rows than this is searched in two scans (``AWAY_ROWS``); up to it one
scan at ``EF_BY_ROWS``'s ef kept recall@10 at 0.99 or more, so a second scan would only
add index work (two scans cost 1.6-1.7x one at p50 on the 100k graph; ``bench recall`` at
10k measured p95 3.72x its floor with both scans, one run, and 2.63 and 2.27 with one,
against floors that moved from 7.6 to 11-12 ms; 2026-11-23)."""
EF_CEILING = 600
"""The default ``ef_search``: the candidate list of a graph past ``EF_BY_ROWS``'s sizes."""
AWAY_ROWS = 200
"""Rows the second HNSW scan brings (at least k): the nearest to the query with the first
scan's top k's mean direction projected out (``_postgres_query.hnsw_away_vector_sql``). On
``bench recall``'s 100k rows some queries lie between two of its 50 topics ("chess openings
or a golden retriever puppy"); HNSW's greedy descent landed in the other topic and found
none of their top 10, even at ef_search 1000 or with an iterative scan reading 5,000 rows
(20,000 found them, at the exact scan's cost). Recall@10 against exact, 200 bench queries
/ 200 others, on four graphs of the same rows (m 16 unless said; 2026-11-23):

    graph                              one scan, ef 1000   two scans, ef 400 / 600 / 1000
    inserted row by row, ef_c 512      0.985 / 0.964       0.995 / 0.985, 0.999 / 0.986,
                                                           0.999 / 0.987
    CREATE INDEX after the load, 512   0.975 / 0.974       0.993 / 0.990, 0.997 / 0.991,
                                                           0.998 / 0.992
    the same, m 32                     0.981 / 0.984       0.992 / 0.988, -, 0.997 / 0.991
    the same, ef_construction 1000     0.985 / 0.980       0.998 / 0.995, -, 0.998 / 0.996

(100 second rows at ef 400 on the first graph: 0.992 / 0.982.) Both scans at ef 400 took
8.5 / 14 ms (p50 / p95) on the first graph, one scan at 1000 7-15 / 16-38 ms (2 busy
cores). A bigger graph (m 32, ef_construction 1000) left the same queries stranded, and m
32 inserted 3-4x slower."""
_SIZES_KEPT = 100_000
"""At most this many namespaces' sizes are kept (about 10 MB)."""
WORD_CANDIDATES = 100
"""At most this many rows per query word are ranked in a namespace past
``keyword_exact_limit``. On 100k LoCoMo-like rows the top 10 held as many evidence turns
as ranking every match (P@10 0.295 at 100, 0.286 at 250, 0.285 at 1000, 0.279 ranking
all), and ``bench recall``'s 100k recall p95 went from 85 to 73 ms from 250 to 100."""


REQUEST_TIMEOUT_S = 1.5
"""How long a call waits for a pooled connection before it raises ``StoreUnavailable``
(the pool's ``timeout``; psycopg_pool's default, 30 s, held every request that long while
the server was down). A connection to a stopped server on this host is refused at once;
the wait is for the pool, which connects in the background: every ~1 s while the server
is away (``RECONNECT_TIMEOUT_S``), so 1.5 s also covers a call made just after the server
came back. A call also waits while every connection of the pool is busy; past 1.5 s that
too is a ``StoreUnavailable`` (a 503 telling an overloaded server's clients to retry
later) rather than a queue that grows."""
PING_TIMEOUT_S = 1.0
"""How long ``ping`` (``/healthz``) waits for a connection: shorter than a call's."""
RECONNECT_TIMEOUT_S = 2.0
"""The pool's ``reconnect_timeout``: how long it retries a lost connection (after 1 s,
then 1 s later: psycopg_pool's backoff starts at 1 s and doubles, capped at this) before
it gives the slot up; a call that finds no connection then has the pool connect anew at
once. With psycopg_pool's default (300 s) the retries were 1, 2, 4, 8, 16... s apart, so
after a 15 s outage calls could wait 16 s more for the next one."""
CONNECT_TIMEOUT_S = 3
"""libpq's ``connect_timeout`` for the pool's connections unless the URL sets one: a host
that does not answer (rather than refuses) holds a pool worker this long, not psycopg's
130 s. Calls never wait for a connection attempt, only for the pool
(``REQUEST_TIMEOUT_S``)."""


def ef_search_for(rows: int, k: int, ceiling: int = EF_CEILING) -> int:
    """HNSW's candidate list for ``k`` results from a graph of ``rows`` rows: the one
    ``EF_BY_ROWS`` measured for that size, ``ceiling`` past its sizes and at most
    ``ceiling`` below them; never below k (pgvector returns at most ef_search rows per
    scan), never above pgvector's 1000."""
    ef = ceiling
    for most, measured in EF_BY_ROWS:
        if rows <= most:
            ef = min(measured, ceiling)
            break
    return min(1000, max(k, ef))


class PostgresBackend:
    """A backend in PostgreSQL tables under ``schema`` (default ``memstack``).

    Pass a conninfo string or URL (the store then owns, opens on first use, and closes
    its pool), or an open ``psycopg_pool.ConnectionPool`` that the caller closes (its
    own ``timeout`` and ``reconnect_timeout`` then apply).

    ``timeout``: how long a call waits for a connection before ``StoreUnavailable``
    (``REQUEST_TIMEOUT_S``).

    ``exact_limit``: a vector search over more matching rows than this may use the HNSW
    index (exact up to it: about 1 µs a row, against 2-5 ms for an index search of a
    graph up to 20k rows and 10-25 ms at 100k; ``EF_BY_ROWS``).
    ``ef_search``: HNSW's candidate list past ``EF_BY_ROWS``'s sizes and the most any
    graph gets (``ef_search_for``), raised to k when k is larger (at most pgvector's
    maximum, 1000); ``EF_CEILING`` by default, with which the two scans of ``bench
    recall``'s 100k rows keep recall@10 0.99 (``AWAY_ROWS``).
    ``away_limit``: a graph of more rows than this is searched in two scans, the second
    away from the cluster the first one found (``AWAY_LIMIT``, ``AWAY_ROWS``).
    ``keyword_exact_limit``: a keyword search over a namespace of more rows than this
    ranks at most ``WORD_CANDIDATES`` rows per word.
    """

    def __init__(
        self,
        conninfo_or_pool: str | ConnectionPool[Any],
        *,
        schema: str = "memstack",
        min_size: int = 1,
        max_size: int = 8,
        timeout: float = REQUEST_TIMEOUT_S,
        exact_limit: int = 5_000,
        ef_search: int = EF_CEILING,
        away_limit: int = AWAY_LIMIT,
        keyword_exact_limit: int = 2_000,
    ) -> None:
        _import_psycopg()
        from psycopg_pool import ConnectionPool

        self._schema = q.quote_schema(schema)
        self._exact_limit = _non_negative(exact_limit, "exact_limit")
        self._ef_search = min(1000, max(1, _non_negative(ef_search, "ef_search")))
        self._away_limit = _non_negative(away_limit, "away_limit")
        self._keyword_exact_limit = _non_negative(keyword_exact_limit, "keyword_exact_limit")
        self._size_limit = max(self._exact_limit, self._keyword_exact_limit, _COUNTED) + 1
        self._vector_type: TypeInfo | None = None
        self._indexed_dims: set[int] = set()
        self._sizes: dict[str, tuple[int, float]] = {}
        """Namespace -> (rows counted up to ``_size_limit``, monotonic time counted)."""
        self._graphs: dict[int, tuple[int, float]] = {}
        """Dimension -> (its HNSW index's ``reltuples``, monotonic time read)."""
        self._owns_pool = isinstance(conninfo_or_pool, str)
        if isinstance(conninfo_or_pool, str):
            self._pool: ConnectionPool[Any] = ConnectionPool(
                conninfo_or_pool,
                kwargs=_connect_kwargs(conninfo_or_pool),
                open=False,
                min_size=min_size,
                max_size=max_size,
                timeout=timeout,
                reconnect_timeout=RECONNECT_TIMEOUT_S,
                name=f"memstack-{schema}",
            )
        else:
            self._pool = conninfo_or_pool
        self._open_lock = threading.Lock()
        self._opened = not self._owns_pool
        self._closed = False

    def setup(self, now: float) -> None:
        import psycopg

        with self._connection(vectors=False) as conn:
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
            dims = conn.execute(f"SELECT DISTINCT dim FROM {self._schema}.namespace_info")
            for (dim,) in dims.fetchall():
                self._index_dim(conn, int(dim))

    def close(self) -> None:
        with self._open_lock:
            self._closed = True
            if self._owns_pool:
                self._pool.close()

    def ping(self) -> None:
        """Return once a connection answers; ``StoreUnavailable`` after
        ``PING_TIMEOUT_S`` without one."""
        with self._connection(vectors=False, timeout=PING_TIMEOUT_S):
            pass

    # -- writes ---------------------------------------------------------------------

    def write(self, batch: WriteBatch) -> WriteResult:
        rows = sorted(batch.upserts, key=lambda r: (r.namespace, r.id))  # one lock order
        with self._connection() as conn:
            for namespace in _locked(batch):
                conn.execute(
                    "SELECT pg_advisory_xact_lock(hashtextextended(%s, %s))",
                    (f"{self._schema}.{namespace}", LOCK_KEY),
                )
            check_expected(batch.expect, self._stamps(conn, batch))
            stored = {ns: self._info(conn, ns) for ns in batch.claims}
            for namespace, info in check_claims(batch.claims, stored).items():
                self._index_dim(conn, info.dim)
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
            shrunk = {ns for ns, _ in batch.deletes} | set(evicted)
            self._forget_empty(conn, shrunk)
        self._resized({r.namespace for r in rows}, shrunk)
        return WriteResult(deleted=deleted, evicted=evicted)

    def _stamps(
        self, conn: psycopg.Connection[Any], batch: WriteBatch
    ) -> dict[tuple[str, str], Stamp]:
        """The stamps of the records ``batch`` expects that exist (expired ones too), read
        under the namespaces' locks: after every write to them committed before."""
        out: dict[tuple[str, str], Stamp] = {}
        for namespace, ids in expected_ids(batch.expect).items():
            rows = conn.execute(
                f"SELECT id, updated_at, valid_to, text FROM {self._schema}.records"
                " WHERE namespace = %s AND id = ANY(%s::text[])",
                (namespace, ids),
            ).fetchall()
            out.update({(namespace, str(r[0])): (r[1], r[2], r[3]) for r in rows})
        return out

    def _index_dim(self, conn: psycopg.Connection[Any], dim: int) -> None:
        """Make the HNSW index of ``dim`` if there is none: once per dimension, when a
        namespace first claims it. (Building scans the table under a SHARE lock, so
        writers wait for this transaction; rows of a new dimension are few.)"""
        if dim in self._indexed_dims or dim > HNSW_MAX_DIM:
            return
        name = f"{self._schema}.{hnsw_index_name(dim)}"
        found = conn.execute("SELECT to_regclass(%s) IS NOT NULL", (name,)).fetchone()
        if not (found and found[0]):
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (LOCK_KEY,))
            conn.execute(hnsw_index_sql(self._schema, dim))
        self._indexed_dims.add(dim)

    def _delete(self, conn: psycopg.Connection[Any], namespace: str, ids: Sequence[str]) -> int:
        return conn.execute(
            f"DELETE FROM {self._schema}.records WHERE namespace = %s AND id = ANY(%s::text[])",
            (namespace, list(ids)),
        ).rowcount

    def _evict(self, conn: psycopg.Connection[Any], cap: Cap, now: float) -> builtins.list[str]:
        """Evict the lowest-retention current records beyond ``cap.keep``, chosen with a
        LIMIT: deleted, or closed as history (``cap.close``); then bound that history."""
        live = (
            "namespace = %s AND (expires_at IS NULL OR expires_at > %s)"
            " AND (valid_to IS NULL OR valid_to > %s)"
        )
        row = conn.execute(
            f"SELECT count(*) FROM {self._schema}.records WHERE {live}",
            (cap.namespace, now, now),
        ).fetchone()
        excess = (0 if row is None else int(row[0])) - cap.keep
        doomed: builtins.list[str] = []
        if excess > 0:
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
        if doomed and cap.close:
            conn.execute(
                f"UPDATE {self._schema}.records SET valid_to = %s, closed_reason = 'evicted'"
                " WHERE namespace = %s AND id = ANY(%s::text[])",
                (now, cap.namespace, doomed),
            )
        for namespace in cap.also_from if cap.close else (cap.namespace, *cap.also_from):
            self._delete(conn, namespace, doomed)
        if cap.keep_closed is not None:
            self._bound_history(conn, cap.namespace, cap.keep_closed)
        return doomed

    def _bound_history(self, conn: psycopg.Connection[Any], namespace: str, keep: int) -> None:
        """Delete the closed records of ``namespace`` beyond ``keep``, earliest closed first."""
        closed = "namespace = %s AND valid_to IS NOT NULL"
        row = conn.execute(
            f"SELECT count(*) FROM {self._schema}.records WHERE {closed}", (namespace,)
        ).fetchone()
        excess = (0 if row is None else int(row[0])) - keep
        if excess > 0:
            conn.execute(
                f"DELETE FROM {self._schema}.records WHERE namespace = %s AND id IN"
                f" (SELECT id FROM {self._schema}.records WHERE {closed}"
                ' ORDER BY valid_to, id COLLATE "C" LIMIT %s)',
                (namespace, namespace, excess),
            )

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
        self._resized((), {namespace})
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
        self._resized((), {old, new})
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
            shrunk = {str(row[0]) for row in gone}
            self._forget_empty(conn, shrunk)
        self._resized((), shrunk)
        return len(gone)

    # -- reads ----------------------------------------------------------------------

    def get(
        self, namespace: str, ids: Sequence[str], now: float, *, expired: bool = False
    ) -> builtins.list[Record]:
        wanted = Filter(ids=tuple(ids), include_expired=expired, include_superseded=True)
        return self._select(namespace, wanted, now)

    def list(self, namespace: str, wanted: Filter, page: Page, now: float) -> builtins.list[Record]:
        tail = f"ORDER BY {q.ORDER_BY[page.order]} LIMIT %s OFFSET %s"
        return self._select(namespace, wanted, now, tail, [page.limit, page.offset])

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
        # Three round trips, as before there was a gather; one statement could do it.
        return gather_apart(self, namespace, words, query, k, wanted, now, accept)

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
        dim = int(query.shape[0])
        with self._connection() as conn:
            graph = self._hnsw_graph(conn, namespace, dim, k)
            if graph is not None:
                if graph <= self._away_limit:
                    sql, args = q.hnsw_vector_sql(self._schema, clause, dim), [query, *params, k]
                else:
                    sql = q.hnsw_away_vector_sql(self._schema, clause, dim)
                    args = [query, *params, k, query, query, *params, max(k, AWAY_ROWS), k]
                # Planned for this namespace, never a generic plan.
                hits = conn.execute(sql, args, prepare=False).fetchall()
                if len(hits) == k:
                    return _ranked(hits)
            hits = conn.execute(
                q.exact_vector_sql(self._schema, clause), [query, *params, dim, k], prepare=False
            ).fetchall()
        return _ranked(hits)

    def _hnsw_graph(
        self, conn: psycopg.Connection[Any], namespace: str, dim: int, k: int
    ) -> int | None:
        """The rows of the graph to search when the namespace has more than
        ``exact_limit`` rows and ``dim`` an HNSW index (the namespace's rows or the
        index's ``reltuples``, the planner's, whichever is more), else None; the
        transaction's HNSW settings are then made for ``k`` results from it."""
        size = self._size(conn, namespace)
        if dim > HNSW_MAX_DIM or size <= self._exact_limit:
            return None
        graph = self._graph_rows(conn, dim)
        if graph is None:
            return None
        rows = max(size, graph)
        conn.execute(
            "SELECT set_config('hnsw.ef_search', %s, true),"
            " set_config('hnsw.iterative_scan', 'relaxed_order', true)",
            (str(ef_search_for(rows, k, self._ef_search)),),
        )
        return rows

    def _graph_rows(self, conn: psycopg.Connection[Any], dim: int) -> int | None:
        """The rows of ``dim``'s HNSW index as the planner last counted them (``reltuples``,
        -1 before any ANALYZE), None without an index; reused for ``SIZE_TTL_S`` like a
        namespace's size, so a search makes no extra round trip for it."""
        known = self._graphs.get(dim)
        if known is not None and time.monotonic() - known[1] < SIZE_TTL_S:
            return known[0]
        row = conn.execute(
            "SELECT reltuples FROM pg_class WHERE oid = to_regclass(%s)",
            (f"{self._schema}.{hnsw_index_name(dim)}",),
        ).fetchone()
        if row is None or row[0] is None:
            return None  # not cached: the index may be made at any moment
        self._graphs[dim] = (int(row[0]), time.monotonic())
        return int(row[0])

    def _size(self, conn: psycopg.Connection[Any], namespace: str) -> int:
        """The namespace's rows, counted no further than ``_size_limit`` (past the exact,
        keyword and ``_COUNTED`` thresholds: an index walk of at most that many entries)
        and reused for ``SIZE_TTL_S``."""
        counted = self._sizes.get(namespace)
        if counted is not None and time.monotonic() - counted[1] < SIZE_TTL_S:
            return counted[0]
        sql = q.rows_sql(self._schema, "r.namespace = %s", self._size_limit)
        row = conn.execute(sql, (namespace,)).fetchone()
        size = 0 if row is None else int(row[0])
        if len(self._sizes) >= _SIZES_KEPT:
            self._sizes.clear()  # bounded memory; the next searches count again
        self._sizes[namespace] = (size, time.monotonic())
        return size

    def _resized(self, grown: Collection[str], shrunk: Collection[str] = ()) -> None:
        """Forget the sizes our own writes changed: of namespaces that lost rows, and of
        those that gained rows while counted below a threshold (big ones stay big)."""
        for namespace in (*grown, *shrunk):
            counted = self._sizes.get(namespace)
            if counted is not None and (namespace in shrunk or counted[0] < self._size_limit):
                self._sizes.pop(namespace, None)

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
        clause, params = q.where(namespace, wanted, now)
        with self._connection() as conn:
            if self._size(conn, namespace) <= self._keyword_exact_limit:
                sql, word_params = q.text_sql(self._schema, clause, words)
                values = [*word_params, *params, k]
            else:
                sql = q.text_capped_sql(self._schema, clause, words, WORD_CANDIDATES)
                values = [*words, *(v for w in words for v in (w, *params)), k]
            rows = conn.execute(sql, values, prepare=False).fetchall()
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

    def ready(self, namespace: str) -> bool:
        """Whether the planner's statistics of the records table are fresh, made so.

        The server keeps the indexes built, but after a bulk load its statistics lag
        until autovacuum analyzes the table (it looks once a minute). Until then the
        planner may take a namespace for 200 rows: a keyword search at 10k rows filtered
        the whole namespace through ``records_ns_kind`` instead of reading the GIN index
        (27 ms; 9 ms once analyzed). When the planner's row count (``reltuples``) is
        off by more than a tenth of the table, this runs ``ANALYZE`` (a sample of at
        most 30k rows). Counting reads the table, so call it after loads, not per
        search."""
        table = f"{self._schema}.records"
        with self._connection(vectors=False) as conn:
            row = conn.execute(
                f"SELECT (SELECT reltuples FROM pg_class WHERE oid = to_regclass(%s)),"
                f" (SELECT count(*) FROM {table})",
                (table,),
            ).fetchone()
            if row is not None and _stale(float(row[0]), int(row[1])):
                conn.execute(f"ANALYZE {table}")
        return True

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
            rows = conn.execute(sql, [*params, *tail_params], binary=True).fetchall()
        return [q.record_from_row(row) for row in rows]

    def _rowcount(self, sql: str, params: Sequence[Any]) -> int:
        with self._connection() as conn:
            return conn.execute(sql, params).rowcount

    @contextmanager
    def _connection(
        self, *, vectors: bool = True, timeout: float | None = None
    ) -> Iterator[psycopg.Connection[Any]]:
        """A pooled connection in a transaction: committed if the block succeeds; with
        ``vectors``, pgvector's binary adapter is registered on it. ``StoreUnavailable``
        when none answers within ``timeout`` (the pool's, ``REQUEST_TIMEOUT_S``, by
        default) or the server goes away during the block."""
        import psycopg
        import psycopg_pool

        self._open()
        wait = self._pool.timeout if timeout is None else timeout
        try:
            with self._pooled(wait) as conn:
                if vectors:
                    self._register_vector(conn)
                yield conn
        except psycopg.errors.UndefinedTable as exc:
            raise ConfigError(
                f"the tables of schema {self._schema} are missing; call store.setup() first."
            ) from exc
        except psycopg_pool.PoolTimeout as exc:
            raise StoreUnavailable(
                f"PostgreSQL is unavailable: no connection within {wait:g} s (the server "
                f"is down or unreachable, or all {self._pool.max_size} connections of the "
                "pool are busy)"
            ) from exc
        except (
            psycopg.OperationalError,
            psycopg.InterfaceError,
            psycopg_pool.PoolClosed,
        ) as exc:
            raise StoreUnavailable(f"PostgreSQL is unavailable: {exc}") from exc

    @contextmanager
    def _pooled(self, timeout: float) -> Iterator[psycopg.Connection[Any]]:
        """A connection of the pool that has just answered a ping (an empty query, one
        round trip), as a transaction (``with conn``), given back after the block.

        A pooled connection the server dropped (it stopped or restarted since the
        connection was last used) fails only when next used; unchecked, the first call
        after the server came back failed on it. One that fails the ping is handed
        back (the pool replaces it), every idle one is checked too (``pool.check()``:
        after a restart they are all dead), and the next is taken, all within
        ``timeout``. (The pool's own ``check=`` callback sleeps a second after each
        failed check: a call that met two dead connections timed out after the
        restart.)"""
        from psycopg_pool import PoolTimeout

        deadline = time.monotonic() + timeout
        conn = self._pool.getconn(timeout)
        while not _answers(conn):
            self._pool.putconn(conn)
            self._pool.check()
            left = deadline - time.monotonic()
            if left <= 0:
                raise PoolTimeout(f"no connection answered within {timeout:g} s")
            conn = self._pool.getconn(left)
        try:
            with conn:
                yield conn
        finally:
            self._pool.putconn(conn)

    def _register_vector(self, conn: psycopg.Connection[Any]) -> None:
        """pgvector's adapter on ``conn``: its type is looked up once, then registering is
        a few dict entries, so a caller's pool needs no hook of ours."""
        from pgvector.psycopg.vector import register_vector_info
        from psycopg.types import TypeInfo

        if self._vector_type is None:
            self._vector_type = TypeInfo.fetch(conn, "vector")
            if self._vector_type is None:
                raise ConfigError(
                    "the pgvector type 'vector' is missing from this database; call "
                    "store.setup() first (it runs CREATE EXTENSION vector)."
                )
        if conn.adapters.types.get("vector") is None:
            register_vector_info(conn, self._vector_type)

    def _open(self) -> None:
        with self._open_lock:
            if self._closed:
                raise StoreUnavailable("this PostgresRecordStore is closed; open a new one.")
            if not self._opened:
                self._pool.open()
                self._opened = True


class PostgresRecordStore(RecordStore):
    """A ``RecordStore`` on a ``PostgresBackend``: a conninfo string or URL (the store
    then owns, opens on first use, and closes its pool), or an open pool the caller closes.
    The search thresholds are ``PostgresBackend``'s."""

    def __init__(
        self,
        conninfo_or_pool: str | ConnectionPool[Any],
        *,
        clock: Clock | None = None,
        schema: str = "memstack",
        min_size: int = 1,
        max_size: int = 8,
        timeout: float = REQUEST_TIMEOUT_S,
        exact_limit: int = 5_000,
        ef_search: int = EF_CEILING,
        away_limit: int = AWAY_LIMIT,
        keyword_exact_limit: int = 2_000,
    ) -> None:
        backend = PostgresBackend(
            conninfo_or_pool,
            schema=schema,
            min_size=min_size,
            max_size=max_size,
            timeout=timeout,
            exact_limit=exact_limit,
            ef_search=ef_search,
            away_limit=away_limit,
            keyword_exact_limit=keyword_exact_limit,
        )
        super().__init__(backend, clock=clock)

    @classmethod
    def from_url(
        cls, url: str, *, clock: Clock | None = None, schema: str = "memstack"
    ) -> PostgresRecordStore:
        """``postgresql://user:password@host:port/db?...``, a libpq URL."""
        return cls(url, clock=clock, schema=schema)


def _locked(batch: WriteBatch) -> builtins.list[str]:
    """The namespaces a write locks (a transaction-scoped advisory lock each, in one
    order), so that writes to one of them that depend on what is stored take turns:
    those whose embeddings claim it (its dimension and model), those that cap it (the
    count, then the eviction), and those that expect records of it (the check, then
    the write; a lock on the namespace also covers a record not yet there, which a row
    lock cannot). PostgreSQL runs READ COMMITTED: each statement after the lock sees
    every write committed before it."""
    names = set(batch.claims) | {cap.namespace for cap in batch.caps}
    return sorted(names | {condition.namespace for condition in batch.expect})


def _stale(planned: float, rows: int) -> bool:
    """Whether the planner's row count (-1: never analyzed) is too far from ``rows``."""
    return planned < 0 or abs(rows - planned) > _STALE_ROWS + _STALE_SHARE * rows


def _ranked(rows: Sequence[Any]) -> builtins.list[Ranked]:
    return [(str(row[0]), min(1.0, max(-1.0, float(row[1])))) for row in rows]


def _connect_kwargs(conninfo: str) -> dict[str, Any]:
    """``connect_timeout`` (``CONNECT_TIMEOUT_S``) unless ``conninfo`` sets its own."""
    import psycopg
    from psycopg.conninfo import conninfo_to_dict

    try:
        given = conninfo_to_dict(conninfo)
    except psycopg.ProgrammingError:  # malformed: the pool's first connection says why
        given = {}
    return {} if "connect_timeout" in given else {"connect_timeout": CONNECT_TIMEOUT_S}


def _answers(conn: psycopg.Connection[Any]) -> bool:
    """Whether ``conn`` answers an empty query (psycopg_pool's own check)."""
    import psycopg
    from psycopg_pool import ConnectionPool

    try:
        ConnectionPool.check_connection(conn)
    except psycopg.Error:
        return False
    return True


def _non_negative(value: int, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigError(f"{name} must be a non-negative integer; got {value!r}.")
    return value


def _import_psycopg() -> None:
    try:
        import pgvector.psycopg  # noqa: F401
        import psycopg  # noqa: F401
        import psycopg_pool  # noqa: F401
    except ImportError as exc:
        raise ConfigError(_INSTALL) from exc
