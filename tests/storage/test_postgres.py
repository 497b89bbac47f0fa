"""What only the PostgreSQL backend promises: schemas, pools, setup under concurrency,
migrations of an existing database, which search path (a namespace's own IVFFlat index,
exact, capped keywords) a namespace gets as its size changes, and how its index is built
beside other writers and stores."""

from __future__ import annotations

import socket
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import numpy.typing as npt
import psycopg
import pytest
from psycopg_pool import ConnectionPool

import memstack.storage._postgres_ann as ann
import memstack.storage._postgres_replicas as replicas
import memstack.storage.postgres as pg
from memstack.clock import ManualClock
from memstack.embeddings import HashEmbedder
from memstack.errors import ConfigError, StoreUnavailable
from memstack.longterm import Candidate, Collection, LongTermMemory
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


# -- search paths: its own index for a big namespace, exact for a small one, capped keywords


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


def _store(pool_or_url: Any, schema: str, **thresholds: Any) -> PostgresRecordStore:
    store = PostgresRecordStore(pool_or_url, schema=schema, clock=ManualClock(), **thresholds)
    store.setup()
    return store


def _analyze(url: str, schema: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'ANALYZE "{schema}".records')


def _ready(store: PostgresRecordStore, namespace: str) -> None:
    deadline = time.monotonic() + 60
    while not store.ready(namespace):
        assert time.monotonic() < deadline, "no index within 60 s"
        time.sleep(0.05)


def _indexes(url: str, schema: str) -> dict[str, str]:
    """The vector indexes of the schema: name -> definition."""
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = %s"
            " AND (indexname LIKE 'records_ivf_%%' OR indexname LIKE 'records_hnsw_%%')",
            (schema,),
        ).fetchall()
    return {str(name): str(definition) for name, definition in rows}


def test_a_big_namespace_is_searched_through_its_own_index_a_small_one_exactly(
    postgres_url: str, pg_schema: str, plans: tuple[ConnectionPool[Any], list[str]]
) -> None:
    pool, seen = plans
    store = _store(pool, pg_schema, exact_limit=100)
    big, small = _unit_rows(2000, 16, seed=1), _unit_rows(50, 16, seed=2)
    store.upsert([rec(f"b{i}", "big", embedding=v) for i, v in enumerate(big)])
    store.upsert([rec(f"s{i}", "small", embedding=v) for i, v in enumerate(small)])
    assert store.ready("big") and store.ready("small")  # the bulk write built big's index
    (definition,) = _indexes(postgres_url, pg_schema).values()
    assert "ivfflat" in definition and "WITH (lists='45')" in definition
    assert "(namespace = 'big'::text) AND (dim = 16)" in definition
    query = _unit_rows(1, 16, seed=3)[0]

    seen.clear()
    hits = store.vector_ids("big", query, k=20)
    assert any("Index Scan using records_ivf_" in plan for plan in seen)
    settings = [p for p in seen if "set_config('ivfflat.probes'" in p]
    assert len(settings) == 1 and f"$1 = '{ann.probes_for(45)}'" in settings[0]
    assert len(hits) == 20
    exact = np.argsort(-(big @ query), kind="stable")[:20]
    assert len({f"b{i}" for i in exact} & {i for i, _ in hits}) >= 15  # approximate
    assert [score for _, score in hits] == pytest.approx(
        [float(big[int(i[1:])] @ query) for i, _ in hits], abs=1e-6
    )  # re-ranked at full precision

    seen.clear()
    hits = store.vector_ids("small", query, k=10)
    assert [i for i, _ in hits] == [f"s{i}" for i in np.argsort(-(small @ query))[:10]]
    assert seen and not any("records_ivf_" in plan for plan in seen)
    store.close()


def test_lists_and_probes_follow_the_rows_and_an_index_is_due_after_fourfold_change() -> None:
    assert [ann.lists_for(rows) for rows in (0, 1, 5_001, 100_000, 1_000_000)] == [
        1,
        1,
        71,
        316,
        1000,
    ]
    assert [ann.probes_for(lists) for lists in (1, 4, 71, 316, 1000)] == [1, 4, 17, 36, 64]
    assert not ann.due(316, 100_000)
    assert not ann.due(316, 390_000) and ann.due(316, 400_000)  # grown fourfold
    assert not ann.due(316, 26_000) and ann.due(316, 25_000)  # shrunk fourfold


