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
  table: a btree walk and 100 distances); a larger one through an IVFFlat index of its
  own (``_postgres_ann``), built before a bulk write into it returns (smaller writes and
  searches ask for it in the background), with ``ivfflat.probes`` for its lists and an
  iterative scan (``relaxed_order``), so filters still yield k rows, its candidates
  re-ranked exactly. Until its index is built, or should it yield fewer rows than asked,
  the exact scan runs. The namespace's size is
  counted (no further than the thresholds) once per ``SIZE_TTL_S`` and after the store's
  own writes changed it; its index is looked up as often.
- Writes: a batch is one statement whatever its size (``_postgres_query.upsert_sql``).
  A small namespace's rows enter no vector index; a large one's enter its IVFFlat lists
  (one pass over the list centres), so a load never waits for a graph.
- Keywords: a generated ``tsvector`` (english), queried with the words of the user's
  text OR-ed together (``plainto_tsquery(w1) || plainto_tsquery(w2) ...``, so no input
  is tsquery syntax) and ranked by ``ts_rank_cd`` normalized by document length. Up to
  ``keyword_exact_limit`` rows every match is ranked; in a bigger namespace each word
  brings at most ``WORD_CANDIDATES`` rows (``text_capped_sql``), so a common word no
  longer has every row that holds it ranked, which made a search take seconds. The GIN index
  keeps no pending list (migration 8), which every search would read whole.
