"""``memstack bench catalog``: where one partial IVFFlat index per large namespace stops
scaling on PostgreSQL.

In a throwaway schema (dropped after, its indexes first in batches, so the drop never
needs a lock per index in one transaction) set up by ``PostgresBackend.setup`` (the
store's own migrations), the number of indexed namespaces grows to each count, and at
each the bench measures: the catalog's size (rows of ``pg_class`` and ``pg_index``,
bytes of ``pg_class``, ``pg_attribute``, ``pg_index``, ``pg_statistic`` and every
catalog relation); memstack's recall query (``_postgres_query.ann_vector_sql`` over
``_postgres_query.where``, with the store's ``ivfflat.probes`` and iterative scan set by
``_postgres_ann.search_with``) on one namespace, its planning and execution time from
``EXPLAIN (ANALYZE, FORMAT JSON)``, p50 and p95, whether the plan still reads that
namespace's index, and the locks it holds; a fresh connection's first such query (the
relation cache built) and its ``CacheMemoryContext``; the time to build one more index;
rows/s of memstack's upsert statement into a small namespace (one row a statement, and
100); and ``ANALYZE``.

Why small namespaces are faithful: every index is the store's own, made by
``_postgres_ann.build`` (``CREATE INDEX CONCURRENTLY``, with the store's
``maintenance_work_mem`` and ``lists_for`` lists), for namespaces past the backend's
``exact_limit``, which the bench lowers through the constructor to ``rows - 1``. What
grows with the count of such indexes, the subject here, does not depend on how many rows
each holds: an index is one ``pg_class`` row, one ``pg_index`` row (its predicate and
expression as node trees), one ``pg_attribute`` row and its dependencies, whatever its
size; the planner opens every index of ``records`` and tests every predicate, an insert
evaluates every predicate, and ``ANALYZE`` evaluates every predicate over its sample
(at most 30,000 rows however large the table). Rows per namespace only set how much heap
each build reads (a build reads the whole table, twice: the growth costs
namespaces x rows per build, quadratic in the count), so ``rows`` is kept small to reach
10,000 namespaces. The namespace queried holds ``PROBE_ROWS`` rows, enough for the planner
to take its index as it does for a large namespace.
"""

from __future__ import annotations

import secrets
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

import numpy as np

from memstack.bench.report import percentiles
from memstack.storage import _postgres_ann as ann
from memstack.storage import _postgres_query as q
from memstack.storage.postgres import POOL
from memstack.storage.types import Filter, Record

if TYPE_CHECKING:
    import psycopg

__all__ = ["DIM", "PROBE_ROWS", "CatalogOptions", "run_catalog"]

DIM: Final = 384
PROBE_ROWS: Final = 200
"""Rows of the namespace queried: the planner takes its index at this size."""
K: Final = 10
_BATCH: Final = 500
"""Rows per upsert statement while growing."""
_INSERTS: Final = 200
"""Rows inserted at each count, one a statement and then 100 a statement."""
_FRESH: Final = 3
"""Fresh connections timed at each count (the median is kept)."""
_BUILDS_KEPT: Final = 20
"""The last builds of each step whose median is its build time."""
_DROP_BATCH: Final = 500


@dataclass(frozen=True, kw_only=True)
class CatalogOptions:
    counts: Sequence[int]
    """Indexed namespaces at each step, ascending."""
    rows: int = 2
    """Rows of each namespace but the one queried."""
    repeats: int = 30
    """Recall queries timed at each count."""
    seed: int = 7


