"""The second HNSW scan of a PostgreSQL vector search (``_postgres_query.hnsw_away_vector_sql``):
it brings the rows nearest the query with the first scan's mean direction projected out,
scored by their distance to the query, and the union's nearest are returned.

The queries it rescues (a query between two topics of ``bench recall``'s 100k rows, whose
greedy descent lands in the wrong one) need a graph that large to strand a query, so
these tests call the statement with a first scan of one row: whatever the second scan
adds is then visible in the result, and which rows it adds says which vector it followed.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import psycopg
from pgvector.psycopg import register_vector

from memstack.clock import ManualClock
from memstack.storage import Filter, PostgresRecordStore
from memstack.storage import _postgres_query as q
from tests.storage.records import rec

Rows = npt.NDArray[np.float32]


def _unit(rows: Any) -> Rows:
    array = np.asarray(rows, dtype=np.float32)
    unit: Rows = array / np.linalg.norm(array, axis=-1, keepdims=True)
    return unit


def _two_topics(n: int) -> Rows:
    """``n`` rows near the x axis, then ``n`` near the y axis, in 8 dimensions."""
    rng = np.random.default_rng(3)
    x, y = np.eye(8, dtype=np.float32)[0], np.eye(8, dtype=np.float32)[1]
    noise = 0.3 * rng.standard_normal((2 * n, 8)).astype(np.float32)
    return _unit(np.concatenate([np.tile(x, (n, 1)), np.tile(y, (n, 1))]) + noise)


QUERY = [0.8, 0.5, 0.3, 0, 0, 0, 0, 0]
"""Nearest the x rows; the away vector then points to the y rows."""


def _loaded(url: str, schema: str) -> Rows:
    """``_two_topics(300)`` stored in namespace ``ns``."""
    rows = _two_topics(300)
    store = PostgresRecordStore(url, schema=schema, clock=ManualClock())
    store.setup()
    store.upsert([rec(f"r{i}", embedding=v) for i, v in enumerate(rows)])
    store.close()
    return rows


def _search(url: str, schema: str, query: Rows, first: int, away: int, k: int) -> list[str]:
    """``hnsw_away_vector_sql`` run as the store runs it, ef_search past the table's rows."""
    clause, params = q.where("ns", Filter(), 0.0)
    sql = q.hnsw_away_vector_sql(f'"{schema}"', clause, 8)
    with psycopg.connect(url) as conn:
        register_vector(conn)
        conn.execute("SET hnsw.ef_search = 1000")
        conn.execute("SET hnsw.iterative_scan = relaxed_order")
        rows = conn.execute(
            sql, [query, *params, first, query, query, *params, away, k], prepare=False
        ).fetchall()
    return [str(row[0]) for row in rows]


def test_the_second_scan_follows_the_query_with_the_first_rows_direction_taken_out(
    postgres_url: str, pg_schema: str
) -> None:
    rows = _loaded(postgres_url, pg_schema)
    query = _unit(QUERY)
    nearest = np.argsort(-(rows @ query), kind="stable")
    first = int(nearest[0])  # an x row
    unit_first = rows[first] / np.linalg.norm(rows[first])
    away = _unit(query - float(query @ unit_first) * unit_first)
    brought = np.argsort(-(rows @ away), kind="stable")[:40]
    expected = sorted({first, *brought.tolist()}, key=lambda i: -float(rows[i] @ query))[:20]
    assert set(expected) != set(nearest[:20].tolist())  # the away rows are not the query's

    found = _search(postgres_url, pg_schema, query, first=1, away=40, k=20)

    assert found == [f"r{i}" for i in expected]


def test_without_rows_the_second_scan_follows_the_query(postgres_url: str, pg_schema: str) -> None:
    rows = _loaded(postgres_url, pg_schema)
    query = _unit(QUERY)

    found = _search(postgres_url, pg_schema, query, first=0, away=20, k=20)

    assert found == [f"r{i}" for i in np.argsort(-(rows @ query), kind="stable")[:20]]


def test_a_search_that_finds_nothing_through_hnsw_returns_nothing(
    postgres_url: str, pg_schema: str
) -> None:
    store = PostgresRecordStore(
        postgres_url, schema=pg_schema, clock=ManualClock(), exact_limit=100, away_limit=100
    )
    store.setup()
    store.upsert([rec(f"r{i}", embedding=v) for i, v in enumerate(_two_topics(300))])
    query = _unit(QUERY)
    # Past exact_limit, so HNSW; no row of the kind: the first scan finds nothing.
    assert store.vector_ids("ns", query, k=10, filter=Filter(kinds=("none",))) == []
    store.close()
