"""A namespace loaded in one batch past the size that gives it a vector index answers
exactly as one written record by record: searches (vector, keyword, hybrid, ``nearest``),
listings, counts and reads, ties ordered by id, with the expectations, caps and model
claims of its writes kept.

On PostgreSQL a namespace of more than ``exact_limit`` rows is searched through an IVFFlat
index of its own (``_postgres_ann``); here the limit is 40 and every list is read
(``probes_for``), so the index's answers must equal the exact ones, and the plans show
that the index answered (the planner is steered to it: ``enable_sort`` off). The other
backends run the same checks on their own paths."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import numpy.typing as npt
import psycopg
import pytest
from psycopg_pool import ConnectionPool

import memstack.storage._postgres_ann as ann
from memstack.clock import ManualClock
from memstack.errors import WriteConflict
from memstack.storage import Cap, Expect, Filter, PostgresRecordStore, Record, RecordStore
from memstack.storage.hybrid import hybrid_candidates
from tests.storage.conftest import BACKENDS, StoreFactory
from tests.storage.records import T0, rec

ROWS = 300
TIED = ["t9", "t10", "t1", "T5", "_x", "é", "😀"]
"""Ids of records with one vector and one text: exact ties, in an order that differs from
code point order by length, case and UTF-16."""
WORDS = "apple banana cherry damson elder fig grape hazel".split()
MODEL = "model-a"


@pytest.fixture
def indexed(
    request: pytest.FixtureRequest,
    make_store: StoreFactory,
    clock: ManualClock,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[tuple[RecordStore, list[str]]]:
    """A store of each backend (PostgreSQL: an index past 40 rows, every list read), and
    the plans its PostgreSQL statements ran with."""
    backend: str = request.param
    if backend != "postgres":
        yield make_store(backend), []
        return
    monkeypatch.setattr(ann, "probes_for", lambda lists: lists)
    seen: list[str] = []

    def configure(conn: psycopg.Connection[Any]) -> None:
        conn.execute("LOAD 'auto_explain'")
        conn.execute("SET auto_explain.log_min_duration = 0")
        conn.execute("SET auto_explain.log_level = 'notice'")
        conn.execute("SET enable_sort = off")  # 300 rows: else the planner ranks them whole
        conn.commit()
        conn.add_notice_handler(lambda diag: seen.append(diag.message_primary or ""))

    url: str = request.getfixturevalue("postgres_url")
    schema: str = request.getfixturevalue("pg_schema")
    with ConnectionPool(url, min_size=1, max_size=4, configure=configure) as pool:
        store = PostgresRecordStore(pool, schema=schema, clock=clock, exact_limit=40)
        store.setup()
        yield store, seen
        store.close()


def _records(namespace: str) -> list[Record]:
    """``ROWS`` records with vectors and texts from a fixed generator, a few tied."""
    rng = np.random.default_rng(29)
    vectors = rng.standard_normal((ROWS, 3)).astype(np.float32)
    out = []
    for i in range(ROWS):
        tied = i < len(TIED)
        words = rng.choice(WORDS, size=int(rng.integers(1, 4)))
        out.append(
            rec(
                TIED[i] if tied else f"r{i:03d}",
                namespace,
                "apple fig" if tied else " ".join(words),
                embedding=[0.6, 0.8, 0.0] if tied else vectors[i],
                created_at=T0 + (100 if tied else i % 17),
                kind="tied" if tied else ("a" if i % 3 else "b"),
                importance=(i % 5) / 5,
            )
        )
    return out


def _load(store: RecordStore, namespace: str, *, bulk: bool) -> list[str]:
    """Write the records (one batch, or one call each) with an expectation, a cap and
    a model claim; return the ids the cap evicted."""
    records = _records(namespace)
    batches = [records] if bulk else [[r] for r in records]
    for batch in batches:
        store.write(
            upserts=batch,
            expect=[Expect(namespace=namespace, id=r.id, seen=None) for r in batch],
            model_id=MODEL,
        )
    extra = rec("late", namespace, "late apple", embedding=[1, 0, 0], created_at=T0 - 5)
    evicted = store.write(
        upserts=[extra], caps=[Cap(namespace=namespace, keep=ROWS - 10, close=True)]
    ).evicted
    with pytest.raises(WriteConflict):
        store.write(upserts=[extra], expect=[Expect(namespace=namespace, id="late", seen=None)])
    return evicted[namespace]


def _ready(store: RecordStore, namespace: str) -> None:
    deadline = time.monotonic() + 60
    while not store.ready(namespace):
        assert time.monotonic() < deadline, "the namespace's index was not built in 60 s"
        time.sleep(0.05)


def _unit(values: npt.ArrayLike) -> npt.NDArray[np.float32]:
    vector = np.asarray(values, dtype=np.float32)
    unit: npt.NDArray[np.float32] = vector / np.linalg.norm(vector)
    return unit


QUERIES = [_unit([0.6, 0.8, 0.0]), _unit([1.0, 0.2, -0.3]), _unit([-0.5, 0.1, 0.9])]


def _answers(store: RecordStore, namespace: str) -> dict[str, Any]:
    """Every kind of answer a caller gets from the namespace, without its name."""
    out: dict[str, Any] = {}
    everything = Filter(include_expired=True, include_superseded=True)
    for order in ("created_desc", "created_asc", "updated_desc"):
        listed = store.list(namespace, filter=everything, limit=1000, order=order)
        out[order] = [(r.id, r.text, r.kind, r.valid_to, r.closed_reason) for r in listed]
    out["count"] = store.count(namespace)
    out["count b"] = store.count(namespace, Filter(kinds=("b",)))
    out["get"] = [r.id for r in store.get(namespace, ["r010", "t1", "nope", "late"])]
    for n, query in enumerate(QUERIES):
        for k in (1, 5, 12, 40):
            hits = store.vector_ids(namespace, query, k=k)
            out[f"vector {n} {k}"] = [(id, round(s, 5)) for id, s in hits]
        hits = store.vector_ids(namespace, query, k=8, filter=Filter(kinds=("b",)))
        out[f"vector {n} b"] = [(id, round(s, 5)) for id, s in hits]
        pool = hybrid_candidates(
            store, [namespace], query="fig apple", vector=query, pool=15, keyword_weight=0.3
        )
        out[f"hybrid {n}"] = [(h.record.id, round(h.relevance, 5)) for h in pool]
    out["text"] = [(id, round(s, 5)) for id, s in store.text_ids(namespace, "apple fig", k=20)]
    out["nearest"] = [
        None if hit is None else (hit[0], round(hit[1], 5))
        for hit in store.nearest(namespace, np.stack(QUERIES))
    ]
    out["info"] = store.namespace_info(namespace)
    return out


@pytest.mark.parametrize("indexed", BACKENDS, indirect=True)
def test_a_batch_past_the_index_size_answers_as_records_written_one_by_one(
    indexed: tuple[RecordStore, list[str]],
) -> None:
    store, seen = indexed
    evicted = {
        "bulk": _load(store, "bulk", bulk=True),
        "rows": _load(store, "rows", bulk=False),
    }
    assert evicted["bulk"] == evicted["rows"] and len(evicted["bulk"]) == 11
    for namespace in ("bulk", "rows"):
        _ready(store, namespace)
    seen.clear()
    bulk, rows = _answers(store, "bulk"), _answers(store, "rows")
    assert bulk == rows
    assert [id for id, _ in bulk["vector 0 12"]][: len(TIED)] == sorted(TIED)  # ties by id
    assert bulk["info"].model_id == MODEL
    assert "late" not in [id for id, _ in bulk["vector 1 40"]]  # closed by the cap's evictions
    if isinstance(store, PostgresRecordStore):
        assert sum("Index Scan using records_ivf_" in plan for plan in seen) >= 2 * len(QUERIES)