def run_catalog(
    url: str, options: CatalogOptions, progress: Callable[[int], None] = lambda n: None
) -> dict[str, Any]:
    """The run's JSON: every step's figures, the server's settings, and the schema used
    (dropped after).
    ``progress`` is told of each namespace built."""
    import psycopg
    from pgvector.psycopg import register_vector

    from memstack.storage.postgres import PostgresBackend

    schema = f"memstack_catalog_{secrets.token_hex(4)}"
    backend = PostgresBackend(url, schema=schema, exact_limit=options.rows - 1, max_size=2)
    try:
        backend.setup(time.time())
        with psycopg.connect(url, autocommit=True) as conn:
            register_vector(conn)
            bench = _Catalog(conn, url, q.quote_schema(schema), options)
            try:
                steps = []
                for count in options.counts:
                    bench.grow(count, progress)
                    step = bench.measure(count)
                    step["index_serves"] = backend.index_serves(bench.probe)
                    steps.append(step)
                server = _server(conn)
            finally:
                _drop(conn, bench.schema)
    finally:
        backend.close()
    return {
        "benchmark": "catalog",
        "counts": list(options.counts),
        "rows": options.rows,
        "probe_rows": max(options.rows, PROBE_ROWS),
        "repeats": options.repeats,
        "dim": DIM,
        "schema": schema,
        "server": server,
        "steps": steps,
    }


