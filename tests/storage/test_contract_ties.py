"""One order for equal scores on every backend: exact ties in a ranked answer (vector,
keyword and hybrid search, ``nearest``, listings by time) are ordered by id ascending, in
code point order, and at a ``k`` or ``limit`` boundary the smallest ids are kept."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from memstack.storage import Order, RecordStore
from memstack.storage.hybrid import hybrid_candidates
from tests.storage.records import T0, ids, rec

TIED = ["r9", "r10", "r1", "r100", "r11", "R5", "_x", "a", "b2", "Z1", "é", "😀"]
"""Ids whose order by length, by case-folding or by UTF-16 differs from code point order:
"r10" < "r9", "R5" < "_x" < "a", "é" < "😀" (a surrogate pair in UTF-16)."""
ASCENDING = sorted(TIED)
BEST, WORST = "😀z", "00"
"""One record above the tie and one below it, with ids that sort after and before it."""
QUERY = np.asarray([0.8, 0.6, 0.0], dtype=np.float32)
"""A unit vector: the tied records' cosine with it is 0.8 however the dot is summed."""


@pytest.fixture
def tied(store: RecordStore) -> RecordStore:
    """The tied records written one at a time in a shuffled order (the order a scan or an
    index holds them in), around one better and one worse record."""
    order = TIED[:]
    random.Random(28).shuffle(order)
    assert order != ASCENDING and order != ASCENDING[::-1]
    store.upsert([rec(BEST, text="alpha alpha", embedding=QUERY, created_at=T0 + 1)])
    for id in order:
        store.upsert([rec(id, text="alpha beta", embedding=[1.0, 0.0, 0.0])])
    store.upsert([rec(WORST, text="gamma", embedding=[0.0, 0.0, 1.0], created_at=T0 - 1)])
    return store


@pytest.mark.parametrize("k", [1, 4, 12, 13, 20])
def test_vector_search_orders_ties_by_id(tied: RecordStore, k: int) -> None:
    hits = tied.vector_search("ns", QUERY, k=k)
    assert ids([h.record for h in hits]) == [BEST, *ASCENDING, WORST][:k]
    assert len({h.score for h in hits[1 : min(k, 13)]}) <= 1  # the tie is exact


@pytest.mark.parametrize("k", [1, 4, 12, 13, 20])
def test_text_search_orders_ties_by_id(tied: RecordStore, k: int) -> None:
    hits = tied.text_search("ns", "alpha", k=k)
    assert ids([h.record for h in hits]) == [BEST, *ASCENDING][:k]
    assert len({h.score for h in hits[1:]}) <= 1


@pytest.mark.parametrize("pool", [4, 12, 20])
@pytest.mark.parametrize(("vector", "weight"), [(QUERY, 0.3), (None, 0.3), (QUERY, 0.0)])
def test_hybrid_search_orders_ties_by_id(
    tied: RecordStore, pool: int, vector: Any, weight: float
) -> None:
    hits = hybrid_candidates(
        tied, ["ns"], query="alpha", vector=vector, pool=pool, keyword_weight=weight
    )
    expected = [BEST, *ASCENDING][:pool]  # each half keeps the smallest tied ids
    assert [h.record.id for h in hits][: len(expected)] == expected


def test_hybrid_search_over_namespaces_orders_ties_by_id(tied: RecordStore) -> None:
    """Candidates are gathered namespace by namespace; ties are ranked across them."""
    more = ["r5", "Z0", "é2"]
    tied.upsert([rec(id, "other", text="alpha beta", embedding=[1.0, 0.0, 0.0]) for id in more])
    hits = hybrid_candidates(
        tied, ["other", "ns"], query="alpha", vector=QUERY, pool=20, keyword_weight=0.0
    )
    assert [h.record.id for h in hits] == [BEST, *sorted(TIED + more), WORST]


def test_gather_keeps_the_smallest_tied_ids_in_both_halves(tied: RecordStore) -> None:
    got = tied.gather("ns", query="alpha", vector=QUERY, k=5)
    assert [id for id, _ in got.matched] == [BEST, *ASCENDING[:4]]
    assert [id for id, _ in got.nearest] == [BEST, *ASCENDING[:4]]


def test_nearest_picks_the_smallest_tied_id(tied: RecordStore) -> None:
    found = tied.nearest("ns", [[1.0, 0.0, 0.0], QUERY.tolist(), [0.0, 0.0, 1.0]])
    assert [hit[0] if hit else None for hit in found] == [ASCENDING[0], BEST, WORST]


@pytest.mark.parametrize(
    ("order", "expected"),
    [
        ("created_desc", [BEST, *ASCENDING, WORST]),
        ("created_asc", [WORST, *ASCENDING, BEST]),
        ("updated_desc", [BEST, *ASCENDING, WORST]),
    ],
)
def test_listings_order_ties_by_id_ascending_in_every_order(
    tied: RecordStore, order: Order, expected: list[str]
) -> None:
    assert ids(tied.list("ns", order=order, limit=100)) == expected
    pages = [ids(tied.list("ns", order=order, limit=5, offset=at)) for at in range(0, 14, 5)]
    assert pages == [expected[at : at + 5] for at in range(0, 14, 5)]