def test_a_search_asks_for_the_index_and_ranks_exactly_until_it_is_built(
    postgres_url: str, pg_schema: str, plans: tuple[ConnectionPool[Any], list[str]]
) -> None:
    pool, seen = plans
    store = _store(pool, pg_schema, exact_limit=100)
    loader = _store(postgres_url, pg_schema)  # to which 1,500 rows are a small namespace
    rows = _unit_rows(1500, 8, seed=11)
    loader.upsert([rec(f"r{i}", embedding=v) for i, v in enumerate(rows)])
    loader.close()
    seen.clear()
    hits = store.vector_ids("ns", rows[0], k=10)  # no index yet: exact, and one is asked for
    assert [i for i, _ in hits] == [f"r{i}" for i in np.argsort(-(rows @ rows[0]))[:10]]
    assert any("<=> v.q" in plan for plan in seen)
    deadline = time.monotonic() + 60
    while not _indexes(postgres_url, pg_schema):
        assert time.monotonic() < deadline, "the search asked for no index"
        time.sleep(0.05)
    _ready(store, "ns")
    seen.clear()
    assert len(store.vector_ids("ns", rows[0], k=10)) == 10
    assert any("Index Scan using records_ivf_" in plan for plan in seen)
    store.close()


def test_each_namespace_gets_its_own_index_and_its_lookup_is_reused(
    postgres_url: str,
    pg_schema: str,
    plans: tuple[ConnectionPool[Any], list[str]],
) -> None:
    pool, seen = plans
    store = _store(pool, pg_schema, exact_limit=100)
    rows = _unit_rows(1_300, 8, seed=8)
    store.upsert([rec(f"a{i}", "a", embedding=v) for i, v in enumerate(rows[:300])])
    store.upsert([rec(f"b{i}", "b", embedding=v) for i, v in enumerate(rows[300:])])
    _ready(store, "a")
    _ready(store, "b")
    names = sorted(_indexes(postgres_url, pg_schema))
    assert len(names) == 2 and names != sorted({n.rsplit("_", 2)[0] for n in names})
    assert sorted(n.rsplit("_", 1)[1] for n in names) == ["17", "32"]  # their own lists
    seen.clear()
    assert len(store.vector_ids("a", rows[0], k=10)) == 10
    assert any("pg_index" in p for p in seen)
    seen.clear()
    assert len(store.vector_ids("a", rows[1], k=10)) == 10
    assert not any("pg_index" in p for p in seen)  # the index is reused, not looked up
    store.close()


def test_a_filtered_search_through_the_index_still_returns_k_rows(
    postgres_url: str, pg_schema: str, plans: tuple[ConnectionPool[Any], list[str]]
) -> None:
    pool, seen = plans
    store = _store(pool, pg_schema, exact_limit=100)
    rows = _unit_rows(2000, 16, seed=4)
    kinds = ["wanted" if i % 4 == 0 else "other" for i in range(len(rows))]
    store.upsert([rec(f"r{i}", "big", embedding=v, kind=kinds[i]) for i, v in enumerate(rows)])
    _ready(store, "big")
    _analyze(postgres_url, pg_schema)
    query = _unit_rows(1, 16, seed=5)[0]
    seen.clear()
    # The first lists read hold about 40 rows of the kind; the iterative scan reads more
    # lists until 80 candidates of it are found.
    hits = store.vector_ids("big", query, k=40, filter=Filter(kinds=("wanted",)))
    assert any("Index Scan using records_ivf_" in plan for plan in seen)
    assert not any("<=> v.q" in plan for plan in seen)  # no fallback to the exact scan
    assert len(hits) == 40
    assert all(kinds[int(i[1:])] == "wanted" for i, _ in hits)
    store.close()


def test_deleting_or_renaming_a_namespace_drops_its_index(
    postgres_url: str, pg_schema: str
) -> None:
    store = _store(postgres_url, pg_schema, exact_limit=100)
    rows = _unit_rows(400, 8, seed=12)
    for namespace in ("gone", "moved"):
        store.upsert([rec(f"r{i}", namespace, embedding=v) for i, v in enumerate(rows)])
        _ready(store, namespace)
    assert len(_indexes(postgres_url, pg_schema)) == 2
    store.delete_namespace("gone")
    assert store.backend.rename_namespace("moved", "there") == 400
    deadline = time.monotonic() + 30
    while len(_indexes(postgres_url, pg_schema)) != 1:
        assert time.monotonic() < deadline, "the indexes of names without rows stay"
        time.sleep(0.05)
    (definition,) = _indexes(postgres_url, pg_schema).values()  # built by the rename
    assert "(namespace = 'there'::text)" in definition
    assert store.ready("there")
    store.close()


