"""KeywordIndex: BM25 kept in step with writes, stemmed, with exact document frequencies."""

from __future__ import annotations

import math
import random

import pytest

from memstack.storage._keywords import KeywordIndex, load_words, stemmed_terms
from memstack.storage._text import BM25_B, BM25_K1
from tests.storage.allocated import allocated

DOCS = {
    1: "Alice adopted two cats last spring",
    2: "Bob is running a marathon in Berlin",
    3: "The cat sleeps on the sofa",
    4: "Alice runs every morning before work",
    5: "Berlin has cold winters",
}


def build(docs: dict[int, str]) -> KeywordIndex[int]:
    index: KeywordIndex[int] = KeywordIndex()
    for key, text in docs.items():
        index.put(key, text, None)
    return index


def reference_bm25(docs: dict[int, str], words: list[str]) -> dict[int, float]:
    """Okapi BM25 computed the long way, over stemmed terms."""
    terms = {k: stemmed_terms(t) for k, t in docs.items()}
    n, average = len(terms), sum(map(len, terms.values())) / len(terms)
    scores: dict[int, float] = {}
    for word in {stemmed_terms(w)[0] for w in words}:
        df = sum(1 for t in terms.values() if word in t)
        idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
        for key, t in terms.items():
            tf = t.count(word)
            if tf:
                norm = BM25_K1 * (1 - BM25_B + BM25_B * len(t) / average)
                scores[key] = scores.get(key, 0.0) + idf * tf * (BM25_K1 + 1) / (tf + norm)
    return scores


def test_scores_are_okapi_bm25_best_first() -> None:
    hits = build(DOCS).search(["alice", "berlin"], 10, None)
    expected = reference_bm25(DOCS, ["alice", "berlin"])
    assert {k: pytest.approx(s, rel=1e-5) for k, s in expected.items()} == dict(hits)
    assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)


def test_words_are_stemmed_on_both_sides() -> None:
    index = build(DOCS)
    assert {k for k, _ in index.search(["run"], 10, None)} == {2, 4}
    assert {k for k, _ in index.search(["cat"], 10, None)} == {1, 3}
    assert index.search(["sofas"], 10, None)[0][0] == 3


def test_k_expiry_and_allowed_keys_limit_what_comes_back() -> None:
    index: KeywordIndex[int] = KeywordIndex()
    index.put(1, "green tea", None)
    index.put(2, "green tea please", 100.0)
    index.put(3, "green", None)
    assert len(index.search(["green"], 2, None)) == 2
    assert {k for k, _ in index.search(["green"], 10, now=100.0)} == {1, 3}
    assert {k for k, _ in index.search(["green"], 10, now=99.0)} == {1, 2, 3}
    assert [k for k, _ in index.search(["green"], 10, None, allowed=[3, 42])] == [3]
    assert index.search(["coffee"], 10, None) == []


def test_replacing_and_removing_keep_frequencies_exact() -> None:
    index = build(DOCS)
    index.put(3, "A dog sleeps on the sofa", None)  # replaces the cat
    assert index.remove(5)
    assert not index.remove(5)
    expected_docs = {**DOCS, 3: "A dog sleeps on the sofa"}
    del expected_docs[5]
    for words in (["cat"], ["berlin"], ["sofa", "alice"], ["dog"]):
        assert dict(index.search(words, 10, None)) == pytest.approx(
            reference_bm25(expected_docs, words)
        )
    assert len(index) == 4


def test_compaction_after_many_removals_changes_no_result() -> None:
    rng = random.Random(3)
    vocabulary = [f"word{i}" for i in range(40)]
    docs = {k: " ".join(rng.choices(vocabulary, k=8)) for k in range(3_000)}
    index = build(docs)
    for key in range(0, 3_000, 2):  # well past the compaction threshold
        index.remove(key)
        del docs[key]
    for key in range(3_000, 3_100):
        docs[key] = " ".join(rng.choices(vocabulary, k=5))
        index.put(key, docs[key], None)
    fresh = build(docs)
    for words in (["word1"], ["word2", "word39"], ["word7", "word8", "word9"]):
        assert dict(index.search(words, 5_000, None)) == pytest.approx(
            dict(fresh.search(words, 5_000, None))
        )


