"""hybrid_candidates: the fusion of vector and keyword candidates, each read once."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from memstack.storage import RecordStore
from memstack.storage.backend import Gathered
from memstack.storage.hybrid import fused_candidates, hybrid_candidates, keyword_matches
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


def test_keyword_half_read_ahead_gives_the_same_candidates_and_reads_the_rest(
    filled: RecordStore,
) -> None:
    together = fused_candidates(
        filled, ["ns"], query="Alice", vector=QUERY, pool=2, keyword_weight=0.3
    )
    keywords = keyword_matches(filled, ["ns"], query="Alice", pool=2)
    assert sorted(keywords.halves[0].gathered.records) == ["rust", "tea"]  # the matches, read
    assert keywords.halves[0].gathered.nearest == []  # no vector half yet
    gathered: list[tuple[bool, bool]] = []
    original = filled.backend.gather

    def gather(*args: Any) -> Gathered:
        gathered.append((bool(args[1]), args[2] is not None))  # (words, vector)
        return original(*args)

    filled.backend.gather = gather  # type: ignore[method-assign,assignment]
    ahead = fused_candidates(
        filled,
        ["ns"],
        query="Alice",
        vector=QUERY,
        pool=2,
        keyword_weight=0.3,
        keywords=keywords,
    )
    assert gathered == [(False, True)]  # only the vector half is read
    assert [r.id for r in ahead.records] == [r.id for r in together.records]
    assert ahead.keyword == together.keyword
    np.testing.assert_allclose(ahead.similarity, together.similarity, atol=1e-6)
    np.testing.assert_allclose(ahead.relevance, together.relevance, atol=1e-6)
    by_id = dict(zip([r.id for r in ahead.records], ahead.similarity, strict=True))
    # "rust" is a keyword match but not one of the 2 nearest: its cosine is computed
    assert by_id["rust"] == pytest.approx(0.05 / np.linalg.norm(QUERY), abs=1e-6)


@pytest.mark.parametrize(
    "changed", [{"query": "Bob"}, {"pool": 2}, {"namespaces": ["ns", "other"]}]
)
def test_a_keyword_half_read_for_other_arguments_is_refused(
    filled: RecordStore, changed: dict[str, Any]
) -> None:
    keywords = keyword_matches(filled, ["ns"], query="Alice", pool=3)
    arguments: dict[str, Any] = {"namespaces": ["ns"], "query": "Alice", "pool": 3} | changed
    with pytest.raises(ValueError, match="keyword_matches"):
        fused_candidates(
            filled,
            arguments.pop("namespaces"),
            vector=QUERY,
            keyword_weight=0.3,
            keywords=keywords,
            **arguments,
        )


def test_a_keyword_half_is_left_out_of_a_pure_cosine_search(filled: RecordStore) -> None:
    keywords = keyword_matches(filled, ["ns"], query="Alice", pool=2)
    plain = fused_candidates(filled, ["ns"], query="Alice", vector=QUERY, pool=2, keyword_weight=0)
    ahead = fused_candidates(
        filled, ["ns"], query="Alice", vector=QUERY, pool=2, keyword_weight=0, keywords=keywords
    )
    assert [r.id for r in ahead.records] == [r.id for r in plain.records] == ["tea", "coffee"]
    assert ahead.keyword is None


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