def test_two_stores_build_a_namespaces_index_once(postgres_url: str, pg_schema: str) -> None:
    stores = [_store(postgres_url, pg_schema, exact_limit=100) for _ in range(3)]
    rows = _unit_rows(3000, 8, seed=13)
    stores[0].upsert([rec(f"r{i}", embedding=v) for i, v in enumerate(rows)])
    deadline = time.monotonic() + 60
    while not all([s.ready("ns") for s in stores]):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert len(_indexes(postgres_url, pg_schema)) == 1
    for store in stores:
        store.close()


def test_rows_written_while_the_index_is_built_are_found_through_it(
    postgres_url: str, pg_schema: str, plans: tuple[ConnectionPool[Any], list[str]]
) -> None:
    pool, seen = plans
    builder = _store(pool, pg_schema, exact_limit=100)
    writer = _store(postgres_url, pg_schema, exact_limit=100)
    loader = _store(postgres_url, pg_schema, exact_limit=50_000)  # builds nothing
    rows = _unit_rows(20_300, 8, seed=14)
    loader.upsert([rec(f"r{i}", embedding=v) for i, v in enumerate(rows[:20_000])])
    loader.close()
    assert not builder.ready("ns")  # the build starts in the background
    for lo in range(20_000, 20_300, 30):  # meanwhile another process writes
        writer.upsert([rec(f"r{i}", embedding=rows[i]) for i in range(lo, lo + 30)])
    _ready(builder, "ns")
    seen.clear()
    for i in range(20_000, 20_300, 7):  # each row's own vector finds it first
        assert builder.vector_ids("ns", rows[i], k=1)[0][0] == f"r{i}"
    assert sum("Index Scan using records_ivf_" in plan for plan in seen) == 43
    assert not any("<=> v.q" in plan for plan in seen)
    assert len(_indexes(postgres_url, pg_schema)) == 1
    writer.close()
    builder.close()


def test_a_batch_of_rows_is_one_statement(
    postgres_url: str, pg_schema: str, plans: tuple[ConnectionPool[Any], list[str]]
) -> None:
    pool, seen = plans
    store = _store(pool, pg_schema)
    seen.clear()
    store.upsert([rec(f"r{i}", embedding=[1, i]) for i in range(500)])
    inserts = [p for p in seen if "INSERT INTO" in p and ".records" in p]
    assert len(inserts) == 1 and "unnest" in inserts[0]
    assert store.count("ns") == 500
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


