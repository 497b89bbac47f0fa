"""What only the PostgreSQL backend promises: schemas, pools, setup under concurrency,
migrations of an existing database, and which search path (HNSW, exact, capped keywords) a
namespace gets as its size changes."""

from __future__ import annotations

import socket
import sys
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np
import numpy.typing as npt
import psycopg
import pytest
from psycopg_pool import ConnectionPool

import memstack.storage.postgres as pg
from memstack.clock import ManualClock
from memstack.errors import ConfigError, StoreUnavailable
from memstack.storage import Filter, PostgresRecordStore, Record
from memstack.storage._postgres_schema import MIGRATIONS
from tests.storage.records import ids, rec


def test_concurrent_setup_applies_each_migration_once(postgres_url: str, pg_schema: str) -> None:
    stores = [PostgresRecordStore(postgres_url, schema=pg_schema) for _ in range(4)]
    errors: list[BaseException] = []

    def setup(store: PostgresRecordStore) -> None:
        try:
            store.setup()
        except BaseException as exc:  # reported on the main thread
            errors.append(exc)

    threads = [threading.Thread(target=setup, args=(s,)) for s in stores]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for store in stores:
        store.close()
    assert errors == []
    with psycopg.connect(postgres_url) as conn:
        rows = conn.execute(f'SELECT version FROM "{pg_schema}".schema_migrations').fetchall()
    assert rows == [(v,) for v in range(1, len(MIGRATIONS) + 1)]


def test_a_caller_owned_pool_stays_open(postgres_url: str, pg_schema: str) -> None:
    with ConnectionPool(postgres_url, min_size=1, max_size=2, open=True) as pool:
        store = PostgresRecordStore(pool, schema=pg_schema, clock=ManualClock())
        store.setup()
        store.upsert([rec("a", embedding=[1, 2])])
        store.close()
        assert not pool.closed
        with pool.connection() as conn:
            count = conn.execute(f'SELECT count(*) FROM "{pg_schema}".records').fetchone()
        assert count == (1,)
        with pytest.raises(StoreUnavailable, match="closed"):
            store.count("ns")


def test_two_schemas_in_one_database_are_separate(postgres_url: str, pg_schema: str) -> None:
    other = f"{pg_schema}_b"
    first = PostgresRecordStore(postgres_url, schema=pg_schema)
    second = PostgresRecordStore(postgres_url, schema=other)
    try:
        first.setup()
        second.setup()
        first.upsert([rec("a")])
        assert second.count("ns") == 0
        assert ids(first.list("ns")) == ["a"]
    finally:
        first.close()
        second.close()
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA "{other}" CASCADE')


@pytest.mark.parametrize("schema", ["", "Upper", "1st", "a-b", 'x"; DROP', "a" * 64])
def test_schema_must_be_a_plain_identifier(postgres_url: str, schema: str) -> None:
    with pytest.raises(ConfigError, match="schema"):
        PostgresRecordStore(postgres_url, schema=schema)


def test_use_before_setup_says_to_call_setup(postgres_url: str, pg_schema: str) -> None:
    store = PostgresRecordStore(postgres_url, schema=pg_schema)
    try:
        with pytest.raises(ConfigError, match="setup"):
            store.count("ns")
    finally:
        store.close()


def test_a_newer_schema_is_refused(postgres_url: str, pg_schema: str) -> None:
    store = PostgresRecordStore(postgres_url, schema=pg_schema)
    try:
        store.setup()
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            conn.execute(f'INSERT INTO "{pg_schema}".schema_migrations VALUES (99, 0)')
        with pytest.raises(ConfigError, match="upgrade memstack"):
            store.setup()
    finally:
        store.close()


def test_an_unreachable_server_is_store_unavailable() -> None:
    with socket.socket() as sock:  # a loopback port that nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    store = PostgresRecordStore(f"postgresql://postgres@127.0.0.1:{port}/postgres", timeout=0.5)
    try:
        with pytest.raises(StoreUnavailable):
            store.count("ns")
    finally:
        store.close()


def test_without_psycopg_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "psycopg_pool", None)
    with pytest.raises(ConfigError, match=r'pip install "memstack\[postgres\]"'):
        PostgresRecordStore("postgresql://nowhere/db")


