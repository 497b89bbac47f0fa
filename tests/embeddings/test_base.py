import numpy as np
import pytest

from memstack.embeddings import Embedder, HashEmbedder, embed, l2_normalize
from memstack.embeddings.base import check_texts
from memstack.errors import InvalidInput


def test_embed_returns_the_row_embed_batch_gives():
    embedder = HashEmbedder(dim=32)
    vector = embed(embedder, "hello world")
    assert vector.shape == (32,)
    np.testing.assert_array_equal(vector, embedder.embed_batch(["x", "hello world"])[1])


def test_embed_rejects_a_non_string():
    with pytest.raises(InvalidInput, match="text is a int") as info:
        embed(HashEmbedder(), 3)  # type: ignore[arg-type]
    assert info.value.field == "text"


@pytest.mark.parametrize(
    ("texts", "field"),
    [
        (["a", 1, "c"], "texts[1]"),
        (["a", "b", None], "texts[2]"),
        ([b"bytes"], "texts[0]"),
        ("one string", "texts"),
    ],
)
def test_check_texts_names_the_bad_item(texts, field):
    with pytest.raises(InvalidInput) as info:
        check_texts(texts)
    assert info.value.field == field
    assert field in str(info.value)


def test_check_texts_accepts_any_sequence_of_str():
    assert check_texts(("a", "b")) == ["a", "b"]


def test_l2_normalize_makes_unit_rows_and_leaves_zero_rows_zero():
    out = l2_normalize(np.array([[3.0, 4.0], [0.0, 0.0]]))
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, [[0.6, 0.8], [0.0, 0.0]], rtol=1e-6)


def test_hash_embedder_satisfies_the_protocol():
    assert isinstance(HashEmbedder(), Embedder)