def test_a_new_schema_has_no_vector_index_and_no_index_no_plan_uses(
    postgres_url: str, pg_schema: str
) -> None:
    store = _store(postgres_url, pg_schema)
    store.upsert([rec("a", "one", embedding=[1, 0, 0]), rec("b", "two", embedding=[0, 1])])
    assert _indexes(postgres_url, pg_schema) == {}
    with psycopg.connect(postgres_url) as conn:
        names = conn.execute(
            "SELECT indexname FROM pg_indexes WHERE schemaname = %s", (pg_schema,)
        ).fetchall()
    assert "records_ns_dim" not in {n for (n,) in names}
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
    for lo in range(0, 2000, pg.BULK_ROWS // 2):  # small writes: none analyzes
        store.upsert([rec(f"c{i:04d}", "kw", f"note number {i}") for i in range(lo, lo + 50)])

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
    (``monkeypatch.undo()`` brings back the current ones), and before migration 10 no
    write counters (``_postgres_replicas.bump``)."""
    monkeypatch.setattr(pg, "MIGRATIONS", MIGRATIONS[:migrations])
    if migrations < 10:
        monkeypatch.setattr(replicas, "bump", lambda *_: None)
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


def test_migration_7_rebuilds_the_hnsw_indexes_and_migration_9_drops_them(
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

    monkeypatch.setattr(pg, "MIGRATIONS", MIGRATIONS[:8])
    _older_store(postgres_url, pg_schema, monkeypatch, migrations=8).close()
    assert _hnsw_options(postgres_url, pg_schema) == {
        "records_hnsw_3": ["ef_construction=512", "m=16"],
        "records_hnsw_384": ["ef_construction=512", "m=16"],
    }

    monkeypatch.undo()
    store = PostgresRecordStore(postgres_url, schema=pg_schema)
    store.setup()
    assert _hnsw_options(postgres_url, pg_schema) == {}
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
    """An index past 100 rows."""
    store = PostgresRecordStore(pool, schema=schema, clock=ManualClock(), exact_limit=100)
    store.setup()
    return store


def _searched_through_index(store: PostgresRecordStore, seen: list[str], query: Any) -> bool:
    seen.clear()
    assert len(store.vector_ids("ns", query, k=5)) == 5
    return any("Index Scan using records_ivf_" in plan for plan in seen)


def test_the_stores_own_writes_move_a_namespace_between_exact_and_its_index(
    postgres_url: str, pg_schema: str, plans: tuple[ConnectionPool[Any], list[str]]
) -> None:
    pool, seen = plans
    store = _searching_store(pool, pg_schema)
    rows, query = _unit_rows(2000, 8, seed=1), _unit_rows(1, 8, seed=2)[0]
    store.upsert([rec(f"r{i}", embedding=v) for i, v in enumerate(rows[:40])])
    assert not _searched_through_index(store, seen, query)  # 40 rows: counted, exact

    store.upsert([rec(f"r{i}", embedding=v) for i, v in enumerate(rows[40:], start=40)])
    _ready(store, "ns")
    _analyze(postgres_url, pg_schema)
    assert _searched_through_index(store, seen, query)  # grown past the limit: counted again

    store.delete("ns", [f"r{i}" for i in range(10, 2000)])
    assert not _searched_through_index(store, seen, query)  # shrunk: counted again
    store.close()


def test_another_writers_rows_count_once_the_size_is_old(
    postgres_url: str,
    pg_schema: str,
    plans: tuple[ConnectionPool[Any], list[str]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pool, seen = plans
    store = _searching_store(pool, pg_schema)
    other = _store(postgres_url, pg_schema, exact_limit=100)
    rows, query = _unit_rows(2000, 8, seed=3), _unit_rows(1, 8, seed=4)[0]
    store.upsert([rec(f"r{i}", embedding=v) for i, v in enumerate(rows[:10])])
    assert not _searched_through_index(store, seen, query)
    other.upsert([rec(f"r{i}", embedding=v) for i, v in enumerate(rows)])
    _ready(other, "ns")
    _analyze(postgres_url, pg_schema)
    assert not _searched_through_index(store, seen, query)  # its size is still fresh
    monkeypatch.setattr(pg, "SIZE_TTL_S", 0.0)
    assert _searched_through_index(store, seen, query)
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


# -- bulk writes: the namespace is ready when the write returns -------------------------


def _clustered(clusters: int, per: int, dim: int, seed: int) -> tuple[Any, Any]:
    """``clusters`` unit centres and ``per`` near copies of each: a centre's exact top
    ``per`` is its own copies, far from every other."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((clusters, dim)).astype(np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    rows = np.repeat(centres, per, axis=0)
    rows += 0.05 * rng.standard_normal(rows.shape).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    return centres, rows


def _planned_rows(url: str, schema: str) -> float:
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT reltuples FROM pg_class WHERE oid = to_regclass(%s)", (f"{schema}.records",)
        ).fetchone()
    assert row is not None
    return float(row[0])


def test_a_bulk_write_returns_with_the_index_built_analyzed_and_answering_as_exact(
    postgres_url: str, pg_schema: str, plans: tuple[ConnectionPool[Any], list[str]]
) -> None:
    pool, seen = plans
    store = _store(pool, pg_schema, exact_limit=100)
    backend = store.backend
    assert isinstance(backend, pg.PostgresBackend)
    centres, rows = _clustered(200, 10, 16, seed=21)
    store.upsert([rec(f"r{i}", embedding=v) for i, v in enumerate(rows)])
    assert backend.index_serves("ns") and store.ready("ns")  # no wait: right after the write
    (definition,) = _indexes(postgres_url, pg_schema).values()
    assert "WITH (lists='45')" in definition
    seen.clear()
    for centre in centres[:20]:
        exact = np.argsort(-(rows @ centre), kind="stable")[:10]
        assert [i for i, _ in store.vector_ids("ns", centre, k=10)] == [f"r{i}" for i in exact]
    assert sum("Index Scan using records_ivf_" in plan for plan in seen) == 20
    assert not any("<=> v.q" in plan for plan in seen)  # never the exact scan
    store.close()


