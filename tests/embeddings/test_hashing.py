import subprocess
import sys

import numpy as np
import pytest

from memstack.embeddings import HashEmbedder
from memstack.errors import InvalidInput

TEXTS = ["the cat sat on the mat", "the cat sat on a mat", "stock markets fell sharply today", ""]


def test_vectors_are_unit_float32_of_the_chosen_dim():
    vectors = HashEmbedder(dim=16).embed_batch(TEXTS)
    assert vectors.shape == (4, 16)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-6)


def test_equal_texts_give_equal_vectors_and_order_does_not_matter():
    embedder = HashEmbedder()
    forward = embedder.embed_batch(TEXTS)
    backward = embedder.embed_batch(TEXTS[::-1])[::-1]
    np.testing.assert_array_equal(forward, backward)
    np.testing.assert_array_equal(forward[0], HashEmbedder().embed_batch([TEXTS[0]])[0])


def test_vectors_are_the_same_in_another_process():
    """No salted hash(): a fresh interpreter with another PYTHONHASHSEED agrees."""
    code = (
        "from memstack.embeddings import HashEmbedder;"
        "print(HashEmbedder().embed_batch(['the cat sat on the mat'])[0].tobytes().hex())"
    )
    env = {"PYTHONHASHSEED": "12345", "PATH": ""}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    here = HashEmbedder().embed_batch(["the cat sat on the mat"])[0].tobytes().hex()
    assert out.stdout.strip() == here


def test_similar_texts_are_closer_than_unrelated_ones():
    cat, cat2, stocks, _ = HashEmbedder().embed_batch(TEXTS)
    assert float(cat @ cat2) > 0.8
    assert float(cat @ stocks) < 0.3


def test_case_and_spacing_do_not_matter():
    a, b = HashEmbedder().embed_batch(["The  Cat", "the cat"])
    np.testing.assert_array_equal(a, b)


def test_empty_input_gives_zero_rows():
    assert HashEmbedder(dim=8).embed_batch([]).shape == (0, 8)


def test_model_id_names_the_dimension():
    assert HashEmbedder(dim=24).model_id == "hash:24"


@pytest.mark.parametrize("dim", [0, -1, True, 2.5])
def test_bad_dim_is_rejected(dim):
    with pytest.raises(InvalidInput, match="dim is"):
        HashEmbedder(dim=dim)


def test_non_string_item_is_named():
    with pytest.raises(InvalidInput, match=r"texts\[1\]"):
        HashEmbedder().embed_batch(["ok", 7])  # type: ignore[list-item]
