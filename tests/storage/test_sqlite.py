"""What only the SQLite backend promises: one file shared by instances and processes."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest

from memstack.clock import ManualClock
from memstack.errors import ConfigError, StoreUnavailable
from memstack.storage import Filter, SQLiteRecordStore
from memstack.storage._sqlite_cache import data_version
from memstack.storage._sqlite_schema import MIGRATIONS
from memstack.storage.sqlite import SQLiteBackend
from tests.storage.records import ids, key, rec


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "shared.db"


@pytest.fixture
def pair(path: Path, clock: ManualClock):
    """Two stores on the same file, as two parts of one program would open it."""
    a = SQLiteRecordStore(path, clock=clock)
    b = SQLiteRecordStore(path, clock=clock)
    a.setup()
    b.setup()
    yield a, b
    a.close()
    b.close()


def _nearest(store: SQLiteRecordStore, vector: list[float], k: int = 5) -> list[str]:
    return ids([h.record for h in store.vector_search("ns", vector, k=k)])


def test_instances_see_each_others_writes_and_refresh_vector_caches(pair) -> None:
    a, b = pair
    a.upsert([rec("far", text="alpha", embedding=[0, 1])])
    assert _nearest(a, [1, 0]) == ["far"]  # a caches the namespace's matrix
    b.upsert([rec("near", text="beta", embedding=[1, 0.1])])
    assert _nearest(a, [1, 0]) == ["near", "far"]
    assert ids([h.record for h in a.text_search("ns", "beta", k=5)]) == ["near"]
    b.upsert([rec("far", text="alpha", embedding=[1, 0])])  # replaced: now the nearest
    assert _nearest(a, [1, 0]) == ["far", "near"]
    b.delete("ns", ["far"])
    assert _nearest(a, [1, 0]) == ["near"]
    b.upsert([rec("brief", embedding=[1, 0], expires_at=1.0)])
    assert _nearest(a, [1, 0]) == ["near"]
    assert b.prune_expired(2.0) == 1
    assert _nearest(a, [1, 0]) == ["near"]
    b.delete_namespace("ns")
    assert _nearest(a, [1, 0]) == []
    assert a.count("ns", Filter(include_expired=True)) == 0


def test_touch_is_seen_without_reloading_vectors(pair) -> None:
    a, b = pair
    a.upsert([rec("x", embedding=[1, 0])])
    assert _nearest(a, [1, 0]) == ["x"]
    b.touch("ns", ["x"], 123.0)
    [hit] = a.vector_search("ns", [1, 0], k=1)
    assert hit.record.last_accessed_at == 123.0


_WRITER = textwrap.dedent(
    """
    import sys
    import numpy as np
    from memstack.storage import Record, SQLiteRecordStore

    path, name = sys.argv[1], sys.argv[2]
    store = SQLiteRecordStore(path)
    store.setup()
    for b in range(20):
        store.upsert([
            Record(id=f"{name}-{b}-{i}", namespace="ns", text=f"from {name}",
                   created_at=1.0, updated_at=1.0,
                   embedding=np.array([1.0, b + 1.0, i + 1.0], dtype=np.float32))
            for i in range(5)
        ])
    store.close()
    """
)


def test_other_processes_writing_at_once_lose_nothing(pair, path: Path) -> None:
    a, _ = pair
    a.upsert([rec("mine", embedding=[1, 1, 1])])
    assert _nearest(a, [1, 1, 1]) == ["mine"]  # cached before the other processes write
    writers = [subprocess.Popen([sys.executable, "-c", _WRITER, str(path), name]) for name in "pq"]
    for b in range(20):
        a.upsert([rec(f"main-{b}", embedding=[2, b + 1, 1])])
    assert [w.wait(timeout=60) for w in writers] == [0, 0]
    assert a.count("ns") == 1 + 20 + 2 * 100
    assert len(a.vector_search("ns", [1, 1, 1], k=1000)) == 221
    assert len(a.text_search("ns", "from", k=1000)) == 200


def test_threads_writing_through_two_instances_lose_nothing(pair) -> None:
    a, b = pair

    def work(store: SQLiteRecordStore, name: str) -> None:
        for n in range(30):
            store.upsert([rec(f"{name}-{n}", embedding=[1, n + 1])])
            store.vector_search("ns", [1, 1], k=3)

    threads = [
        threading.Thread(target=work, args=(s, f"{s_i}-{t}"))
        for s_i, s in enumerate((a, b))
        for t in range(3)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert a.count("ns") == b.count("ns") == 180
    assert len(b.vector_search("ns", [1, 1], k=500)) == 180


def test_data_survives_close_and_reopen(path: Path, clock: ManualClock) -> None:
    first = SQLiteRecordStore(path, clock=clock)
    first.setup()
    record = rec("a", text="persistent words", embedding=[0.5, -1.5], metadata={"k": [1]})
    first.upsert([record])
    first.close()
    first.close()  # closing twice is fine
    second = SQLiteRecordStore(path, clock=clock)
    second.setup()
    try:
        assert [key(r) for r in second.get("ns", ["a"])] == [key(record)]
        assert ids([h.record for h in second.text_search("ns", "persistent", k=1)]) == ["a"]
        assert ids([h.record for h in second.vector_search("ns", [1, -3], k=1)]) == ["a"]
    finally:
        second.close()


def test_file_is_in_wal_mode_with_one_row_per_migration(pair, path: Path) -> None:
    a, _ = pair
    a.setup()
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert conn.execute("SELECT version FROM schema_migrations").fetchall() == [
            (v,) for v in range(1, len(MIGRATIONS) + 1)
        ]
    conn.close()


def test_a_newer_schema_is_refused(path: Path) -> None:
    store = SQLiteRecordStore(path)
    store.setup()
    with sqlite3.connect(path) as conn:
        conn.execute("INSERT INTO schema_migrations VALUES (99, 0)")
    conn.close()
    try:
        with pytest.raises(ConfigError, match="upgrade memstack"):
            store.setup()
    finally:
        store.close()


def test_use_before_setup_says_to_call_setup(path: Path) -> None:
    store = SQLiteRecordStore(path)
    try:
        with pytest.raises(ConfigError, match="setup"):
            store.count("ns")
    finally:
        store.close()


def test_a_closed_store_refuses_calls(path: Path) -> None:
    store = SQLiteRecordStore(path)
    store.setup()
    store.close()
    with pytest.raises(StoreUnavailable, match="closed"):
        store.get("ns", ["a"])


def test_a_missing_folder_is_created(tmp_path: Path) -> None:
    store = SQLiteRecordStore(tmp_path / "missing" / "dir" / "x.db")
    store.close()
    assert (tmp_path / "missing" / "dir" / "x.db").exists()


def test_an_unopenable_path_is_a_config_error(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("not a folder")
    with pytest.raises(ConfigError, match="folder"):
        SQLiteRecordStore(tmp_path / "a-file" / "x.db")


def test_vector_cache_evicts_but_stays_correct(path: Path) -> None:
    store = SQLiteRecordStore(path, cached_namespaces=2)
    store.setup()
    try:
        rng = np.random.default_rng(1)
        vectors = {ns: rng.normal(size=4) for ns in ("n1", "n2", "n3")}
        store.upsert([rec("v", ns, embedding=v) for ns, v in vectors.items()])
        for _ in range(3):
            for ns, v in vectors.items():
                [hit] = store.vector_search(ns, v, k=1)
                assert (hit.record.namespace, round(hit.score, 4)) == (ns, 1.0)
    finally:
        store.close()


def test_in_memory_database(clock: ManualClock) -> None:
    store = SQLiteRecordStore(":memory:", clock=clock)
    store.setup()
    store.upsert([rec("a", embedding=[1, 0])])
    assert _nearest(store, [1, 0]) == ["a"]
    store.close()


@pytest.mark.parametrize("first", ["vectors", "keywords"])
def test_both_indexes_of_a_namespace_share_its_id_strings(
    path: Path, clock: ManualClock, first: str
) -> None:
    writer, reader = SQLiteRecordStore(path, clock=clock), SQLiteRecordStore(path, clock=clock)
    writer.setup()
    writer.upsert([rec(f"r{i}", text=f"word{i}", embedding=[1, i]) for i in range(3_000)])
    writer.upsert([rec("plain", text="no vector")])
    searches = {
        "vectors": lambda: reader.vector_search("ns", [1, 7], k=1),
        "keywords": lambda: reader.text_search("ns", "word7", k=1),
    }
    for name in (first, *(n for n in searches if n != first)):  # each loads its index
        [hit] = searches[name]()
        assert hit.record.id == "r7"
    entry = reader.backend._cache._entries["ns"]  # type: ignore[attr-defined]
    rows, words = entry.rows, entry.words
    vector_ids = {id(key): key for key in rows.keys}
    assert all(id(key) in vector_ids for key in words._ids.keys if key != "plain")
    reader.upsert([rec("r7", text="renamed", embedding=[0, 1])])
    reader.delete("ns", ["r8"])
    assert [h.record.id for h in reader.text_search("ns", "word7 renamed", k=2)] == ["r7"]
    assert [h.record.id for h in reader.vector_search("ns", [0, 1], k=1)] == ["r7"]
    writer.close()
    reader.close()


def test_a_warm_gather_asks_the_database_one_pragma(path: Path) -> None:
    store = SQLiteRecordStore(path)
    store.setup()
    store.upsert(
        [rec(f"r{i}", text=f"Alice {i}", embedding=[1, i]) for i in range(20)], model_id="m"
    )
    store.gather("ns", query="Alice", vector=[1, 0], k=5, model_id="m")  # loads the caches
    statements: list[str] = []
    backend = store.backend
    assert isinstance(backend, SQLiteBackend) and backend._conn is not None
    backend._conn.set_trace_callback(statements.append)
    got = store.gather("ns", query="Alice", vector=[1, 0], k=5, model_id="m")
    cold = store.gather("ns", query="Alice", vector=[1, 0], k=5, filter=Filter(ids=("r1",)))
    store.close()
    assert len(got.records) >= 5 and list(cold.records) == ["r1"]
    # nothing committed by another connection since: the cached indexes and records
    assert statements[0] == "PRAGMA data_version"  # the whole of the first gather
    assert statements[1] == "BEGIN"  # a filtered gather reads in a transaction


def test_a_gather_sees_what_another_instance_wrote_since(pair) -> None:
    a, b = pair
    a.upsert([rec("tea", text="Alice drinks tea", embedding=[1, 0], metadata={"v": 1})])
    first = a.gather("ns", query="Alice", vector=[1, 0], k=3)
    assert first.records["tea"].metadata == {"v": 1}
    b.upsert([rec("tea", text="Alice drinks coffee", embedding=[0, 1], metadata={"v": 2})])
    again = a.gather("ns", query="coffee", vector=[1, 0], k=3)
    assert [id for id, _ in again.matched] == ["tea"]  # the keyword index was reloaded
    assert again.records["tea"].metadata == {"v": 2}  # and the record read again
    assert again.cosines["tea"] == pytest.approx(0.0, abs=1e-6)  # and the vectors


def test_gathers_see_this_stores_own_writes_between_them(path: Path, clock: ManualClock) -> None:
    store = SQLiteRecordStore(path, clock=clock)
    store.setup()
    store.upsert([rec("tea", text="Alice drinks tea", embedding=[1, 0])])  # model unknown
    got = store.gather("ns", query="Alice", vector=[1, 0], k=5, model_id="other")
    assert list(got.records) == ["tea"]
    for round in range(3):
        store.gather("ns", query="Alice", vector=[1, 0], k=5)  # settles the indexes
        store.upsert(
            [
                rec(
                    f"new{round}",
                    text="Alice drinks water",
                    embedding=[0, 1],
                    metadata={"r": round},
                )
            ],
            model_id="m",
        )
        store.delete("ns", ["tea"] if round == 0 else [])
        got = store.gather("ns", query="water", vector=[0, 1], k=5, model_id="m")
        assert f"new{round}" in {id for id, _ in got.nearest}
        assert {id for id, _ in got.matched} == {f"new{i}" for i in range(round + 1)}
        assert "tea" not in got.records and got.records[f"new{round}"].metadata == {"r": round}
        with pytest.raises(ConfigError):  # the info is the namespace's, not a stale copy
            store.gather("ns", query="water", vector=[0, 1], k=5, model_id="other")
    store.close()


def test_a_gather_forgets_records_another_instance_touched(pair, clock: ManualClock) -> None:
    a, b = pair
    a.upsert([rec("tea", text="Alice drinks tea", embedding=[1, 0])])
    assert a.gather("ns", query="Alice", vector=[1, 0], k=3).records["tea"].last_accessed_at is None
    a.gather("ns", query="Alice", vector=[1, 0], k=3)  # from the settled indexes and memo
    b.touch("ns", ["tea"], at=clock.now() + 5)
    got = a.gather("ns", query="Alice", vector=[1, 0], k=3)
    assert got.records["tea"].last_accessed_at == clock.now() + 5


def test_a_commit_right_after_the_pragma_sends_a_gather_to_the_full_read(
    pair, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = pair
    a.upsert(
        [rec("tea", text="Alice drinks tea", embedding=[1, 0]), rec("cat", text="Alice's cat")]
    )
    a.gather("ns", query="Alice", vector=[1, 0], k=3)  # settles a's indexes
    backend = a.backend
    assert isinstance(backend, SQLiteBackend) and backend._conn is not None
    seen = data_version(backend._conn)
    a.touch("ns", ["tea"], at=clock.now())  # its own touch: the memo forgets "tea"
    b.delete("ns", ["tea"])  # another connection commits...
    # ...just after a's gather asked for the data version: it sees the one before
    monkeypatch.setattr("memstack.storage.sqlite.data_version", lambda conn: seen)
    got = a.gather("ns", query="Alice", vector=[1, 0], k=3)
    assert "tea" not in {id for id, _ in got.matched + got.nearest}
    assert list(got.records) == ["cat"]
