"""A large namespace's own approximate vector index on PostgreSQL, and its builds.

A namespace of more than ``PostgresBackend``'s ``exact_limit`` rows gets one IVFFlat index
of its own: a partial expression index over its rows' vectors as half precision,

    CREATE INDEX CONCURRENTLY records_ivf_<md5 of the namespace>_<dim>_<lists> ON records
    USING ivfflat ((embedding::halfvec(384)) halfvec_cosine_ops) WITH (lists = 316)
    WHERE namespace = '<the namespace>' AND dim = 384

searched with ``ivfflat.probes`` = ``probes_for(lists)`` and an iterative scan, its
candidates re-ranked by their full-precision cosine (``_postgres_query.ann_vector_sql``).
Small namespaces have no index: they are ranked exactly, and their writes pay for no
vector index at all.

Why IVFFlat, and one per namespace: on ``bench recall``'s rows (tight clusters of near
duplicates) an HNSW graph reached recall@10 0.98 only with a large ``ef_construction`` and
a second scan, which made its builds too slow for a million rows and every insert into it
slow; IVFFlat over ``halfvec`` reached it with ``probes_for``'s lists, builds an order of
magnitude faster, and an insert into it is one pass over the list centres. One index per
namespace: a shared index would mix every namespace's rows into its lists, so a
namespace's search would read the others' rows too, and its build could not wait until a
namespace is loaded. (The measurements are in the issue's benchmark report.)

When: a bulk write (``PostgresBackend.write``: at least ``BULK_ROWS`` rows into the
namespace in one write, which ``remember_many``, import, restore and batch calls all are,
and a rename or swap that moves as many) returns only once the namespace is served by an
index: the table analyzed when more rows changed than it held when last analyzed (else
the planner takes a namespace just loaded for a small one), and an index built, in the
writer's own thread after its commit, when it has none (after another process's build of
it, if one runs). So a query right after a load is served by the index, as at steady
state. An index that no longer fits its rows (fourfold growth or shrinkage, by its row
count, which that analysis refreshes) is rebuilt in the background while it serves: one
of a quarter of the lists served 100k rows as fast, and waiting for each rebuild slowed a
load in bulk batches by a sixth. Smaller writes ask for the same in the background once
``BULK_ROWS`` of their rows have reached the namespace, so no single small write waits for
a build; so do a search that finds no index, or one that no longer fits, and ``ready()``.
Background builds run on a thread of
the process that noticed, one at a time. Every build is guarded by a session advisory
lock per namespace (so one process builds it) and uses ``CREATE INDEX CONCURRENTLY``:
writers and searches of every namespace go on meanwhile; until the index is valid a
search ranks the namespace exactly (same answers, slower). The index replaced is dropped
(``DROP INDEX CONCURRENTLY``) once its successor is valid. A build reads the whole table
(twice: ``CONCURRENTLY``), whatever the namespace's share, and two builds of one table
take turns (each holds the table's share-update-exclusive lock).

Alternatives measured for the window after a load, and why they lost: an exact scan over
``halfvec`` casts or ``binary_quantize`` bits re-ranked at full precision was slower than
the plain exact scan (each row is still read and converted; the bits also lost
recall@10), PostgreSQL already runs that scan with its parallel workers, and a build
without ``CONCURRENTLY`` or with other ``max_parallel_maintenance_workers`` took as long
(and the former blocks every writer of the table). The measurements are in the issue's
benchmark report.
"""

from __future__ import annotations

import atexit
import hashlib
import math
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    import psycopg
    from psycopg import sql

__all__ = [
    "BUILD_KEY",
    "MAX_DIM",
    "Builds",
    "Found",
    "create_sql",
    "due",
    "found_indexes",
    "index_name",
    "lists_for",
    "probes_for",
]