def test_a_bulk_write_leaves_the_planner_statistics_fresh(
    postgres_url: str, pg_schema: str
) -> None:
    store = _store(postgres_url, pg_schema)
    store.upsert([rec(f"c{i:04d}", "kw", f"note number {i}") for i in range(2000)])
    assert _planned_rows(postgres_url, pg_schema) == 2000  # no ready(), no autovacuum
    with psycopg.connect(postgres_url) as conn:
        analyzed = conn.execute(
            "SELECT most_common_vals::text FROM pg_stats WHERE schemaname = %s"
            " AND tablename = 'records' AND attname = 'namespace'",
            (pg_schema,),
        ).fetchone()
    assert analyzed == ("{kw}",)  # the planner knows the namespace holds the table
    store.close()


def test_a_load_in_bulk_batches_is_served_by_an_index_after_each(
    postgres_url: str, pg_schema: str
) -> None:
    store = _store(postgres_url, pg_schema, exact_limit=150)
    backend = store.backend
    assert isinstance(backend, pg.PostgresBackend)
    rows = _unit_rows(1000, 8, seed=23)
    for lo in range(0, 1000, pg.BULK_ROWS):
        store.upsert([rec(f"r{i}", embedding=rows[i]) for i in range(lo, lo + pg.BULK_ROWS)])
        assert backend.index_serves("ns")  # exactly up to 150 rows, then by the index
        assert bool(_indexes(postgres_url, pg_schema)) == (lo + pg.BULK_ROWS > 150)
    store.close()


def test_small_writes_ask_for_the_build_without_a_search(postgres_url: str, pg_schema: str) -> None:
    store = _store(postgres_url, pg_schema, exact_limit=100)
    rows = _unit_rows(400, 8, seed=24)
    for lo in range(0, 400, 20):  # each write under BULK_ROWS: none waits for a build
        store.upsert([rec(f"r{i}", embedding=rows[i]) for i in range(lo, lo + 20)])
    deadline = time.monotonic() + 60
    while not _indexes(postgres_url, pg_schema):  # no search, no ready(): the writes asked
        assert time.monotonic() < deadline, "no build was asked for"
        time.sleep(0.05)
    store.close()


def test_a_bulk_write_waits_for_another_process_building_the_index(
    postgres_url: str, pg_schema: str
) -> None:
    store = _store(postgres_url, pg_schema, exact_limit=100)
    backend = store.backend
    assert isinstance(backend, pg.PostgresBackend)
    rows = _unit_rows(1000, 8, seed=25)
    key = (f'"{pg_schema}".ns', ann.BUILD_KEY)
    with psycopg.connect(postgres_url, autocommit=True) as other:  # as another build would
        other.execute("SELECT pg_advisory_lock(hashtextextended(%s, %s))", key)
        writer = threading.Thread(
            target=store.upsert, args=([rec(f"r{i}", embedding=v) for i, v in enumerate(rows)],)
        )
        writer.start()
        deadline = time.monotonic() + 30
        while not other.execute(
            "SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
        ).fetchone():
            assert time.monotonic() < deadline, "the write did not wait for the build lock"
            time.sleep(0.02)
        assert writer.is_alive() and not _indexes(postgres_url, pg_schema)
        other.execute("SELECT pg_advisory_unlock(hashtextextended(%s, %s))", key)
    writer.join(60)
    assert not writer.is_alive()
    assert backend.index_serves("ns") and store.count("ns") == 1000
    store.close()