# -- search paths: HNSW for a big namespace, exact for a small one, capped keywords --------


def _unit_rows(n: int, dim: int, seed: int) -> npt.NDArray[np.float32]:
    rows = np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)
    unit: npt.NDArray[np.float32] = rows / np.linalg.norm(rows, axis=1, keepdims=True)
    return unit


@pytest.fixture
def plans(postgres_url: str) -> Iterator[tuple[ConnectionPool[Any], list[str]]]:
    """A caller-owned pool whose sessions report every statement's plan (auto_explain)."""
    seen: list[str] = []

    def configure(conn: psycopg.Connection[Any]) -> None:
        conn.execute("LOAD 'auto_explain'")
        conn.execute("SET auto_explain.log_min_duration = 0")
        conn.execute("SET auto_explain.log_level = 'notice'")
        conn.commit()
        conn.add_notice_handler(lambda diag: seen.append(diag.message_primary or ""))

    with ConnectionPool(postgres_url, min_size=1, max_size=2, configure=configure) as pool:
        yield pool, seen


def _store(pool_or_url: Any, schema: str, **thresholds: int) -> PostgresRecordStore:
    store = PostgresRecordStore(pool_or_url, schema=schema, clock=ManualClock(), **thresholds)
    store.setup()
    return store


def _analyze(url: str, schema: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'ANALYZE "{schema}".records')


def test_a_big_namespace_is_searched_through_hnsw_a_small_one_exactly(
    postgres_url: str, pg_schema: str, plans: tuple[ConnectionPool[Any], list[str]]
) -> None:
    pool, seen = plans
    store = _store(pool, pg_schema, exact_limit=100, ef_search=1)  # ef_search becomes k
    big, small = _unit_rows(2000, 16, seed=1), _unit_rows(50, 16, seed=2)
    store.upsert([rec(f"b{i}", "big", embedding=v) for i, v in enumerate(big)])
    store.upsert([rec(f"s{i}", "small", embedding=v) for i, v in enumerate(small)])
    _analyze(postgres_url, pg_schema)
    query = _unit_rows(1, 16, seed=3)[0]

    seen.clear()
    hits = store.vector_ids("big", query, k=20)
    assert any("Index Scan using records_hnsw_16" in plan for plan in seen)
    assert len(hits) == 20
    exact = np.argsort(-(big @ query), kind="stable")[:20]
    assert len({f"b{i}" for i in exact} & {i for i, _ in hits}) >= 15  # approximate
    assert [score for _, score in hits] == pytest.approx(
        [float(big[int(i[1:])] @ query) for i, _ in hits], abs=1e-6
    )

    seen.clear()
    hits = store.vector_ids("small", query, k=10)
    assert [i for i, _ in hits] == [f"s{i}" for i in np.argsort(-(small @ query))[:10]]
    assert seen and not any("hnsw" in plan for plan in seen)
    store.close()


def test_ef_search_grows_with_the_graph_never_below_k_nor_past_the_ceiling() -> None:
    assert [pg.ef_search_for(rows, 10) for rows in (0, 5_000, 10_000, 10_001, 20_000)] == [
        200,
        200,
        300,
        400,
        400,
    ]
    assert pg.ef_search_for(20_001, 10) == pg.ef_search_for(50_000, 10) == pg.EF_CEILING
    assert pg.ef_search_for(100_000, 10) == 600  # with two scans (``AWAY_ROWS``)
    efs = [pg.ef_search_for(rows, 10) for rows in range(0, 200_000, 500)]
    assert efs == sorted(efs)  # a bigger graph never gets a shorter list
    assert pg.ef_search_for(10_000, 450) == 450  # never below k
    assert pg.ef_search_for(1_000_000, 5_000) == 1000  # never past pgvector's maximum
    assert pg.ef_search_for(10_000, 10, ceiling=100) == 100  # ``ef_search`` caps every size
    assert pg.ef_search_for(1_000_000, 10, ceiling=100) == 100
    assert pg.ef_search_for(10_000, 150, ceiling=100) == 150