MAX_DIM = 4000
"""pgvector indexes ``halfvec`` of at most 4,000 dimensions; larger ones are ranked exactly."""
BUILD_KEY = 0x6D656D616E6E  # "memann": the advisory lock a namespace's build holds
RETRY_S = 300.0
"""A namespace whose build failed is not built again for searches before this many seconds
(each attempt reads the whole table); ``ready()`` retries at once."""
_NAME = re.compile(r"records_ivf_[0-9a-f]{16}_(\d+)_(\d+)")


def lists_for(rows: int) -> int:
    """IVFFlat lists for ``rows`` rows: the square root (pgvector advises rows / 1000 up to
    1M rows and the square root past; at 100k rows the square root's lists kept recall
    while reading fewer rows than rows / 1000's)."""
    return max(1, round(math.sqrt(max(rows, 1))))


def probes_for(lists: int) -> int:
    """Lists a search reads first: twice the square root, which kept recall@10 at the
    0.98 target on ``bench recall``'s rows at every size tried, where the square root
    alone fell short."""
    return min(lists, math.ceil(2 * math.sqrt(lists)))


def due(lists: int, rows: int) -> bool:
    """Whether an index of ``lists`` lists no longer fits ``rows`` rows: they grew or
    shrank fourfold since it was built (a list then holds 4x or 1/4 the rows ``probes_for``
    was tuned for)."""
    wanted = lists_for(rows)
    return wanted >= 2 * lists or 2 * wanted <= lists


def index_name(namespace: str, dim: int, lists: int) -> str:
    """The index's name: the namespace's digest, the dimension and the lists (at most 50
    characters, whatever the namespace)."""
    return f"{_prefix(namespace)}{int(dim)}_{int(lists)}"


def _prefix(namespace: str) -> str:
    digest = hashlib.md5(namespace.encode(), usedforsecurity=False).hexdigest()[:16]
    return f"records_ivf_{digest}_"


@dataclass(frozen=True, kw_only=True)
class Found:
    """An index of a namespace, as the catalog lists it."""

    name: str
    dim: int
    lists: int
    valid: bool
    rows: int
    """The planner's row count of the index (``reltuples``: at its build or last ANALYZE)."""


def found_indexes(conn: psycopg.Connection[Any], schema: str, namespace: str) -> list[Found]:
    """The namespace's indexes (an invalid one is a build that was stopped or failed)."""
    rows = conn.execute(
        "SELECT c.relname, i.indisvalid, c.reltuples FROM pg_index i"
        " JOIN pg_class c ON c.oid = i.indexrelid"
        " WHERE i.indrelid = to_regclass(%s) AND starts_with(c.relname, %s)",
        (f"{schema}.records", _prefix(namespace)),
    ).fetchall()
    out = []
    for name, valid, reltuples in rows:
        match = _NAME.fullmatch(name)
        if match:
            dim, lists = int(match[1]), int(match[2])
            out.append(
                Found(name=name, dim=dim, lists=lists, valid=bool(valid), rows=int(reltuples))
            )
    return out


def create_sql(schema: str, namespace: str, dim: int, lists: int) -> sql.Composed:
    """``CREATE INDEX CONCURRENTLY`` of the namespace's index; the namespace is a quoted
    literal (an index predicate takes no parameter)."""
    from psycopg import sql

    dim = int(dim)
    return sql.SQL(
        "CREATE INDEX CONCURRENTLY {name} ON {schema}.records USING ivfflat"
        " ((embedding::halfvec({dim})) halfvec_cosine_ops) WITH (lists = {lists})"
        " WHERE namespace = {namespace} AND dim = {dim}"
    ).format(
        name=sql.Identifier(index_name(namespace, dim, lists)),
        schema=sql.SQL(schema),
        dim=sql.SQL(str(dim)),
        lists=sql.SQL(str(int(lists))),
        namespace=sql.Literal(namespace),
    )


def build_memory_mb(lists: int, dim: int) -> int:
    """``maintenance_work_mem`` for a build: k-means holds 50 sample rows a list beside the
    centres, and pgvector refuses to start with less than about three times those samples
    as float32 (more than the server's default for 1,000 lists of 384); four times, plus
    the default."""
    return 64 + math.ceil(4 * 50 * lists * dim * 4 / 2**20)