def test_a_failed_build_fails_no_write_and_ready_says_why(
    postgres_url: str, pg_schema: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _store(postgres_url, pg_schema, exact_limit=100)
    backend = store.backend
    assert isinstance(backend, pg.PostgresBackend)

    def fail(*args: object) -> str:
        raise psycopg.errors.ProgramLimitExceeded("memory required is 9000 MB")

    monkeypatch.setattr(backend, "_build", fail)
    rows = _unit_rows(300, 8, seed=26)
    store.upsert([rec(f"r{i}", embedding=v) for i, v in enumerate(rows)])
    assert store.count("ns") == 300
    with pytest.raises(StoreUnavailable, match="9000 MB"):
        store.ready("ns")
    store.close()


def test_renaming_a_large_namespace_builds_the_new_names_index_before_returning(
    postgres_url: str, pg_schema: str
) -> None:
    loader = _store(postgres_url, pg_schema, exact_limit=50_000)  # builds nothing
    rows = _unit_rows(600, 8, seed=27)
    loader.upsert([rec(f"r{i}", "old", embedding=v) for i, v in enumerate(rows)])
    loader.close()
    store = _store(postgres_url, pg_schema, exact_limit=100)
    backend = store.backend
    assert isinstance(backend, pg.PostgresBackend)
    assert not backend.index_serves("old")
    assert not _indexes(postgres_url, pg_schema)  # index_serves only reads
    assert store.rename_namespace("old", "new") == 600
    assert backend.index_serves("new")
    (definition,) = _indexes(postgres_url, pg_schema).values()
    assert "(namespace = 'new'::text)" in definition
    store.close()


def test_an_index_another_process_built_is_used_soon_after(
    postgres_url: str,
    pg_schema: str,
    plans: tuple[ConnectionPool[Any], list[str]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pool, seen = plans
    searcher = _store(pool, pg_schema, exact_limit=100)
    loader = _store(postgres_url, pg_schema, exact_limit=50_000)  # builds nothing
    rows, query = _unit_rows(600, 8, seed=28), _unit_rows(1, 8, seed=29)[0]
    loader.upsert([rec(f"r{i}", embedding=v) for i, v in enumerate(rows)])
    backend = searcher.backend
    assert isinstance(backend, pg.PostgresBackend)
    monkeypatch.setattr(backend._builds, "want", lambda *a, **k: None)
    assert not _searched_through_index(searcher, seen, query)  # none yet: exact
    builder = _store(postgres_url, pg_schema, exact_limit=100)
    assert builder.rename_namespace("ns", "tmp") == 600  # a bulk move builds tmp's index
    assert builder.rename_namespace("tmp", "ns") == 600  # and back: ns's
    monkeypatch.setattr(pg, "MISSING_TTL_S", 0.0)
    assert _searched_through_index(searcher, seen, query)  # though sizes are kept 30 s
    for store in (searcher, loader, builder):
        store.close()


def test_a_bulk_write_past_a_fourfold_growth_is_served_by_the_old_index_while_rebuilt(
    postgres_url: str, pg_schema: str
) -> None:
    store = _store(postgres_url, pg_schema, exact_limit=100)
    backend = store.backend
    assert isinstance(backend, pg.PostgresBackend)
    rows = _unit_rows(2200, 8, seed=30)
    store.upsert([rec(f"r{i}", embedding=v) for i, v in enumerate(rows[:200])])
    assert [n.rsplit("_", 1)[1] for n in _indexes(postgres_url, pg_schema)] == ["14"]
    store.upsert([rec(f"r{i}", embedding=rows[i]) for i in range(200, 2200)])
    assert backend.index_serves("ns")  # by the old index, or already by its successor
    deadline = time.monotonic() + 60
    while [n.rsplit("_", 1)[1] for n in _indexes(postgres_url, pg_schema)] != ["47"]:
        assert time.monotonic() < deadline, "the index that no longer fits was not rebuilt"
        time.sleep(0.05)
    store.close()


async def test_remember_many_returns_with_the_collections_index_built(
    postgres_url: str, pg_schema: str
) -> None:
    store = _store(postgres_url, pg_schema, exact_limit=100)
    backend = store.backend
    assert isinstance(backend, pg.PostgresBackend)
    collection = Collection(user_id="u", namespace="notes")
    memory = LongTermMemory(
        collection=collection, store=store, embedder=HashEmbedder(), max_items=0
    )
    texts = [f"note {i}: the user visited city number {i}" for i in range(150)]
    await memory.remember_many([Candidate(text=t) for t in texts], dedupe=False)
    assert backend.index_serves(collection.name)
    (definition,) = _indexes(postgres_url, pg_schema).values()
    assert "ivfflat" in definition
    store.close()