@pytest.mark.parametrize(("away_limit", "scans"), [(1_999, 2), (2_000, 1)])
def test_a_graph_past_away_limit_is_scanned_twice_the_second_time_away_from_the_first(
    postgres_url: str,
    pg_schema: str,
    plans: tuple[ConnectionPool[Any], list[str]],
    away_limit: int,
    scans: int,
) -> None:
    pool, seen = plans
    # ef_search becomes k; the graph has 2,000 rows
    store = _store(pool, pg_schema, exact_limit=100, ef_search=1, away_limit=away_limit)
    rows = _unit_rows(2000, 16, seed=9)
    store.upsert([rec(f"r{i}", embedding=v) for i, v in enumerate(rows)])
    _analyze(postgres_url, pg_schema)
    query = _unit_rows(1, 16, seed=10)[0]
    seen.clear()
    hits = store.vector_ids("ns", query, k=10)
    plan = next(p for p in seen if "Index Scan using records_hnsw_16" in p)
    assert plan.count("Index Scan using records_hnsw_16") == scans
    # the second scan: ordered by the away vector
    assert ("<=> (InitPlan" in plan) == (scans == 2)
    assert not any("<=> v.q" in p for p in seen)  # no fallback to the exact scan
    assert [i for i, _ in hits] == [f"r{i}" for i in np.argsort(-(rows @ query))[:10]]
    assert pg.AWAY_LIMIT == pg.EF_BY_ROWS[-1][0]  # two scans only past the sizes measured
    store.close()


def test_a_mid_size_namespace_is_searched_through_hnsw_with_its_sizes_ef(
    postgres_url: str, pg_schema: str, plans: tuple[ConnectionPool[Any], list[str]]
) -> None:
    pool, seen = plans
    store = PostgresRecordStore(pool, schema=pg_schema, clock=ManualClock())  # defaults
    store.setup()
    rows = _unit_rows(MID_SIZE, 8, seed=6)
    for lo in range(0, MID_SIZE, 2_000):
        store.upsert([rec(f"r{i}", embedding=rows[i]) for i in range(lo, lo + 2_000)])
    _analyze(postgres_url, pg_schema)
    query = _unit_rows(1, 8, seed=7)[0]
    seen.clear()
    hits = store.vector_ids("ns", query, k=50)
    assert len(hits) == 50
    assert any("Index Scan using records_hnsw_8" in plan for plan in seen)
    ef = pg.ef_search_for(MID_SIZE, 50)
    settings = [p for p in seen if "set_config('hnsw.ef_search'" in p]
    assert ef < 1000 and len(settings) == 1 and f"$1 = '{ef}'" in settings[0]
    exact = {f"r{i}" for i in np.argsort(-(rows @ query))[:10]}
    assert len(exact & {i for i, _ in hits[:10]}) >= 9
    store.close()


def test_a_namespace_sharing_its_graph_gets_the_graphs_ef(
    postgres_url: str, pg_schema: str, plans: tuple[ConnectionPool[Any], list[str]]
) -> None:
    pool, seen = plans
    store = _store(pool, pg_schema, exact_limit=100)
    rows = _unit_rows(5_301, 8, seed=8)
    store.upsert([rec(f"a{i}", "a", embedding=v) for i, v in enumerate(rows[:300])])
    store.upsert([rec(f"b{i}", "b", embedding=v) for i, v in enumerate(rows[300:])])
    _analyze(postgres_url, pg_schema)  # the index's reltuples: 5,301
    seen.clear()
    assert len(store.vector_ids("a", rows[0], k=10)) == 10
    settings = [p for p in seen if "set_config('hnsw.ef_search'" in p]
    ef = pg.ef_search_for(5_301, 10)
    assert ef > pg.ef_search_for(300, 10) and f"$1 = '{ef}'" in settings[0]
    assert any("reltuples" in p for p in seen)
    seen.clear()
    assert len(store.vector_ids("a", rows[1], k=10)) == 10
    assert not any("reltuples" in p for p in seen)  # the graph's size is reused, not re-read
    assert any(f"$1 = '{ef}'" in p for p in seen)
    store.close()


MID_SIZE = 10_000
"""Past the default ``exact_limit`` (5,000), which was 10,000 before the graph's ef
followed its size."""