- Server settings: the table and the namespace's index should fit in ``shared_buffers``
  (pgvector's advice): with PostgreSQL's default ``shared_buffers`` a large namespace's
  table does not fit, and every recall reads pages back from the operating system, so
  its tail latency is several times that of a server whose buffers hold the table
  (``tests/servers.py`` raises the setting).
- Hot standbys (``read_urls``): recall, search and listing run on one that holds every
  write memstack committed to the namespaces read, else on the primary; one that is down,
  fails mid-read or lags past ``max_lag_s`` is skipped (``_postgres_replicas``).
"""

from __future__ import annotations

import builtins
import contextlib
import threading
import time
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

from memstack.clock import Clock
from memstack.errors import ConfigError, StoreUnavailable
from memstack.storage import _postgres_ann as ann
from memstack.storage import _postgres_query as q
from memstack.storage import _postgres_replicas as replicas
from memstack.storage import wait_budget
from memstack.storage._postgres_schema import LOCK_KEY, MIGRATIONS
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
    matched_cosines,
)
from memstack.storage.base import RecordStore
from memstack.storage.types import Filter, Record, Vector

if TYPE_CHECKING:
    import psycopg
    from psycopg.types import TypeInfo
    from psycopg_pool import ConnectionPool

__all__ = ["MAX_REPLICA_LAG_S", "PostgresBackend", "PostgresRecordStore"]

_T = TypeVar("_T")

_INSTALL = (
    'PostgresRecordStore needs psycopg, psycopg_pool and pgvector: pip install "memstack[postgres]"'
)
_STALE_ROWS, _STALE_SHARE = 50, 0.1
"""Statistics are stale when the planner's row count is off by more than 50 rows plus a
tenth of the table (autovacuum's own thresholds for analyzing)."""
SIZE_TTL_S = 30.0
"""How long a namespace's counted size and its index's lists steer its searches (exact or
through the index, full or capped keyword ranking) before they are read again. Counting
reads the rows' pages, a sizeable share of a large namespace's recall if done on every
one. A stale size costs speed only: both paths return the same kind of answer (an
index search that finds fewer than k rows is redone exactly)."""
MISSING_TTL_S = 1.0
"""How long a large namespace found without a valid index is ranked exactly before the
catalog is read again (one small query): another process's bulk write may have just
built it, and until it is seen every search scans the namespace."""
_COUNTED = 10_000
"""A namespace's rows are counted at least this far (at most once per ``SIZE_TTL_S``,
as counting reads pages); past it its index's ``reltuples`` tells its size."""
POOL = 40
"""Candidates an index search re-ranks exactly, at least (2k for a larger k)."""
_SIZES_KEPT = 100_000
"""At most this many namespaces' sizes are kept, so the memo's memory is bounded."""
BULK_ROWS = 100
"""A write that adds at least this many rows to a namespace is a bulk write: it returns
once the table's statistics are fresh and the namespace is served by an index
(``_settle``). A namespace that as many rows with vectors reach through this store's
smaller writes has its build asked for in the background instead, so no single small
write waits for one."""
WORD_CANDIDATES = 100
"""At most this many rows per query word are ranked in a namespace past
``keyword_exact_limit``. On a large LoCoMo-like namespace the top 10 held as many
evidence turns with this cap as ranking every match (no larger cap did better), and the
smaller the cap, the fewer rows each recall ranks, which shortens its tail."""


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
MAX_REPLICA_LAG_S = 1.0
"""A hot standby whose replay trails what it received by more than this many seconds is
left out of reads (``_postgres_replicas``): it would show other writers' changes late."""


class PostgresBackend:
    """A backend in PostgreSQL tables under ``schema`` (default ``memstack``).

    Pass a conninfo string or URL (the store then owns, opens on first use, and closes
    its pool), or an open ``psycopg_pool.ConnectionPool`` that the caller closes (its
    own ``timeout`` and ``reconnect_timeout`` then apply).

    ``timeout``: how long a call waits for a connection before ``StoreUnavailable``
    (``REQUEST_TIMEOUT_S``).

    ``exact_limit``: a namespace of more rows than this gets an IVFFlat index of its own
    (``_postgres_ann``), through which its vector searches go once it is built.
    ``keyword_exact_limit``: a keyword search over a namespace of more rows than this
    ranks at most ``WORD_CANDIDATES`` rows per word.

    ``read_urls``: hot standbys of the primary for the reads (``get``, ``list``,
    ``count``, the searches, ``namespaces``, ``namespace_info``), each with a pool like
    the primary's; ``max_lag_s``: the replay lag past which one is skipped.
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
        keyword_exact_limit: int = 2_000,
        read_urls: Sequence[str] = (),
        max_lag_s: float = MAX_REPLICA_LAG_S,
    ) -> None:
        _import_psycopg()
        from psycopg_pool import ConnectionPool

        self._schema = q.quote_schema(schema)
        self._exact_limit = _non_negative(exact_limit, "exact_limit")
        self._keyword_exact_limit = _non_negative(keyword_exact_limit, "keyword_exact_limit")
        self._size_limit = max(self._exact_limit, self._keyword_exact_limit, _COUNTED) + 1
        self._vector_type: TypeInfo | None = None
        self._sizes: dict[str, tuple[int, float]] = {}
        """Namespace -> (rows counted up to ``_size_limit``, monotonic time counted)."""
        self._indexes: dict[str, tuple[ann.Found | None, float]] = {}
        """Namespace -> (its valid index, monotonic time looked up)."""
        self._builds = ann.Builds(self._reconcile)
        self._added: dict[str, int] = {}
        """Namespace -> rows with vectors this store's smaller writes added since its last
        ``_settle`` (fewer than ``BULK_ROWS``)."""
        self._owns_pool = isinstance(conninfo_or_pool, str)

        def pool(conninfo: str, name: str) -> ConnectionPool[Any]:
            return ConnectionPool(
                conninfo,
                kwargs=_connect_kwargs(conninfo),
                open=False,
                min_size=min_size,
                max_size=max_size,
                timeout=timeout,
                reconnect_timeout=RECONNECT_TIMEOUT_S,
                name=name,
            )

        if isinstance(conninfo_or_pool, str):
            self._pool: ConnectionPool[Any] = pool(conninfo_or_pool, f"memstack-{schema}")
        else:
            self._pool = conninfo_or_pool
        if isinstance(max_lag_s, bool) or not isinstance(max_lag_s, int | float) or max_lag_s < 0:
            raise ConfigError(f"max_lag_s must be a non-negative number; got {max_lag_s!r}.")
        self._max_lag_s = float(max_lag_s)
        self._replicas = replicas.Replicas(
            [pool(url, f"memstack-{schema}-replica{i}") for i, url in enumerate(read_urls)]
        )
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

    def close(self) -> None:
        self._builds.close()
        with self._open_lock:
            self._closed = True
            if self._owns_pool:
                self._pool.close()
            for replica in self._replicas.all:
                replica.pool.close()

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
                conn.execute(
                    f"INSERT INTO {self._schema}.namespace_info (namespace, dim, model_id)"
                    " VALUES (%s, %s, %s) ON CONFLICT (namespace) DO UPDATE"
                    " SET dim = EXCLUDED.dim, model_id = EXCLUDED.model_id",
                    (namespace, info.dim, info.model_id),
                )
            if rows:
                conn.execute(q.upsert_sql(self._schema), q.upsert_params(rows))
            deleted = sum(self._delete(conn, ns, ids) for ns, ids in batch.deletes)
            evicted = {cap.namespace: self._evict(conn, cap, batch.now) for cap in batch.caps}
            shrunk = {ns for ns, _ in batch.deletes} | set(evicted)
            self._forget_empty(conn, shrunk)
            also = {ns for cap in batch.caps for ns in cap.also_from}
            changed = {r.namespace for r in rows} | shrunk | also | set(batch.claims)
            replicas.bump(conn, self._schema, builtins.list(changed))
        self._resized({r.namespace for r in rows}, shrunk)
        self._settle_added(rows)
        return WriteResult(deleted=deleted, evicted=evicted)

    def _settle_added(self, rows: Sequence[Record]) -> None:
        """``_settle`` each namespace that this write gave ``BULK_ROWS`` rows (before it
        returns), or that this store's writes did since it was last settled (in the
        background)."""
        added: dict[str, tuple[int, int | None]] = {}
        for record in rows:
            count, dim = added.get(record.namespace, (0, None))
            if record.embedding is not None:
                dim = int(record.embedding.shape[0])
            added[record.namespace] = (count + 1, dim)
        for namespace, (count, dim) in added.items():
            seen = self._added.pop(namespace, 0) + count
            if count >= BULK_ROWS or (seen >= BULK_ROWS and dim is not None):
                self._settle(namespace, dim, wait=count >= BULK_ROWS, written=len(rows))
                continue
            if len(self._added) >= _SIZES_KEPT:
                self._added.clear()
            self._added[namespace] = seen

    def _settle(self, namespace: str, dim: int | None, *, wait: bool, written: int = 0) -> None:
        """Make the namespace ready after a bulk write, as ``ready`` does but reading only
        the catalog: analyze the table when its statistics are stale (``_analyze_stale``), and
        give the namespace, past ``exact_limit`` rows, an index that fits them (by the
        index's row count, which the analysis refreshed). With ``wait``, a namespace with
        no valid index has it built here, after the commit (after another process's build
        of it, if one runs); one whose index no longer fits has it rebuilt in the
        background, as without ``wait``, while the old one serves: an index of a quarter
        of the lists served 100k rows as fast, and waiting for each rebuild cost a load
        in bulk batches a sixth of its rate. The write has committed: a failure is kept
        for ``ready`` to raise (and the build asked again by searches), never raised as
        the write's."""
        try:
            with self._connection() as conn:
                if wait:
                    self._analyze_stale(conn, written)
                if dim is None or dim > ann.MAX_DIM:
                    return
                clause = "r.namespace = %s AND r.dim = %s"
                sql = q.rows_sql(self._schema, clause, self._exact_limit + 1)
                row = conn.execute(sql, (namespace, dim)).fetchone()
                if row is None or int(row[0]) <= self._exact_limit:
                    return
                found = ann.found_indexes(conn, self._schema, namespace)
            valid = [f for f in found if f.valid and f.dim == dim]
            if any(not ann.due(f.lists, f.rows) for f in valid):
                return
            if wait and not valid:
                self._reconcile(namespace, dim, threading.Event(), wait=True)
            else:
                self._builds.want(namespace, dim)
        except Exception as exc:
            self._builds.failures[namespace] = (exc, time.monotonic())

    def _analyze_stale(self, conn: psycopg.Connection[Any], written: int) -> None:
        """``ANALYZE`` the records table when its statistics are stale for a bulk write
        (``_stale_after``), now rather than when autovacuum looks (once a minute): until
        then a namespace a bulk write made large is planned as a small one, and its
        keyword searches read the whole namespace. ``written``: the rows the write just
        changed, which the server's counters may not hold yet (each session reports them
        at most once a second). Skipped while another maintenance (an index build) holds
        the table."""
        table = f"{self._schema}.records"
        row = conn.execute(
            "SELECT c.reltuples, coalesce(s.n_mod_since_analyze, 0) FROM pg_class c"
            " LEFT JOIN pg_stat_user_tables s ON s.relid = c.oid"
            " WHERE c.oid = to_regclass(%s)",
            (table,),
        ).fetchone()
        if row is not None and _stale_after(float(row[0]), int(row[1]) + written):
            conn.execute(f"ANALYZE (SKIP_LOCKED) {table}")

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
            replicas.bump(conn, self._schema, [namespace])
            indexed = ann.found_indexes(conn, self._schema, namespace)
        self._resized((), {namespace})
        if indexed:  # dropped now (no rows are left), after the commit: CONCURRENTLY
            self._reconcile(namespace, indexed[0].dim, threading.Event())
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
            replicas.bump(conn, self._schema, [old, new])
            indexed = ann.found_indexes(conn, self._schema, old)
            info = self._info(conn, new)
        self._resized((), {old, new})
        if indexed:  # an index names its namespace: the old one's go, the new one's is built
            self._reconcile(old, indexed[0].dim, threading.Event())
        self._settle_moved(new, moved, info)
        return moved

    def _settle_moved(self, namespace: str, moved: int, info: NamespaceInfo | None) -> None:
        """A rename or swap that moved ``BULK_ROWS`` rows into ``namespace`` is a bulk
        write to it: ``_settle`` before returning."""
        if moved >= BULK_ROWS:
            dim = None if info is None else info.dim
            self._settle(namespace, dim, wait=True, written=moved)

    def replace_namespace(self, copy: str, namespace: str) -> int:
        """The check and the swap under a table lock that lets readers on and holds every
        writer back until the commit: any write of ``namespace`` (a plain delete takes
        no namespace lock) is either seen by the check or made after the swap."""
        records, info = f"{self._schema}.records", f"{self._schema}.namespace_info"
        with self._connection() as conn:
            conn.execute(f"LOCK TABLE {records} IN SHARE ROW EXCLUSIVE MODE")
            check_same_records(copy, namespace, self._held(conn, copy), self._held(conn, namespace))
            indexed = [
                (name, found[0].dim)
                for name in (copy, namespace)
                if (found := ann.found_indexes(conn, self._schema, name))
            ]
            conn.execute(f"DELETE FROM {records} WHERE namespace = %s", (namespace,))
            conn.execute(f"DELETE FROM {info} WHERE namespace = %s", (namespace,))
            moved = conn.execute(
                f"UPDATE {records} SET namespace = %s WHERE namespace = %s", (namespace, copy)
            ).rowcount
            conn.execute(
                f"UPDATE {info} SET namespace = %s WHERE namespace = %s", (namespace, copy)
            )
            swapped = self._info(conn, namespace)
            replicas.bump(conn, self._schema, [copy, namespace])
        self._resized((), {copy, namespace})
        for name, dim in indexed:  # each index names its namespace: the stale ones go
            self._reconcile(name, dim, threading.Event())
        self._settle_moved(namespace, moved, swapped)
        return moved

    def _held(self, conn: psycopg.Connection[Any], namespace: str) -> dict[str, Stamp]:
        """The stamp of every record of ``namespace`` (expired and closed ones too)."""
        rows = conn.execute(
            f"SELECT id, updated_at, valid_to, text FROM {self._schema}.records"
            " WHERE namespace = %s",
            (namespace,),
        ).fetchall()
        return {str(r[0]): (r[1], r[2], r[3]) for r in rows}

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
            replicas.bump(conn, self._schema, builtins.list(shrunk))
        self._resized((), shrunk)
        return len(gone)

    # -- reads ----------------------------------------------------------------------

    def get(
        self, namespace: str, ids: Sequence[str], now: float, *, expired: bool = False
    ) -> builtins.list[Record]:
        return self._read(
            namespace, lambda conn: self._get(conn, namespace, ids, now, expired=expired)
        )

    def _get(
        self,
        conn: psycopg.Connection[Any],
        namespace: str,
        ids: Sequence[str],
        now: float,
        *,
        expired: bool = False,
    ) -> builtins.list[Record]:
        wanted = Filter(ids=tuple(ids), include_expired=expired, include_superseded=True)
        return self._select(conn, namespace, wanted, now)

    def list(self, namespace: str, wanted: Filter, page: Page, now: float) -> builtins.list[Record]:
        after, params = q.keyset(page.order, page.after)
        tail = f"{after} ORDER BY {q.ORDER_BY[page.order]} LIMIT %s OFFSET %s"
        params += [page.limit, page.offset]
        return self._read(
            namespace, lambda conn: self._select(conn, namespace, wanted, now, tail, params)
        )

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
        """One connection and transaction for the keyword and vector searches and the
        records' fetch (a snapshot, and no ping and commit between them)."""

        def searched(
            conn: psycopg.Connection[Any],
        ) -> tuple[builtins.list[Ranked], builtins.list[Ranked], builtins.list[Record]]:
            matched = self._text_search(conn, namespace, words, k, wanted, now) if words else []
            nearest: builtins.list[Ranked] = []
            if query is not None:
                info = self._info(conn, namespace)
                if info is not None:
                    accept(info)
                    nearest = self._vector_search(conn, namespace, query, k, wanted, now)
            ids = candidate_ids(matched, nearest)
            return (
                matched,
                nearest,
                (
                    self._get(conn, namespace, ids, now, expired=wanted.include_expired)
                    if ids
                    else []
                ),
            )

        matched, nearest, found = self._read(namespace, searched)
        records = {r.id: r for r in found}
        cosines = {} if query is None else matched_cosines(matched, records, query)
        return Gathered(matched=matched, nearest=nearest, cosines=cosines, records=records)

    def count(self, namespace: str, wanted: Filter, now: float) -> int:
        clause, params = q.where(namespace, wanted, now)
        sql = f"SELECT count(*) FROM {self._schema}.records r WHERE {clause}"
        row = self._read(namespace, lambda conn: conn.execute(sql, params).fetchone())
        return 0 if row is None else int(row[0])

    def vector_search(
        self, namespace: str, query: Vector, k: int, wanted: Filter, now: float
    ) -> builtins.list[Ranked]:
        return self._read(
            namespace, lambda conn: self._vector_search(conn, namespace, query, k, wanted, now)
        )

    def _vector_search(
        self,
        conn: psycopg.Connection[Any],
        namespace: str,
        query: Vector,
        k: int,
        wanted: Filter,
        now: float,
    ) -> builtins.list[Ranked]:
        clause, params = q.where(namespace, wanted, now)
        dim = int(query.shape[0])
        index = self._index(conn, namespace, dim)
        if index is not None:
            ann.search_with(conn, index.lists)
            sql = q.ann_vector_sql(self._schema, clause, dim, max(POOL, 2 * k))
            # Planned for this namespace (its partial index), never a generic plan.
            hits = conn.execute(sql, [*params, query, query, k], prepare=False).fetchall()
            if len(hits) == k:
                return _ranked(hits)
        hits = conn.execute(
            q.exact_vector_sql(self._schema, clause), [query, *params, dim, k], prepare=False
        ).fetchall()
        return _ranked(hits)

    def _index(self, conn: psycopg.Connection[Any], namespace: str, dim: int) -> ann.Found | None:
        """The namespace's valid index when it has more than ``exact_limit`` rows, else
        None; when it has none, or one that no longer fits its rows (``ann.due``), a
        build is asked for (``_reconcile``, in the background). Looked up once per
        ``SIZE_TTL_S``."""
        size = self._size(conn, namespace)
        if dim > ann.MAX_DIM or size <= self._exact_limit:
            return None
        known = self._indexes.get(namespace)
        ttl = SIZE_TTL_S if known is not None and known[0] is not None else MISSING_TTL_S
        if known is not None and time.monotonic() - known[1] < ttl:
            index = known[0]
        else:
            found = [f for f in ann.found_indexes(conn, self._schema, namespace) if f.valid]
            index = max((f for f in found if f.dim == dim), key=lambda f: f.lists, default=None)
            if len(self._indexes) >= _SIZES_KEPT:
                self._indexes.clear()
            self._indexes[namespace] = (index, time.monotonic())
        if index is None or ann.due(index.lists, max(size, index.rows)):
            self._builds.want(namespace, dim)
        return index

    def _reconcile(
        self, namespace: str, dim: int, stopped: threading.Event, *, wait: bool = False
    ) -> None:
        """Give the namespace the index its rows call for, on a connection of its own
        outside any transaction (``CONCURRENTLY``): build one when it has more than
        ``exact_limit`` rows of ``dim`` and no valid index that fits them, then drop every
        other index of it. Only one process at a time: the others skip it, or with
        ``wait`` wait for it and then look again (``close`` then cancels nothing here)."""
        table = f"{self._schema}.records"
        key = (f"{self._schema}.{namespace}", ann.BUILD_KEY)
        with self._maintenance(cancellable=not wait) as conn:
            lock = (
                "SELECT true FROM pg_advisory_lock(hashtextextended(%s, %s))"
                if wait
                else "SELECT pg_try_advisory_lock(hashtextextended(%s, %s))"
            )
            row = conn.execute(lock, key).fetchone()
            if not (row and row[0]):
                return
            try:
                counted = conn.execute(
                    f"SELECT count(*) FROM {table} WHERE namespace = %s AND dim = %s",
                    (namespace, dim),
                ).fetchone()
                rows = 0 if counted is None else int(counted[0])
                found = ann.found_indexes(conn, self._schema, namespace)
                keep = None
                if rows > self._exact_limit and dim <= ann.MAX_DIM:
                    fits = [f for f in found if f.valid and f.dim == dim]
                    keep = next((f.name for f in fits if not ann.due(f.lists, rows)), None)
                    if keep is None and not stopped.is_set():
                        keep = self._build(conn, namespace, dim, ann.lists_for(rows))
                for index in found:
                    if index.name != keep and not stopped.is_set():
                        drop = f"DROP INDEX CONCURRENTLY IF EXISTS {self._schema}.{index.name}"
                        conn.execute(drop)
            finally:
                conn.execute("SELECT pg_advisory_unlock(hashtextextended(%s, %s))", key)
        self._indexes.pop(namespace, None)

    def _build(self, conn: psycopg.Connection[Any], namespace: str, dim: int, lists: int) -> str:
        """Build the namespace's index of ``lists`` lists (dropping first one of that name
        a stopped build left invalid); its name."""
        name = ann.index_name(namespace, dim, lists)
        conn.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {self._schema}.{name}")
        return ann.build(conn, self._schema, namespace, dim, lists)

    @contextmanager
    def _maintenance(self, *, cancellable: bool = True) -> Iterator[psycopg.Connection[Any]]:
        """A pooled connection in autocommit mode (``CREATE INDEX CONCURRENTLY`` runs
        outside transactions), which ``close`` can cancel if ``cancellable``."""
        self._open()
        with self._translated(self._pool.timeout, self._pool):
            conn = self._pool.getconn(self._pool.timeout)
            try:
                conn.autocommit = True
                if cancellable:
                    self._builds.cancel = conn.cancel_safe
                yield conn
            finally:
                if cancellable:
                    self._builds.cancel = None
                with contextlib.suppress(Exception):  # a broken one: the pool replaces it
                    conn.autocommit = False
                self._pool.putconn(conn)

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
        """One statement for the batch when the namespace is ranked exactly (a lateral
        join: each row's nearest, in the order asked); through the index one by one."""
        return self._read(namespace, lambda conn: self._nearest(conn, namespace, queries, now))

    def _nearest(
        self, conn: psycopg.Connection[Any], namespace: str, queries: Matrix, now: float
    ) -> builtins.list[tuple[str, float] | None]:
        dim = int(queries.shape[1])
        if self._index(conn, namespace, dim) is None:
            clause, params = q.where(namespace, Filter(), now)
            rows = conn.execute(
                q.nearest_sql(self._schema, clause), [builtins.list(queries), *params, dim]
            ).fetchall()
            return [None if id is None else _ranked([(id, score)])[0] for id, score in rows]
        out: builtins.list[Ranked | None] = []
        for query in queries:
            hits = self._vector_search(conn, namespace, query, 1, Filter(), now)
            out.append(hits[0] if hits else None)
        return out

    def text_search(
        self, namespace: str, words: Sequence[str], k: int, wanted: Filter, now: float
    ) -> builtins.list[Ranked]:
        return self._read(
            namespace, lambda conn: self._text_search(conn, namespace, words, k, wanted, now)
        )

    def _text_search(
        self,
        conn: psycopg.Connection[Any],
        namespace: str,
        words: Sequence[str],
        k: int,
        wanted: Filter,
        now: float,
    ) -> builtins.list[Ranked]:
        clause, params = q.where(namespace, wanted, now)
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
        fence = replicas.Fence(prefix=prefix)
        rows = self._read(fence, lambda conn: conn.execute(sql, (prefix, now)).fetchall())
        return [row[0] for row in rows]

    def ready(self, namespace: str) -> bool:
        """Whether the namespace's searches run at full speed: the planner's statistics
        of the records table are fresh, and a namespace of more than ``exact_limit`` rows
        has a valid index that fits them. Makes them so: runs ``ANALYZE`` when stale, and
        asks for the index's build (in the background) when due; poll it to wait.

        After a bulk load the statistics lag until autovacuum analyzes the table (it looks
        once a minute). Until then the planner may take a large namespace for a small
        one: a keyword search then filtered the whole namespace through
        ``records_ns_kind`` instead of reading the GIN index, several times slower than
        once analyzed.
        Stale means the planner's row count (``reltuples``) is off by more than a tenth
        of the table (``ANALYZE`` reads a sample of at most 30k rows). Counting reads the
        table and the namespace, so call it after loads, not per search. A build that
        failed raises here."""
        failure = self._builds.failures.pop(namespace, None)
        if failure is not None:
            raise StoreUnavailable(f"building the index of {namespace!r} failed: {failure[0]}")
        if self._builds.busy(namespace):
            return False
        table = f"{self._schema}.records"
        with self._connection() as conn:
            row = conn.execute(
                f"SELECT (SELECT reltuples FROM pg_class WHERE oid = to_regclass(%s)),"
                f" (SELECT count(*) FROM {table})",
                (table,),
            ).fetchone()
            if row is not None and _stale(float(row[0]), int(row[1])):
                conn.execute(f"ANALYZE {table}")
            info = self._info(conn, namespace)
            if info is None or info.dim > ann.MAX_DIM:
                return True
            counted = conn.execute(
                f"SELECT count(*) FROM {table} WHERE namespace = %s AND dim = %s",
                (namespace, info.dim),
            ).fetchone()
            rows = 0 if counted is None else int(counted[0])
            if rows <= self._exact_limit:
                return True
            found = ann.found_indexes(conn, self._schema, namespace)
        if any(f.valid and f.dim == info.dim and not ann.due(f.lists, rows) for f in found):
            return True
        self._indexes.pop(namespace, None)
        self._builds.want(namespace, info.dim, retry=True)
        return False

    def index_serves(self, namespace: str) -> bool:
        """Whether the namespace's vector searches go through its approximate index now,
        or need none (at most ``exact_limit`` rows, or too many dimensions): read only,
        it asks for no build and analyzes nothing (``ready`` does)."""
        with self._connection() as conn:
            info = self._info(conn, namespace)
            if info is None or info.dim > ann.MAX_DIM:
                return True
            clause = "r.namespace = %s AND r.dim = %s"
            row = conn.execute(
                q.rows_sql(self._schema, clause, self._exact_limit + 1), (namespace, info.dim)
            ).fetchone()
            if row is None or int(row[0]) <= self._exact_limit:
                return True
            found = ann.found_indexes(conn, self._schema, namespace)
        return any(f.valid and f.dim == info.dim for f in found)

    def namespace_info(self, namespace: str) -> NamespaceInfo | None:
        return self._read(namespace, lambda conn: self._info(conn, namespace))

    def _info(self, conn: psycopg.Connection[Any], namespace: str) -> NamespaceInfo | None:
        row = conn.execute(
            f"SELECT dim, model_id FROM {self._schema}.namespace_info WHERE namespace = %s",
            (namespace,),
        ).fetchone()
        return None if row is None else NamespaceInfo(dim=int(row[0]), model_id=row[1])

    def _select(
        self,
        conn: psycopg.Connection[Any],
        namespace: str,
        wanted: Filter,
        now: float,
        tail: str = "",
        tail_params: Sequence[Any] = (),
    ) -> builtins.list[Record]:
        clause, params = q.where(namespace, wanted, now)
        sql = f"SELECT {q.columns()} FROM {self._schema}.records r WHERE {clause} {tail}"
        rows = conn.execute(sql, [*params, *tail_params], binary=True).fetchall()
        return [q.record_from_row(row) for row in rows]

    def _rowcount(self, sql: str, params: Sequence[Any]) -> int:
        with self._connection() as conn:
            return conn.execute(sql, params).rowcount

    def _read(
        self, fence: str | replicas.Fence, work: Callable[[psycopg.Connection[Any]], _T]
    ) -> _T:
        """``work`` on a hot standby that holds every write memstack committed to the
        namespaces of ``fence`` (a namespace, or a ``Fence``), within the lag bound; else,
        or should every standby fail, on the primary (``_postgres_replicas``)."""
        if not self._replicas.all:
            with self._connection() as conn:
                return work(conn)
        import psycopg

        if isinstance(fence, str):
            fence = replicas.Fence(names=(fence,))
        with self._connection(vectors=False) as conn:
            wanted = replicas.marks(conn, self._schema, fence)
        for replica in self._replicas.in_turn():
            try:
                with self._connection(pool=replica.pool, timeout=replicas.WAIT_S) as conn:
                    if replicas.fresh(conn, self._schema, wanted, self._max_lag_s):
                        return work(conn)
            except StoreUnavailable:
                replica.skip()  # down, or gone mid-read: left out a while
            except (ConfigError, psycopg.Error):
                pass  # failing mid-read, or not migrated yet: the next one answers
        with self._connection() as conn:
            return work(conn)

    @contextmanager
    def _connection(
        self,
        *,
        vectors: bool = True,
        timeout: float | None = None,
        pool: ConnectionPool[Any] | None = None,
    ) -> Iterator[psycopg.Connection[Any]]:
        """A connection of ``pool`` (the primary's by default) in a transaction:
        committed if the block succeeds; with ``vectors``, pgvector's binary adapter is
        registered on it. ``StoreUnavailable`` when none answers within ``timeout`` (the
        pool's, ``REQUEST_TIMEOUT_S``, by default) or the server goes away during the
        block."""
        self._open()
        pool = self._pool if pool is None else pool
        wait = wait_budget.allowance(pool.timeout if timeout is None else timeout)
        with self._translated(wait, pool), self._pooled(wait, pool) as conn:
            if vectors:
                self._register_vector(conn)
            yield conn

    @contextmanager
    def _translated(self, wait: float, pool: ConnectionPool[Any]) -> Iterator[None]:
        """psycopg's errors of a missing schema or an unreachable server as ours."""
        import psycopg
        import psycopg_pool

        try:
            yield
        except psycopg.errors.UndefinedTable as exc:
            raise ConfigError(
                f"the tables of schema {self._schema} are missing; call store.setup() first."
            ) from exc
        except psycopg_pool.PoolTimeout as exc:
            raise StoreUnavailable(
                f"PostgreSQL is unavailable: no connection within {wait:g} s (the server "
                f"is down or unreachable, or all {pool.max_size} connections of the "
                "pool are busy)"
            ) from exc
        except (
            psycopg.OperationalError,
            psycopg.InterfaceError,
            psycopg_pool.PoolClosed,
        ) as exc:
            raise StoreUnavailable(f"PostgreSQL is unavailable: {exc}") from exc

    @contextmanager
    def _pooled(
        self, timeout: float, pool: ConnectionPool[Any]
    ) -> Iterator[psycopg.Connection[Any]]:
        """A connection of the pool that has just answered a ping (an empty query, one
        round trip), as a transaction (``with conn``), given back after the block.

        A pooled connection the server dropped (it stopped or restarted since the
        connection was last used) fails only when next used; unchecked, the first call
        after the server came back failed on it. One that fails the ping is handed
        back (the pool replaces it), every idle one is checked too (``pool.check()``:
        after a restart they are all dead), and the next is taken, all within
        ``timeout`` and what is left of the request's ``wait_budget``. (The pool's own
        ``check=`` callback sleeps a second after each failed check: a call that met
        two dead connections timed out after the restart.)"""
        from psycopg_pool import PoolTimeout

        started = time.monotonic()
        deadline = started + timeout
        try:
            if timeout <= 0:
                raise StoreUnavailable(
                    "PostgreSQL is unavailable: this request has already waited as "
                    "long as it may for a connection"
                )
            conn = pool.getconn(timeout)
            while not _answers(conn):
                pool.putconn(conn)
                pool.check()
                left = deadline - time.monotonic()
                if left <= 0:
                    raise PoolTimeout(f"no connection answered within {timeout:g} s")
                conn = pool.getconn(left)
        finally:
            wait_budget.spend(time.monotonic() - started)
        try:
            with conn:
                yield conn
        finally:
            pool.putconn(conn)

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
            for replica in self._replicas.all:
                if replica.pool.closed:
                    replica.pool.open()


class PostgresRecordStore(RecordStore):
    """A ``RecordStore`` on a ``PostgresBackend``: a conninfo string or URL (the store
    then owns, opens on first use, and closes its pool), or an open pool the caller closes.
    The search thresholds and the hot standbys (``read_urls``, ``max_lag_s``) are
    ``PostgresBackend``'s."""

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
        keyword_exact_limit: int = 2_000,
        read_urls: Sequence[str] = (),
        max_lag_s: float = MAX_REPLICA_LAG_S,
    ) -> None:
        backend = PostgresBackend(
            conninfo_or_pool,
            schema=schema,
            min_size=min_size,
            max_size=max_size,
            timeout=timeout,
            exact_limit=exact_limit,
            keyword_exact_limit=keyword_exact_limit,
            read_urls=read_urls,
            max_lag_s=max_lag_s,
        )
        super().__init__(backend, clock=clock)

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        clock: Clock | None = None,
        schema: str = "memstack",
        read_urls: Sequence[str] = (),
        max_lag_s: float = MAX_REPLICA_LAG_S,
    ) -> PostgresRecordStore:
        """``postgresql://user:password@host:port/db?...``, a libpq URL; ``read_urls``
        name hot standbys of it for the reads."""
        return cls(url, clock=clock, schema=schema, read_urls=read_urls, max_lag_s=max_lag_s)


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


def _stale_after(planned: float, changed: int) -> bool:
    """Whether statistics of ``planned`` rows (-1: never analyzed) are stale for a bulk
    write after ``changed`` rows were written or deleted: more than the table held when
    analyzed (plus 50). Autovacuum's own threshold, a tenth of the table, analyzed a load
    in bulk batches so often that it lost a quarter of its rate, for no faster recall."""
    return planned < 0 or changed > _STALE_ROWS + planned


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