def test_terms_held_by_one_row_score_and_compact_like_any_other() -> None:
    # each document has a word of its own (a name, a number) beside shared words: the
    # one-row terms are stored apart from the posting arrays until a second row needs one
    docs = {k: f"note {k} about topic{k % 7} and name{k}x" for k in range(4_500)}
    index = build(docs)
    index.put(10_000, "a second row for name5x and 17", None)
    docs[10_000] = "a second row for name5x and 17"
    for key in range(0, 4_500, 3):  # past the compaction threshold
        index.remove(key)
        del docs[key]
    for words in (["name5x"], ["17"], ["name1x", "topic3"], ["2000", "name2000x"]):
        assert dict(index.search(words, 5_000, None)) == pytest.approx(reference_bm25(docs, words))
    assert index.search(["name3x"], 10, None) == []  # its only row was removed


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_packing_at_any_point_changes_no_score(seed: int) -> None:
    # writes, replacements and removals, packed now and then: a term then lives in the
    # packed segment, in the write buffer, or both, and its dead rows in either
    rng = random.Random(seed)
    vocabulary = [f"w{i}" for i in range(30)] + ["run", "running", "cats"]
    docs: dict[int, str] = {}
    expiry: dict[int, float | None] = {}
    index: KeywordIndex[int] = KeywordIndex()
    for step in range(1_500):
        key = rng.randrange(400)
        if rng.random() < 0.25:
            assert index.remove(key) == (docs.pop(key, None) is not None)
            expiry.pop(key, None)
        else:
            docs[key] = " ".join([*rng.choices(vocabulary, k=rng.randint(1, 6)), f"own{step}"])
            expiry[key] = rng.choice([None, 10.0, 20.0])
            index.put(key, docs[key], expiry[key])
        if rng.random() < 0.01:
            index.pack()
        if step % 100 == 99:
            for words in (["w1"], ["w2", "run", "cat"], [f"own{step}", "w29"], ["nothing"]):
                expected = reference_bm25(docs, words) if docs else {}
                assert dict(index.search(words, 1_000, None)) == pytest.approx(expected)
                fresh = {k: s for k, s in expected.items() if (expiry[k] or 99.0) > 15.0}
                assert dict(index.search(words, 1_000, 15.0)) == pytest.approx(fresh)
                allowed = [k for k in expected if k % 3 == 0]
                kept = {k: s for k, s in expected.items() if k % 3 == 0}
                assert dict(index.search(words, 1_000, None, allowed)) == pytest.approx(kept)
    assert len(index) == len(docs)


def test_a_packed_index_holds_a_row_in_a_third_of_the_memory() -> None:
    # every document has words of its own, as names and numbers make them: one dict
    # entry and one posting object per word took about 390 bytes a row here
    docs = {f"id{k}": f"note {k} about topic{k % 7} and name{k}x" for k in range(20_000)}
    build(dict(enumerate(docs.values())))  # fills the stemmer's cache, not the index's

    def packed() -> KeywordIndex[str]:
        index: KeywordIndex[str] = KeywordIndex()
        for key, text in docs.items():
            index.put(key, text, None)
        index.pack()
        return index

    index, used = allocated(packed)
    per_row = used / len(docs)
    assert per_row < 200
    assert [key for key, _ in index.search(["name7x"], 5, None)] == ["id7"]


def test_a_search_packs_a_large_write_buffer_and_scores_the_same() -> None:
    docs = {k: f"note {k} about topic{k % 7} and name{k}x" for k in range(40_000)}
    index = build(docs)  # writes packed at 4k, 8k, 16k and 32k rows: 8k rows wait
    assert 4_096 <= index._buffered_rows() < 8_192
    few = build({k: docs[k] for k in range(5_000)})  # 904 rows wait: too few to pack
    words = ["name39999x", "topic3", "name7x"]
    found = index.search(words, 20, None)
    assert index._buffered_rows() == 0
    assert found == load_words((k, t, None) for k, t in docs.items()).search(words, 20, None)
    few.search(words, 20, None)
    assert few._buffered_rows() == 904


def test_load_words_indexes_and_packs_the_rows() -> None:
    index = load_words((k, text, None) for k, text in DOCS.items())
    assert index._buffered_rows() == 0 and len(index) == len(DOCS)
    assert dict(index.search(["cat"], 5, None)) == pytest.approx(reference_bm25(DOCS, ["cat"]))