def test_a_filtered_search_through_hnsw_still_returns_k_rows(
    postgres_url: str, pg_schema: str, plans: tuple[ConnectionPool[Any], list[str]]
) -> None:
    pool, seen = plans
    store = _store(pool, pg_schema, exact_limit=100, ef_search=1)
    rows = _unit_rows(2000, 16, seed=4)
    kinds = ["wanted" if i % 2 == 0 else "other" for i in range(len(rows))]
    store.upsert([rec(f"r{i}", "big", embedding=v, kind=kinds[i]) for i, v in enumerate(rows)])
    _analyze(postgres_url, pg_schema)
    query = _unit_rows(1, 16, seed=5)[0]
    seen.clear()
    # ef_search becomes k = 40: a plain HNSW scan finds 40 candidates, about 20 of them
    # wanted; the iterative scan goes on until 40 wanted ones are found.
    hits = store.vector_ids("big", query, k=40, filter=Filter(kinds=("wanted",)))
    assert any("Index Scan using records_hnsw_16" in plan for plan in seen)
    assert not any("<=> v.q" in plan for plan in seen)  # no fallback to the exact scan
    assert len(hits) == 40
    assert all(kinds[int(i[1:])] == "wanted" for i, _ in hits)
    store.close()


def test_an_exact_search_keeps_the_first_ids_of_a_tie_at_the_cut(
    postgres_url: str, pg_schema: str
) -> None:
    store = _store(postgres_url, pg_schema)
    store.upsert([rec(i, embedding=[1, 0]) for i in ["e", "B", "d", "a", "c"]])
    store.upsert([rec("far", embedding=[0, 1])])
    assert [i for i, _ in store.vector_ids("ns", [1, 0], k=3)] == ["B", "a", "c"]  # bytewise
    store.close()


@pytest.mark.parametrize(
    "values",
    [
        [0.1, -0.0, 1e-38, 1.5e18, -1.17549435e-38, 0.333333343],
        np.random.default_rng(6).standard_normal(1536).astype(np.float32),
    ],
    ids=["edge values", "1536 dimensions"],
)
def test_vectors_round_trip_bit_for_bit(postgres_url: str, pg_schema: str, values: Any) -> None:
    store = _store(postgres_url, pg_schema)
    vector = np.asarray(values, dtype=np.float32)
    store.upsert([rec("a", embedding=vector)])
    (back,) = store.get("ns", ["a"])
    assert back.embedding is not None
    assert back.embedding.dtype == np.float32
    assert back.embedding.tobytes() == vector.tobytes()
    store.close()


def test_each_dimension_in_use_gets_its_own_hnsw_index(postgres_url: str, pg_schema: str) -> None:
    store = _store(postgres_url, pg_schema)
    store.upsert([rec("a", "one", embedding=[1, 0, 0]), rec("b", "two", embedding=[0, 1])])
    with psycopg.connect(postgres_url) as conn:
        names = conn.execute(
            "SELECT indexname FROM pg_indexes WHERE schemaname = %s AND indexname LIKE %s",
            (pg_schema, "records_hnsw_%"),
        ).fetchall()
    assert sorted(n for (n,) in names) == ["records_hnsw_2", "records_hnsw_3", "records_hnsw_384"]
    assert [i for i, _ in store.vector_ids("one", [1, 0, 0], k=1)] == ["a"]
    store.close()


_WORDS = "apple banana cherry damson elder fig grape hazel".split()


def _corpus(n: int) -> list[Record]:
    """Texts of 1-4 fruit words each, some repeated; no word in more than 250 rows."""
    rng = np.random.default_rng(7)
    return [
        rec(f"t{i:04d}", "kw", " ".join(rng.choice(_WORDS, size=int(rng.integers(1, 5)))))
        for i in range(n)
    ]


@pytest.mark.parametrize("query", ["apple", "banana cherry", "fig grape hazel elder", "kiwi apple"])
def test_capped_keyword_ranking_equals_the_full_one_while_no_word_is_common(
    postgres_url: str, pg_schema: str, query: str
) -> None:
    full = _store(postgres_url, pg_schema)
    capped = _store(postgres_url, pg_schema, keyword_exact_limit=0)
    full.upsert(_corpus(200))
    expected = full.text_ids("kw", query, k=20)
    assert len(expected) == 20
    assert capped.text_ids("kw", query, k=20) == expected
    full.close()
    capped.close()


