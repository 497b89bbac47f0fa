"""hybrid_candidates: the fusion of vector and keyword candidates, each read once."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from memstack.storage import RecordStore
from memstack.storage.hybrid import hybrid_candidates
from tests.storage.records import rec

TEXTS = {
    "tea": ("Alice drinks green tea every morning", [1.0, 0.0, 0.0]),
    "coffee": ("Bob drinks coffee", [0.9, 0.1, 0.0]),
    "rust": ("Alice writes a compiler in Rust", [0.0, 1.0, 0.0]),
    "cat": ("the cat sleeps", [0.0, 0.0, 1.0]),
}
QUERY = np.asarray([0.95, 0.05, 0.0], dtype=np.float32)


@pytest.fixture
def filled(store: RecordStore) -> RecordStore:
    store.upsert([rec(id, text=text, embedding=v) for id, (text, v) in TEXTS.items()])
    return store


Vector = npt.NDArray[np.float32]


def _ranked(store: RecordStore, vector: Vector) -> list[tuple[str, float, float | None]]:
    hits = hybrid_candidates(
        store,
        ["ns"],
        query="Alice",
        vector=vector,
        pool=3,
        keyword_weight=0.3,
    )
    return [(h.record.id, round(h.relevance, 6), h.keyword) for h in hits]


def test_candidates_of_both_kinds_fused_and_each_fetched_once(filled: RecordStore) -> None:
    fetched: list[list[str]] = []
    original = filled.fetch

    def fetch(namespace: Any, ids: Any, filter: Any = None) -> Any:
        fetched.append(list(ids))
        return original(namespace, ids, filter)

    filled.fetch = fetch  # type: ignore[method-assign]
    ranked = _ranked(filled, QUERY)
    by_id = {id: (relevance, keyword) for id, relevance, keyword in ranked}
    assert [id for id, _, _ in ranked][:2] == ["tea", "coffee"]
    assert by_id["rust"][1] is not None and by_id["rust"][1] > 0  # a keyword match
    assert by_id["coffee"][1] == 0.0  # nearest, no keyword
    every = [id for ids in fetched for id in ids]
    assert sorted(every) == sorted(set(every)) == sorted(by_id)
    assert len(fetched) == 1  # both kinds in one read of the namespace
