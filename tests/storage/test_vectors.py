"""The vector helpers the scans share."""

from __future__ import annotations

import numpy as np
import pytest

from memstack.storage._vectors import normalized, top_k, unit


def test_unit_is_normalized_bit_for_bit() -> None:
    rng = np.random.default_rng(3)
    for scale in (1e-3, 1.0, 37.0, 1e4):
        for _ in range(300):
            vector = (rng.standard_normal(384) * scale).astype(np.float32)
            assert np.array_equal(unit(vector), normalized(vector))
    assert unit(np.asarray([3.0, 4.0], dtype=np.float32)).tolist() == pytest.approx([0.6, 0.8])


def test_top_k_is_highest_first_with_ties_by_key_even_at_the_k_boundary() -> None:
    scores = np.asarray([0.1, 0.9, 0.5, 0.9, -1.0, 0.5])
    keys = ["f", "e", "d", "c", "b", "a"]  # index order is the reverse of key order
    assert top_k(scores, 3, keys.__getitem__).tolist() == [3, 1, 5]
    assert top_k(scores, 10, keys.__getitem__).tolist() == [3, 1, 5, 2, 0, 4]
    tied = np.zeros(50)
    names = [f"r{i}" for i in range(50)]
    assert [names[i] for i in top_k(tied, 3, names.__getitem__)] == ["r0", "r1", "r10"]


def test_top_k_asks_for_keys_only_when_scores_tie() -> None:
    def no_key(i: int) -> object:
        raise AssertionError(f"key({i}) asked without a tie")

    assert top_k(np.asarray([0.3, 0.1, 0.2, 0.4]), 2, no_key).tolist() == [3, 0]
    assert top_k(np.asarray([0.3, 0.1, 0.3]), 1, lambda i: -i).tolist() == [2]
