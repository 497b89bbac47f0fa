"""hybrid_candidates: the fusion of vector and keyword candidates, each read once."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from memstack.storage import RecordStore
from memstack.storage.backend import Gathered
from memstack.storage.hybrid import fused_candidates, hybrid_candidates
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


def test_candidates_of_both_kinds_fused_and_read_in_one_gather(filled: RecordStore) -> None:
    gathered: list[Gathered] = []
    original = filled.backend.gather

    def gather(*args: Any) -> Gathered:
        got = original(*args)
        gathered.append(got)
        return got

    filled.backend.gather = gather  # type: ignore[method-assign,assignment]
    ranked = _ranked(filled, QUERY)
    by_id = {id: (relevance, keyword) for id, relevance, keyword in ranked}
    assert [id for id, _, _ in ranked][:2] == ["tea", "coffee"]
    assert by_id["rust"][1] is not None and by_id["rust"][1] > 0  # a keyword match
    assert by_id["coffee"][1] == 0.0  # nearest, no keyword
    assert len(gathered) == 1  # both kinds in one read of the namespace
    assert sorted(gathered[0].records) == sorted(by_id)


def test_changing_a_hits_record_changes_nothing_stored(store: RecordStore) -> None:
    store.upsert(
        [rec("tea", text="Alice drinks tea", embedding=[1.0, 0.0], metadata={"tags": ["a"]})]
    )
    vector = np.asarray([1.0, 0.0], dtype=np.float32)
    for _ in range(2):  # the second read comes from the memo, where a cache has one
        hit = hybrid_candidates(
            store, ["ns"], query="tea", vector=vector, pool=2, keyword_weight=0.3
        )
        assert hit[0].record.metadata == {"tags": ["a"]}
        hit[0].record.metadata["tags"].append("b")  # type: ignore[union-attr]
        hit[0].record.metadata["new"] = 1


def test_a_namespace_named_twice_gives_each_candidate_once(filled: RecordStore) -> None:
    once = hybrid_candidates(
        filled, ["ns"], query="Alice", vector=QUERY, pool=3, keyword_weight=0.3
    )
    twice = hybrid_candidates(
        filled, ["ns", "ns"], query="Alice", vector=QUERY, pool=3, keyword_weight=0.3
    )
    assert [(h.record.id, h.relevance) for h in twice] == [(h.record.id, h.relevance) for h in once]


def test_ranked_copies_a_record_only_when_its_hit_is_taken(
    filled: RecordStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memstack.storage.types import own_copy as original

    copied: list[str] = []

    def own_copy(record: Any) -> Any:
        copied.append(record.id)
        return original(record)

    monkeypatch.setattr("memstack.storage.hybrid.own_copy", own_copy)
    found = fused_candidates(
        filled, ["ns"], query="Alice", vector=QUERY, pool=4, keyword_weight=0.3
    )
    ranked = found.ranked()
    first, second = next(ranked), next(ranked)
    assert copied == [first.record.id, second.record.id] == ["tea", "coffee"]
    assert len(found.records) == 4  # two more candidates, never copied
    assert [h.record.id for h in found.hits()] == [h.record.id for h in _hits(filled)]


def _hits(store: RecordStore) -> list[Any]:
    return hybrid_candidates(store, ["ns"], query="Alice", vector=QUERY, pool=4, keyword_weight=0.3)