class _Catalog:
    """The schema being grown and measured, on one autocommit connection."""

    def __init__(
        self, conn: psycopg.Connection[Any], url: str, schema: str, options: CatalogOptions
    ) -> None:
        self.conn, self.url, self.schema, self.options = conn, url, schema, options
        self.rng = np.random.default_rng(options.seed)
        self.built = 0
        self.builds_ms: list[float] = []
        self.probe = _name(0)

    def grow(self, count: int, progress: Callable[[int], None]) -> None:
        """Namespaces up to ``count`` in all, each loaded, then given its index."""
        self.builds_ms = []
        names = [_name(i) for i in range(self.built, count)]
        step = max(1, _BATCH // self.options.rows)
        for start in range(0, len(names), step):
            chunk = names[start : start + step]
            self._load(chunk)
            for name in chunk:
                began = time.perf_counter()
                self._build(name)
                self.builds_ms.append((time.perf_counter() - began) * 1000)
                progress(1)
        self.built = count

    def _rows(self, name: str) -> int:
        return max(self.options.rows, PROBE_ROWS) if name == self.probe else self.options.rows

    def _load(self, names: Sequence[str]) -> None:
        records = [self._record(name, f"m{i}") for name in names for i in range(self._rows(name))]
        for start in range(0, len(records), _BATCH):
            batch = records[start : start + _BATCH]
            self.conn.execute(q.upsert_sql(self.schema), q.upsert_params(batch))
        self.conn.execute(
            f"INSERT INTO {self.schema}.namespace_info (namespace, dim, model_id)"
            " SELECT unnest(%s::text[]), %s, 'bench:random'",
            (list(names), DIM),
        )

    def _record(self, namespace: str, key: str) -> Record:
        now = time.time()
        return Record(
            id=key,
            namespace=namespace,
            text=f"memory {key} of {namespace}",
            created_at=now,
            updated_at=now,
            embedding=self._vector(),
        )

    def _vector(self) -> np.ndarray[Any, np.dtype[np.float32]]:
        v = self.rng.standard_normal(DIM).astype(np.float32)
        unit: np.ndarray[Any, np.dtype[np.float32]] = v / np.linalg.norm(v)
        return unit

    def _build(self, name: str) -> None:
        """The namespace's index, built as the store builds it."""
        ann.build(self.conn, self.schema, name, DIM, ann.lists_for(self._rows(name)))

    def measure(self, count: int) -> dict[str, Any]:
        began = time.perf_counter()
        self.conn.execute(f"ANALYZE {self.schema}.records")
        step: dict[str, Any] = {"namespaces": count}
        step["analyze_ms"] = _ms(began)
        step |= _catalog(self.conn, self.schema)
        step |= self._recalls()
        step |= self._fresh()
        step |= self._inserts(count)
        step["build_ms"] = _median(self.builds_ms[-_BUILDS_KEPT:])
        step["build_last_ms"] = round(self.builds_ms[-1], 2) if self.builds_ms else None
        return step

    def _probe_index(self) -> str:
        return ann.index_name(self.probe, DIM, ann.lists_for(self._rows(self.probe)))

    def _query(self) -> tuple[str, list[Any]]:
        """memstack's recall query on the probe namespace, and its parameters but the
        vectors."""
        clause, params = q.where(self.probe, Filter(), time.time())
        return q.ann_vector_sql(self.schema, clause, DIM, max(POOL, 2 * K)), params

    def _recall(self, conn: psycopg.Connection[Any], *, explain: bool = False) -> Any:
        """The recall in a transaction with the store's settings for the namespace's
        index, and the locks it held."""
        sql, params = self._query()
        vector = self._vector()
        with conn.transaction():
            ann.search_with(conn, ann.lists_for(self._rows(self.probe)))
            text = f"EXPLAIN (ANALYZE, FORMAT JSON) {sql}" if explain else sql
            rows = conn.execute(text, [*params, vector, vector, K], prepare=False).fetchall()
            locks = conn.execute("SELECT count(*) FROM pg_locks WHERE pid = pg_backend_pid()")
            held = locks.fetchone()
        return rows, 0 if held is None else int(held[0])

    def _recalls(self) -> dict[str, Any]:
        planning, execution, wall, used = [], [], [], []
        locks = 0
        for _ in range(self.options.repeats):
            (row,), locks = self._recall(self.conn, explain=True)
            plan = row[0][0]
            planning.append(float(plan["Planning Time"]))
            execution.append(float(plan["Execution Time"]))
            used.append(self._probe_index() in _index_names(plan["Plan"]))
            began = time.perf_counter()
            self._recall(self.conn)
            wall.append(_ms(began))
        return {
            "plan_ms": percentiles(planning, (50, 95)),
            "exec_ms": percentiles(execution, (50, 95)),
            "query_ms": percentiles(wall, (50, 95)),
            "uses_index": all(used),
            "locks_per_query": locks,
        }

    def _fresh(self) -> dict[str, Any]:
        """A new connection: connecting, its first recall (building the relation cache of
        ``records`` and every index), its second, and its cache's memory."""
        import psycopg
        from pgvector.psycopg import register_vector

        runs: list[tuple[float, float, float, float | None]] = []
        for _ in range(_FRESH):
            began = time.perf_counter()
            with psycopg.connect(self.url, autocommit=True) as conn:
                connected = _ms(began)
                register_vector(conn)
                began = time.perf_counter()
                self._recall(conn)
                first = _ms(began)
                began = time.perf_counter()
                self._recall(conn)
                runs.append((connected, first, _ms(began), _cache_mb(conn)))
        caches = [run[3] for run in runs if run[3] is not None]
        return {
            "connect_ms": _median([run[0] for run in runs]),
            "first_query_ms": _median([run[1] for run in runs]),
            "second_query_ms": _median([run[2] for run in runs]),
            "cache_mb": _median(caches),
        }

    def _inserts(self, count: int) -> dict[str, Any]:
        """Rows/s of memstack's upsert into a small namespace (no vector index of its own;
        each row is still tested against every index's predicate)."""
        name = "writes"
        records = [self._record(name, f"w{count}-{i}") for i in range(2 * _INSERTS)]
        began = time.perf_counter()
        for record in records[:_INSERTS]:
            self.conn.execute(q.upsert_sql(self.schema), q.upsert_params([record]))
        single = _INSERTS / (time.perf_counter() - began)
        began = time.perf_counter()
        for start in range(_INSERTS, 2 * _INSERTS, 100):
            batch = records[start : start + 100]
            self.conn.execute(q.upsert_sql(self.schema), q.upsert_params(batch))
        batched = _INSERTS / (time.perf_counter() - began)
        return {"insert_rows_per_s": round(single, 1), "insert_batch_rows_per_s": round(batched, 1)}


def _name(i: int) -> str:
    return f"tenant-{i:06d}"


def _index_names(node: dict[str, Any]) -> set[str]:
    """The indexes a plan's nodes read."""
    found = {str(node["Index Name"])} if "Index Name" in node else set()
    for child in node.get("Plans", []):
        found |= _index_names(child)
    return found


def _catalog(conn: psycopg.Connection[Any], schema: str) -> dict[str, Any]:
    """Rows and bytes of the catalog, and the namespaces' indexes on the records table."""
    row = conn.execute(
        "SELECT (SELECT count(*) FROM pg_class), (SELECT count(*) FROM pg_index),"
        " (SELECT count(*) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid"
        "  WHERE i.indrelid = to_regclass(%s) AND starts_with(c.relname, 'records_ivf_')),"
        " pg_total_relation_size('pg_class'), pg_total_relation_size('pg_attribute'),"
        " pg_total_relation_size('pg_index'), pg_total_relation_size('pg_statistic'),"
        " (SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c"
        "  WHERE c.relnamespace = 'pg_catalog'::regnamespace AND c.relkind = 'r')",
        (f"{schema}.records",),
    ).fetchone()
    assert row is not None
    names: tuple[str, ...] = ("pg_class_rows", "pg_index_rows", "indexes")
    names += ("pg_class_mb", "pg_attribute_mb", "pg_index_mb", "pg_statistic_mb", "catalog_mb")
    values = [int(v) for v in row[:3]] + [round(int(v) / 2**20, 2) for v in row[3:]]
    return dict(zip(names, values, strict=True))


def _cache_mb(conn: psycopg.Connection[Any]) -> float | None:
    """The backend's ``CacheMemoryContext`` with its children (the relation cache), in
    MB; None where the server has no ``pg_backend_memory_contexts`` (before 14)."""
    version = conn.info.server_version
    if version >= 170000:  # contexts have a path of ids from the top
        sql = (
            "WITH c AS (SELECT level, path[level] AS id FROM pg_backend_memory_contexts"
            " WHERE name = 'CacheMemoryContext')"
            " SELECT sum(m.total_bytes) FROM pg_backend_memory_contexts m, c"
            " WHERE m.path[c.level] = c.id"
        )
    elif version >= 140000:
        sql = (
            "SELECT sum(total_bytes) FROM pg_backend_memory_contexts"
            " WHERE name = 'CacheMemoryContext' OR parent = 'CacheMemoryContext'"
        )
    else:
        return None
    row = conn.execute(sql).fetchone()
    return None if row is None or row[0] is None else round(int(row[0]) / 2**20, 2)


def _server(conn: psycopg.Connection[Any]) -> dict[str, Any]:
    """The settings the figures depend on, and the shared lock table's size: every
    index a statement plans or writes through holds a lock in it until the transaction
    ends, ``max_locks_per_transaction`` x (backends + prepared transactions) in all."""
    names: tuple[str, ...] = ("server_version", "max_locks_per_transaction", "max_connections")
    names += ("max_prepared_transactions", "autovacuum_max_workers", "max_worker_processes")
    names += ("max_wal_senders", "max_files_per_process", "shared_buffers")
    row = conn.execute(
        "SELECT " + ", ".join("current_setting(%s)" for _ in names), list(names)
    ).fetchone()
    assert row is not None
    settings = dict(zip(names, row, strict=True))
    backends = sum(int(settings[n]) for n in names[2:7]) + 1  # + the launcher
    settings["lock_slots"] = int(settings["max_locks_per_transaction"]) * backends
    return settings


def _drop(conn: psycopg.Connection[Any], schema: str) -> None:
    """The schema, its namespaces' indexes first in batches (one ``DROP SCHEMA`` of
    10,000 indexes locks them all in one transaction)."""
    while True:
        rows = conn.execute(
            "SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid"
            " WHERE i.indrelid = to_regclass(%s) AND starts_with(c.relname, 'records_ivf_')"
            " LIMIT %s",
            (f"{schema}.records", _DROP_BATCH),
        ).fetchall()
        if not rows:
            break
        conn.execute("DROP INDEX " + ", ".join(f"{schema}.{r[0]}" for r in rows))
    conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


def _ms(began: float) -> float:
    return round((time.perf_counter() - began) * 1000, 2)


def _median(values: Sequence[float]) -> float | None:
    return round(statistics.median(values), 2) if values else None
