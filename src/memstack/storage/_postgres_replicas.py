"""Reads on PostgreSQL hot standbys that never miss a write memstack made before them.

Every write transaction of the backend bumps, for each namespace it changes, a counter in
``write_marks`` (migration 10): a row per namespace, in the same transaction as the change,
so a standby that holds a namespace's counter at some value holds every change of the
namespace committed with it, and all before it (a standby replays the primary's
transactions in commit order, each whole).

A read of namespaces (one, or those under a prefix) first reads their counters on the
primary (``Marks``: a primary-key lookup on a small table, no search), then asks a
standby, in one statement, whether its copies of those counters are as high and how far
its replay trails (``fresh_sql``). Only then does the standby answer the read, on the same
connection; later statements see at least what the check saw (replay only moves
forward). Otherwise the next standby is asked, and the primary answers when none
qualifies. So a read sees every memstack write to its namespaces committed before it
began, from whichever process or host: read-your-writes for every caller, and no
caller-side state (no token, no process-local memo) that another process would lack.

The price and the limits:
- Every read still makes a small query on the primary, so reads need the primary up: when
  it is down a read is a ``StoreUnavailable`` (503), as without standbys. The searches,
  the scans and the rows' fetch move to the standbys.
- Writes made without memstack (SQL of one's own) bump no counter: a read sees them once
  the standby has replayed them, after at most the lag bound.
- ``touch`` (a recall's ``last_accessed_at``) bumps no counter: a standby may show the
  previous access time for a moment; eviction runs on the primary, which holds the new one.
- The lag bound: a standby whose replay trails what it has received by more than
  ``max_lag_s`` (the age of the last transaction it replayed, while more WAL waits) is
  passed over: it would serve other writers' changes late. One that is down, or whose
  connection breaks mid-read, is left out for ``SKIP_S`` (waiting for its pool would
  cost every read ``WAIT_S``); one whose read fails otherwise is passed over that once.
  Either way the read goes on to the next standby, then the primary. A standby cut off
  from its primary receives nothing, so it cannot tell how far behind it is; the counters
  still keep its reads from missing any memstack write.
- A server that is not in recovery (a promoted standby, the primary itself) is skipped.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import psycopg
    from psycopg_pool import ConnectionPool

__all__ = [
    "SKIP_S",
    "WAIT_S",
    "Fence",
    "Marks",
    "Replica",
    "Replicas",
    "bump",
    "fresh",
    "marks",
]

WAIT_S = 0.25
"""How long a read waits for a standby's connection before it asks the next one (or the
primary): a standby that is down is refused at once, but its pool waits for a connection
that never comes."""
SKIP_S = 1.0
"""How long a standby that is down, or whose connection broke, is left out before it is
asked again (its pool reconnects in the background meanwhile)."""


@dataclass(frozen=True, kw_only=True)
class Fence:
    """The namespaces a read covers: ``names``, or every namespace under ``prefix``."""

    names: tuple[str, ...] = ()
    prefix: str | None = None


Marks = tuple[list[str], list[int]]
"""Namespaces and their write counters on the primary, in two parallel lists."""


def bump(conn: psycopg.Connection[Any], schema: str, namespaces: Sequence[str]) -> None:
    """In a write transaction: add one to the counter of each of ``namespaces`` (in one
    order, so two writers lock the rows alike)."""
    names = sorted(set(namespaces))
    if names:
        conn.execute(
            f"INSERT INTO {schema}.write_marks AS m (namespace, seq)"
            " SELECT n, 1 FROM unnest(%s::text[]) AS n ORDER BY n"
            " ON CONFLICT (namespace) DO UPDATE SET seq = m.seq + 1",
            (names,),
        )


def marks(conn: psycopg.Connection[Any], schema: str, fence: Fence) -> Marks:
    """The counters of ``fence``'s namespaces on ``conn`` (the primary)."""
    sql = f"SELECT namespace, seq FROM {schema}.write_marks WHERE "
    if fence.prefix is not None:
        rows = conn.execute(sql + "starts_with(namespace, %s)", (fence.prefix,)).fetchall()
    else:
        rows = conn.execute(sql + "namespace = ANY(%s::text[])", (list(fence.names),)).fetchall()
    return [str(r[0]) for r in rows], [int(r[1]) for r in rows]


def fresh(conn: psycopg.Connection[Any], schema: str, wanted: Marks, max_lag_s: float) -> bool:
    """Whether the standby of ``conn`` may answer: in recovery, replaying within
    ``max_lag_s`` of what it received, and holding every counter of ``wanted``."""
    row = conn.execute(
        "SELECT pg_is_in_recovery(),"
        " CASE WHEN pg_last_wal_receive_lsn() IS NOT DISTINCT FROM pg_last_wal_replay_lsn()"
        " THEN 0 ELSE coalesce(extract(epoch FROM clock_timestamp()"
        " - pg_last_xact_replay_timestamp())::float8, 'Infinity') END,"
        " (SELECT count(*) FROM unnest(%s::text[], %s::bigint[]) AS f(namespace, seq)"
        f" WHERE NOT EXISTS (SELECT 1 FROM {schema}.write_marks m"
        " WHERE m.namespace = f.namespace AND m.seq >= f.seq))",
        wanted,
    ).fetchone()
    return row is not None and bool(row[0]) and float(row[1]) <= max_lag_s and row[2] == 0


class Replica:
    """One standby: its pool, and until when it is left out."""

    def __init__(self, pool: ConnectionPool[Any]) -> None:
        self.pool = pool
        self.skipped_until = 0.0

    def skip(self) -> None:
        self.skipped_until = time.monotonic() + SKIP_S


class Replicas:
    """The standbys, asked in turn (each read starts at the next one)."""

    def __init__(self, pools: Sequence[ConnectionPool[Any]]) -> None:
        self.all = [Replica(pool) for pool in pools]
        self._turn = itertools.count()
        self._lock = threading.Lock()

    def in_turn(self) -> list[Replica]:
        """The standbys not left out, the next one first."""
        now = time.monotonic()
        with self._lock:
            start = next(self._turn) % len(self.all) if self.all else 0
        ordered = self.all[start:] + self.all[:start]
        return [replica for replica in ordered if replica.skipped_until <= now]
