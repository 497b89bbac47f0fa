"""RecordStore.gather: a hybrid search's keyword matches, nearest records, the keyword
matches' cosines and the records of both, read together; the same on every backend."""

from __future__ import annotations

from itertools import pairwise

import numpy as np
import pytest

from memstack.clock import ManualClock
from memstack.errors import ConfigError, InvalidInput
from memstack.storage import Filter, RecordStore
from tests.storage.records import T0, rec

QUERY = [0.9, 0.3, 0.1]
"""Cosines with it, no two within 1e-3 (a tie would be decided by id): gone 0.970,
tea 0.943, coffee 0.818, rust 0.314, cat 0.105."""


@pytest.fixture
def filled(store: RecordStore) -> RecordStore:
    store.upsert(
        [
            rec("tea", text="Alice drinks green tea", embedding=[1.0, 0.0, 0.0]),
            rec("coffee", text="Bob drinks coffee", embedding=[0.6, 0.8, 0.0]),
            rec("rust", text="Alice writes Rust", embedding=[0.0, 1.0, 0.0]),
            rec("note", text="Alice left a note"),  # no embedding
            rec("cat", text="the cat sleeps", embedding=[0.0, 0.0, 1.0]),
            rec("gone", text="Alice once said", embedding=[1.0, 0.1, 0.0], expires_at=T0 + 10),
        ],
        model_id="m",
    )
    return store


def _cosine(a: list[float], b: list[float]) -> float:
    x, y = np.asarray(a), np.asarray(b)
    return float(x @ y / np.linalg.norm(x) / np.linalg.norm(y))


def test_gather_is_the_two_searches_and_their_records(filled: RecordStore) -> None:
    got = filled.gather("ns", query="Alice", vector=QUERY, k=3, model_id="m")
    assert got.matched == filled.text_ids("ns", "Alice", k=3)
    nearest = filled.vector_ids("ns", QUERY, k=3)
    assert [id for id, _ in got.nearest] == [id for id, _ in nearest]
    assert [s for _, s in got.nearest] == pytest.approx([s for _, s in nearest], abs=1e-6)
    ids = {id for id, _ in got.matched} | {id for id, _ in got.nearest}
    assert set(got.records) == ids
    for id, record in got.records.items():
        assert record.id == id and record.text == filled.get("ns", [id])[0].text
    vectors = {"tea": [1.0, 0.0, 0.0], "rust": [0.0, 1.0, 0.0], "gone": [1.0, 0.1, 0.0]}
    matched_with_vectors = {id for id, _ in got.matched} & set(vectors)
    assert set(got.cosines) == matched_with_vectors  # "note" has no embedding
    for id in matched_with_vectors:
        assert got.cosines[id] == pytest.approx(_cosine(vectors[id], QUERY), abs=1e-5)


def test_gather_without_query_or_vector_skips_that_half(filled: RecordStore) -> None:
    words_only = filled.gather("ns", query="Alice", vector=None, k=3)
    assert words_only.matched and not words_only.nearest and not words_only.cosines
    vector_only = filled.gather("ns", query=None, vector=QUERY, k=2)
    assert not vector_only.matched and [id for id, _ in vector_only.nearest] == ["gone", "tea"]
    ranked = [score for _, score in filled.vector_ids("ns", QUERY, k=5)]
    assert all(a - b > 1e-3 for a, b in pairwise(ranked))  # no tie decides the order
    assert set(vector_only.records) == {"gone", "tea"}
    nothing = filled.gather("ns", query="", vector=None, k=3)
    assert (nothing.matched, nothing.nearest, nothing.records) == ([], [], {})


def test_gather_hides_expired_records_unless_asked(filled: RecordStore, clock: ManualClock) -> None:
    before = filled.gather("ns", query="Alice", vector=QUERY, k=6)
    assert "gone" in before.records
    clock.advance(60)
    after = filled.gather("ns", query="Alice", vector=QUERY, k=6)
    assert "gone" not in after.records
    assert "gone" not in {id for id, _ in after.matched + after.nearest}
    kept = filled.gather(
        "ns", query="Alice", vector=QUERY, k=6, filter=Filter(include_expired=True)
    )
    assert "gone" in kept.records


def test_gather_applies_the_filter_to_both_halves(filled: RecordStore) -> None:
    got = filled.gather(
        "ns", query="Alice drinks", vector=QUERY, k=6, filter=Filter(ids=("coffee",))
    )
    assert [id for id, _ in got.matched] == ["coffee"]
    assert [id for id, _ in got.nearest] == ["coffee"]
    assert set(got.records) == {"coffee"}


def test_gather_refuses_another_dimension_or_model(filled: RecordStore) -> None:
    with pytest.raises(InvalidInput) as wrong_size:
        filled.gather("ns", query="Alice", vector=[1.0, 0.0], k=3)
    assert wrong_size.value.field == "vector"
    with pytest.raises(ConfigError, match=r"'m'.*'other'"):
        filled.gather("ns", query="Alice", vector=QUERY, k=3, model_id="other")
    with pytest.raises(InvalidInput) as bad_k:
        filled.gather("ns", query="Alice", vector=QUERY, k=0)
    assert bad_k.value.field == "k"


def test_gather_of_an_empty_namespace_is_empty(store: RecordStore) -> None:
    got = store.gather("nothing-here", query="Alice", vector=QUERY, k=3, model_id="m")
    assert (got.matched, got.nearest, got.cosines, got.records) == ([], [], {}, {})