def build(conn: psycopg.Connection[Any], schema: str, namespace: str, dim: int, lists: int) -> str:
    """Build the namespace's index of ``lists`` lists on ``conn`` (autocommit), with the
    ``maintenance_work_mem`` its lists need; its name."""
    memory = build_memory_mb(lists, dim)
    conn.execute("SELECT set_config('maintenance_work_mem', %s, false)", (f"{memory}MB",))
    try:
        conn.execute(create_sql(schema, namespace, dim, lists))
    finally:
        conn.execute("RESET maintenance_work_mem")
    return index_name(namespace, dim, lists)


def search_with(conn: psycopg.Connection[Any], lists: int) -> None:
    """Set, for the transaction, what a search through an index of ``lists`` lists runs
    with: ``probes_for(lists)`` probes and an iterative scan."""
    conn.execute(
        "SELECT set_config('ivfflat.probes', %s, true),"
        " set_config('ivfflat.iterative_scan', 'relaxed_order', true)",
        (str(probes_for(lists)),),
    )


class Builds:
    """One background thread per store that runs ``work(namespace, dim, stopped)`` for
    each namespace asked for, one at a time; a namespace asked for again while queued or
    running is asked once. ``close`` stops it: ``cancel`` (set by the work, e.g. the
    running statement's cancel) is called and the thread joined; so is every builder's at
    interpreter exit."""

    running: ClassVar[set[Builds]] = set()
    _guard = threading.Lock()

    def __init__(self, work: Callable[[str, int, threading.Event], None]) -> None:
        self._work = work
        self._lock = threading.Lock()
        self._queue: dict[str, int] = {}
        self._current: str | None = None
        self._active = False
        """Whether a thread runs (or is about to): set by ``want``, cleared by the thread."""
        self._thread: threading.Thread | None = None
        self.stopped = threading.Event()
        self.cancel: Callable[[], None] | None = None
        self.failures: dict[str, tuple[BaseException, float]] = {}
        """The last error of each namespace's build and its monotonic time, kept until it
        is built again."""

    def want(self, namespace: str, dim: int, *, retry: bool = False) -> None:
        """Queue the namespace, unless it is queued or running, or its last build failed
        less than ``RETRY_S`` ago (``retry``: even then)."""
        with self._lock:
            if self.stopped.is_set() or namespace == self._current or namespace in self._queue:
                return
            failed = self.failures.get(namespace)
            if failed is not None and not retry and time.monotonic() - failed[1] < RETRY_S:
                return
            self._queue[namespace] = dim
            self.failures.pop(namespace, None)
            if not self._active:  # the thread decides to end under this lock too
                self._active = True
                self._thread = threading.Thread(
                    target=self._run, name="memstack-pg-index", daemon=True
                )
                with Builds._guard:
                    Builds.running.add(self)
                self._thread.start()

    def busy(self, namespace: str) -> bool:
        with self._lock:
            return namespace == self._current or namespace in self._queue

    def close(self) -> None:
        self.stopped.set()
        cancel = self.cancel
        if cancel is not None:
            cancel()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()
        with Builds._guard:
            Builds.running.discard(self)

    def _run(self) -> None:
        while True:
            with self._lock:
                if not self._queue or self.stopped.is_set():
                    self._current = None
                    self._active = False
                    with Builds._guard:
                        Builds.running.discard(self)
                    return
                namespace, dim = next(iter(self._queue.items()))
                del self._queue[namespace]
                self._current = namespace
            try:
                self._work(namespace, dim, self.stopped)
            except Exception as exc:  # kept for ready() to raise; the thread goes on
                self.failures[namespace] = (exc, time.monotonic())

    @classmethod
    def close_all(cls) -> None:
        with cls._guard:
            builds = list(cls.running)
        for build in builds:
            build.close()


atexit.register(Builds.close_all)
