"""VectorRows orders equal cosines by key on each of its paths: the exact scan (masked or
not), ``nearest``, and the HNSW index's hits."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from memstack.storage._vector_rows import VectorRows

DIM = 8


def _rows(
    tied: int, others: int, **options: object
) -> tuple[VectorRows[str], npt.NDArray[np.float32]]:
    """``tied`` rows of one vector under shuffled keys "t<i>", beside ``others`` random
    rows; and that vector."""
    rng = np.random.default_rng(28)
    same = rng.standard_normal(DIM).astype(np.float32)
    keys = [f"t{i}" for i in range(tied)]
    rng.shuffle(keys)
    vectors: VectorRows[str] = VectorRows(DIM, **options)  # type: ignore[arg-type]
    for key in keys:
        vectors.put(key, same, None)
    for i in range(others):
        vectors.put(f"o{i}", rng.standard_normal(DIM).astype(np.float32), None)
    return vectors, same / np.linalg.norm(same)


def test_the_exact_scan_keeps_the_smallest_tied_keys() -> None:
    vectors, query = _rows(30, 50)
    smallest = sorted(f"t{i}" for i in range(30))[:7]
    assert [key for key, _ in vectors.search(query, 7)] == smallest
    masked = vectors.where_keys([f"t{i}" for i in range(30)] + ["o1"])
    assert [key for key, _ in vectors.search(query, 7, masked, exact=True)] == smallest
    (nearest,) = vectors.nearest(query[None, :])
    assert nearest is not None and nearest[0] == "t0"


def test_the_index_hits_of_equal_cosine_come_in_key_order() -> None:
    vectors, query = _rows(60, 200, ann_min_rows=100, background=False)
    found = vectors.search(query, 20)
    assert vectors.ann_ready
    keys, scores = [key for key, _ in found], {score for _, score in found}
    assert len(found) == 20 and len(scores) == 1  # all tied: which 20, the graph chose
    assert keys == sorted(keys)
