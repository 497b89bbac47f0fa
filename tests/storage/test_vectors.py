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


def test_top_k_is_highest_first_with_ties_in_index_order() -> None:
    scores = np.asarray([0.1, 0.9, 0.5, 0.9, -1.0, 0.5])
    assert top_k(scores, 3).tolist() == [1, 3, 2]
    assert top_k(scores, 10).tolist() == [1, 3, 2, 5, 0, 4]