def test_a_word_in_most_rows_does_not_hide_a_rare_one(postgres_url: str, pg_schema: str) -> None:
    store = _store(postgres_url, pg_schema, keyword_exact_limit=100)
    store.upsert(
        [rec(f"c{i:04d}", "kw", f"a common note number {i}") for i in range(3000)]
        + [rec(f"r{i}", "kw", "a rare common note") for i in range(5)]
    )
    hits = store.text_ids("kw", "rare common", k=5)
    assert sorted(i for i, _ in hits) == [f"r{i}" for i in range(5)]
    assert len(store.text_ids("kw", "common", k=40)) == 40
    store.close()


def test_ready_after_a_bulk_load_refreshes_the_planner_statistics(
    postgres_url: str, pg_schema: str
) -> None:
    store = _store(postgres_url, pg_schema)
    store.upsert([rec(f"c{i:04d}", "kw", f"note number {i}") for i in range(2000)])

    def planned_rows() -> float:
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            row = conn.execute(
                "SELECT reltuples FROM pg_class WHERE oid = to_regclass(%s)",
                (f"{pg_schema}.records",),
            ).fetchone()
        assert row is not None
        return float(row[0])

    assert planned_rows() < 1000  # never analyzed (-1), or before the load
    assert store.ready("kw") is True
    assert planned_rows() == 2000
    store.close()


# -- migrations 7 and 8, and the namespace size that picks the path ---------------------


def _older_store(
    url: str, schema: str, monkeypatch: pytest.MonkeyPatch, *, migrations: int
) -> PostgresRecordStore:
    """A store set up as an older memstack did: its first ``migrations`` only
    (``monkeypatch.undo()`` brings back the current ones)."""
    monkeypatch.setattr(pg, "MIGRATIONS", MIGRATIONS[:migrations])
    old = PostgresRecordStore(url, schema=schema)
    old.setup()
    return old


def _hnsw_options(url: str, schema: str) -> dict[str, list[str]]:
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT relname, reloptions FROM pg_class WHERE relnamespace = %s::regnamespace"
            " AND relname LIKE 'records_hnsw_%%'",
            (f'"{schema}"',),
        ).fetchall()
    return {str(name): sorted(options) for name, options in rows}


def test_migration_7_rebuilds_the_hnsw_indexes_of_an_existing_database(
    postgres_url: str, pg_schema: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = _older_store(postgres_url, pg_schema, monkeypatch, migrations=6)
    with psycopg.connect(postgres_url, autocommit=True) as conn:  # as the older one made it
        conn.execute(
            f'CREATE INDEX records_hnsw_3 ON "{pg_schema}".records USING hnsw'
            " ((embedding::vector(3)) vector_cosine_ops) WITH (m = 16, ef_construction = 64)"
            " WHERE dim = 3"
        )
    old.upsert([rec("a", "one", embedding=[1, 0, 0]), rec("b", "big", embedding=[0] * 383 + [1])])
    old.close()
    assert _hnsw_options(postgres_url, pg_schema) == {
        "records_hnsw_3": ["ef_construction=64", "m=16"],
        "records_hnsw_384": ["ef_construction=64", "m=16"],
    }

    monkeypatch.undo()
    store = PostgresRecordStore(postgres_url, schema=pg_schema)
    store.setup()
    assert _hnsw_options(postgres_url, pg_schema) == {
        "records_hnsw_3": ["ef_construction=512", "m=16"],
        "records_hnsw_384": ["ef_construction=512", "m=16"],
    }
    assert [i for i, _ in store.vector_ids("one", [1, 0, 0], k=1)] == ["a"]
    store.close()


def _keyword_index(url: str, schema: str) -> tuple[list[str] | None, int]:
    """The options of the keyword (GIN) index, and how many pending-list pages it had
    (merged by the call)."""
    index = f'"{schema}".records_tsv'
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT reloptions, gin_clean_pending_list(oid) FROM pg_class"
            " WHERE oid = to_regclass(%s)",
            (index,),
        ).fetchone()
    assert row is not None
    return row[0], int(row[1])


