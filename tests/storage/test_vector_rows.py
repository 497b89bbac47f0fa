"""VectorRows: exact search, writes in place, compaction, and the HNSW index once large."""

from __future__ import annotations

import time

import numpy as np
import numpy.typing as npt
import pytest

from memstack.storage._vector_rows import VectorRows, load_rows

DIM = 32


def clustered(n: int, seed: int = 5) -> npt.NDArray[np.float32]:
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((20, DIM))
    rows = centres[rng.integers(0, 20, n)] + 0.3 * rng.standard_normal((n, DIM))
    unit: npt.NDArray[np.float32] = (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(
        np.float32
    )
    return unit


def filled(n: int, **options: object) -> VectorRows[str]:
    vectors: VectorRows[str] = VectorRows(DIM, **options)  # type: ignore[arg-type]
    for i, row in enumerate(clustered(n)):
        vectors.put(f"k{i}", row, None, unit=True)
    return vectors


def exact_top(vectors: VectorRows[str], rows: dict[str, npt.NDArray[np.float32]], q, k: int):
    keys = sorted(rows, key=lambda key: -float(rows[key] @ q))
    return keys[:k]


def test_exact_search_puts_and_removes() -> None:
    data = clustered(300)
    vectors: VectorRows[str] = VectorRows(DIM)
    rows = {f"k{i}": data[i] for i in range(300)}
    for key, row in rows.items():
        vectors.put(key, row, None, unit=True)
    rows["k7"] = data[8]
    vectors.put("k7", data[8] * 3, None)  # replaced, and normalized on the way in
    for key in ("k1", "k2"):
        vectors.remove(key)
        del rows[key]
    for q in clustered(5, seed=9):
        found = vectors.search(q, 10)
        assert [key for key, _ in found] == exact_top(vectors, rows, q, 10)
        assert [s for _, s in found] == pytest.approx([float(rows[k] @ q) for k, _ in found])
    assert len(vectors) == 298 and "k1" not in vectors


def test_compaction_after_many_removals_changes_no_result() -> None:
    vectors = filled(6_000)
    data = clustered(6_000)
    for i in range(0, 6_000, 3):
        vectors.remove(f"k{i}")  # well past a quarter dead: compacted on the way
    rows = {f"k{i}": data[i] for i in range(6_000) if i % 3}
    assert len(vectors.keys) < 6_000  # the dead slots are gone
    for q in clustered(5, seed=11):
        assert [key for key, _ in vectors.search(q, 10)] == exact_top(vectors, rows, q, 10)


def test_expiry_and_allowed_masks() -> None:
    vectors: VectorRows[str] = VectorRows(DIM)
    data = clustered(3)
    vectors.put("a", data[0], None, unit=True)
    vectors.put("b", data[0], 100.0, unit=True)
    vectors.put("c", data[1], None, unit=True)
    assert {k for k, _ in vectors.search(data[0], 5, vectors.live(100.0))} == {"a", "c"}
    assert {k for k, _ in vectors.search(data[0], 5, vectors.where_keys(["b"]))} == {"b"}
    assert vectors.live(99.0) is None


def test_load_rows_fills_one_chunk_from_blobs() -> None:
    data = clustered(50)
    vectors = load_rows(DIM, 50, ((f"k{i}", data[i].tobytes(), None) for i in range(50)))
    assert len(vectors) == 50
    assert vectors.search(data[3], 1)[0][0] == "k3"


def test_a_large_namespace_searches_the_index_and_keeps_it_in_step() -> None:
    vectors = filled(3_000, ann_min_rows=1_000, background=False)
    data = clustered(3_000)
    rows = {f"k{i}": data[i] for i in range(3_000)}
    queries = clustered(40, seed=13)
    found = [[k for k, _ in vectors.search(q, 10)] for q in queries]
    assert vectors.ann_ready
    hits = sum(
        len(set(f) & set(exact_top(vectors, rows, q, 10)))
        for f, q in zip(found, queries, strict=True)
    )
    assert hits / (10 * len(queries)) >= 0.95
    # writes after the build reach the index
    vectors.put("new", queries[0], None, unit=True)
    assert vectors.search(queries[0], 1)[0][0] == "new"
    vectors.remove("new")
    assert "new" not in {k for k, _ in vectors.search(queries[0], 10)}
    # an expiry mask is honoured by the index too
    vectors.put("soon", queries[1], 50.0, unit=True)
    assert "soon" not in {k for k, _ in vectors.search(queries[1], 5, vectors.live(60.0))}


def test_the_index_masks_dead_slots_even_when_the_nearest_are_dead() -> None:
    vectors = filled(3_000, ann_min_rows=1_000, background=False)
    data = clustered(3_000)
    q = clustered(1, seed=29)[0]
    vectors.search(q, 10)
    assert vectors.ann_ready
    rows = {f"k{i}": data[i] for i in range(3_000)}
    for key in exact_top(vectors, rows, q, 25):  # more than 2 k: the index fetches more
        vectors.remove(key)
        del rows[key]
    found = [k for k, _ in vectors.search(q, 10)]
    assert len(found) == 10 and set(found) <= rows.keys()
    assert len(set(found) & set(exact_top(vectors, rows, q, 10))) >= 8


def test_a_filtered_search_stays_exact() -> None:
    vectors = filled(2_000, ann_min_rows=1_000, background=False)
    q = clustered(1, seed=17)[0]
    vectors.search(q, 5)
    assert vectors.ann_ready
    only = vectors.where_keys(["k5", "k6"])
    assert {k for k, _ in vectors.search(q, 5, only, exact=True)} == {"k5", "k6"}


def test_the_index_builds_in_the_background_and_catches_up_with_writes() -> None:
    vectors = filled(3_000, ann_min_rows=1_000)
    q = clustered(1, seed=19)[0]
    assert vectors.search(q, 3)  # starts the build; answered exactly meanwhile
    vectors.put("during", q, None, unit=True)
    vectors.remove("k0")
    deadline = time.monotonic() + 60
    while not vectors.ann_ready:
        assert time.monotonic() < deadline, "the index never finished building"
        time.sleep(0.05)
    found = {k for k, _ in vectors.search(q, 10)}
    assert "during" in found
    assert "k0" not in {k for k, _ in vectors.search(clustered(3_000)[0], 10)}


def test_close_drops_the_index_and_a_later_search_starts_anew() -> None:
    vectors = filled(2_000, ann_min_rows=1_000, background=False)
    q = clustered(1, seed=23)[0]
    before = vectors.search(q, 5)
    assert vectors.ann_ready
    vectors.close()
    assert not vectors.ann_ready
    after = vectors.search(q, 5, exact=True)
    assert [k for k, _ in after] == [k for k, _ in before]
    vectors.search(q, 5)
    assert vectors.ann_ready


def test_ready_starts_a_due_build_and_says_when_it_is_done() -> None:
    assert filled(500, ann_min_rows=1_000).ready()
    vectors = filled(2_000, ann_min_rows=1_000, background=False)
    assert not vectors.ann_ready
    assert vectors.ready()
    assert vectors.ann_ready


@pytest.mark.parametrize("loaded", [True, False], ids=["one chunk", "grown in chunks"])
def test_cosines_of_keys_are_their_rows_dot_the_query(loaded: bool) -> None:
    data = clustered(500)
    if loaded:
        vectors = load_rows(
            DIM, 500, ((f"k{i}", row.tobytes(), None) for i, row in enumerate(data))
        )
    else:
        vectors = filled(500)  # put one at a time: chunks of growing size
        assert len(vectors._chunks) > 1
    vectors.remove("k7")
    query = clustered(1, seed=9)[0]
    asked = ["k499", "k3", "missing", "k7", "k250", "k0"]
    got = vectors.cosines(query, asked)
    assert list(got) == ["k499", "k3", "k250", "k0"]  # held ones, in the order asked
    for key, cosine in got.items():
        assert cosine == pytest.approx(float(data[int(key[1:])] @ query), abs=1e-6)
    assert vectors.cosines(query, []) == {}


@pytest.mark.parametrize("indexed", [False, True], ids=["scan", "hnsw"])
def test_search_scoring_is_search_and_the_cosines_of_the_keys(indexed: bool) -> None:
    vectors = filled(3_000, ann_min_rows=1_000 if indexed else 10_000, background=False)
    assert vectors.ann_ready is indexed or vectors.ready()
    vectors.remove("k10")
    query = clustered(1, seed=11)[0]
    keys = ["k5", "k2999", "k10", "nope", "k1234"]
    hits, cosines = vectors.search_scoring(query, 20, keys=keys)
    assert hits == vectors.search(query, 20)
    expected = vectors.cosines(query, keys)
    assert list(cosines) == list(expected) == ["k5", "k2999", "k1234"]
    assert list(cosines.values()) == pytest.approx(list(expected.values()), abs=1e-6)
    assert vectors.search_scoring(query, 5)[1] == {}


def test_a_row_that_expires_is_hidden_after_compaction_too() -> None:
    data = clustered(3_000)
    vectors: VectorRows[str] = VectorRows(DIM)
    for i, row in enumerate(data):
        vectors.put(f"k{i}", row, 100.0 if i == 2_999 else None, unit=True)
    assert vectors.live(50.0) is None  # nothing expires before 100: no mask
    for i in range(1_500):  # past a quarter dead: the rows are compacted
        vectors.remove(f"k{i}")
    assert len(vectors._chunks) == 1 and len(vectors.keys) < 3_000  # renumbered
    mask = vectors.live(150.0)
    assert mask is not None and not mask[vectors.keys.index("k2999")]
    hits = vectors.search(data[2_999], 3, mask)
    assert "k2999" not in [key for key, _ in hits]