def test_migration_8_leaves_keyword_searches_no_pending_list_to_read(
    postgres_url: str, pg_schema: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = _older_store(postgres_url, pg_schema, monkeypatch, migrations=7)
    old.upsert([rec(f"o{i}", "kw", f"an older note {i}") for i in range(50)])
    old.close()

    monkeypatch.undo()
    store = PostgresRecordStore(postgres_url, schema=pg_schema)
    store.setup()  # migration 8 merges the older writes' pending list
    assert _keyword_index(postgres_url, pg_schema) == (["fastupdate=off"], 0)
    store.upsert([rec(f"n{i}", "kw", f"a newer note {i}") for i in range(50)])
    assert _keyword_index(postgres_url, pg_schema) == (["fastupdate=off"], 0)
    assert [i for i, _ in store.text_ids("kw", "older 7", k=1)] == ["o7"]
    store.close()


def _searching_store(pool: ConnectionPool[Any], schema: str) -> PostgresRecordStore:
    """HNSW past 100 rows, ef_search k (at pgvector's 1000, a 2000-row table is scanned)."""
    store = PostgresRecordStore(
        pool, schema=schema, clock=ManualClock(), exact_limit=100, ef_search=1
    )
    store.setup()
    return store


def _searched_through_hnsw(store: PostgresRecordStore, seen: list[str], query: Any) -> bool:
    seen.clear()
    assert len(store.vector_ids("ns", query, k=5)) == 5
    return any("Index Scan using records_hnsw_8" in plan for plan in seen)


def test_the_stores_own_writes_move_a_namespace_between_exact_and_hnsw(
    postgres_url: str, pg_schema: str, plans: tuple[ConnectionPool[Any], list[str]]
) -> None:
    pool, seen = plans
    store = _searching_store(pool, pg_schema)
    rows, query = _unit_rows(2000, 8, seed=1), _unit_rows(1, 8, seed=2)[0]
    store.upsert([rec(f"r{i}", embedding=v) for i, v in enumerate(rows[:40])])
    assert not _searched_through_hnsw(store, seen, query)  # 40 rows: counted, exact

    store.upsert([rec(f"r{i}", embedding=v) for i, v in enumerate(rows[40:], start=40)])
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f'ANALYZE "{pg_schema}".records')
    assert _searched_through_hnsw(store, seen, query)  # grown past the limit: counted again

    store.delete("ns", [f"r{i}" for i in range(10, 2000)])
    assert not _searched_through_hnsw(store, seen, query)  # shrunk: counted again
    store.close()


def test_another_writers_rows_count_once_the_size_is_old(
    postgres_url: str,
    pg_schema: str,
    plans: tuple[ConnectionPool[Any], list[str]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pool, seen = plans
    store = _searching_store(pool, pg_schema)
    other = PostgresRecordStore(postgres_url, schema=pg_schema, clock=ManualClock())
    rows, query = _unit_rows(2000, 8, seed=3), _unit_rows(1, 8, seed=4)[0]
    store.upsert([rec(f"r{i}", embedding=v) for i, v in enumerate(rows[:10])])
    assert not _searched_through_hnsw(store, seen, query)
    other.upsert([rec(f"r{i}", embedding=v) for i, v in enumerate(rows)])
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f'ANALYZE "{pg_schema}".records')
    assert not _searched_through_hnsw(store, seen, query)  # its size is still fresh
    monkeypatch.setattr(pg, "SIZE_TTL_S", 0.0)
    assert _searched_through_hnsw(store, seen, query)
    other.close()
    store.close()


def test_the_sizes_kept_are_bounded(
    postgres_url: str, pg_schema: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pg, "_SIZES_KEPT", 2)
    store = _store(postgres_url, pg_schema)
    backend = store.backend
    assert isinstance(backend, pg.PostgresBackend)
    for namespace in ("a", "b", "c", "d", "e"):
        store.upsert([rec("x", namespace, embedding=[1, 0])])
        assert [i for i, _ in store.vector_ids(namespace, [1, 0], k=1)] == ["x"]
        assert len(backend._sizes) <= 2
    store.close()
