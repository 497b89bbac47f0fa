"""CachedEmbedder: a text embedded once is served from the cache, least recently used out."""

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from memstack.embeddings import CachedEmbedder, Embedder, HashEmbedder
from memstack.errors import InvalidInput
from tests.embeddings.recording import RecordingEmbedder


def test_a_repeated_text_is_not_embedded_again():
    inner = RecordingEmbedder(dim=16)
    cached = CachedEmbedder(inner)
    first = cached.embed_batch(["alpha", "beta"])
    again = cached.embed_batch(["beta", "gamma", "alpha"])
    assert inner.seen == ["alpha", "beta", "gamma"]
    np.testing.assert_array_equal(
        again, HashEmbedder(dim=16).embed_batch(["beta", "gamma", "alpha"])
    )
    np.testing.assert_array_equal(first, again[[2, 0]])


def test_duplicates_within_one_batch_are_embedded_once():
    inner = RecordingEmbedder(dim=16)
    vectors = CachedEmbedder(inner).embed_batch(["x", "y", "x"])
    assert inner.seen == ["x", "y"]
    np.testing.assert_array_equal(vectors[0], vectors[2])


def test_the_least_recently_used_text_is_evicted_beyond_max_entries():
    inner = RecordingEmbedder(dim=16)
    cached = CachedEmbedder(inner, max_entries=2)
    cached.embed_batch(["a", "b"])
    cached.embed_batch(["a"])  # a is now more recent than b
    cached.embed_batch(["c"])  # evicts b
    assert len(cached) == 2
    inner.batches.clear()
    cached.embed_batch(["a", "c", "b"])
    assert inner.seen == ["b"]


def test_texts_longer_than_max_text_chars_are_not_cached():
    inner = RecordingEmbedder(dim=16)
    cached = CachedEmbedder(inner, max_text_chars=5)
    cached.embed_batch(["short", "longer"])
    cached.embed_batch(["short", "longer"])
    assert inner.seen == ["short", "longer", "longer"]
    assert len(cached) == 1


def test_changing_a_result_does_not_change_the_cache():
    cached = CachedEmbedder(RecordingEmbedder(dim=16))
    vectors = cached.embed_batch(["alpha"])
    vectors[0, :] = 0
    np.testing.assert_array_equal(
        cached.embed_batch(["alpha"]), HashEmbedder(dim=16).embed_batch(["alpha"])
    )


def test_threads_get_the_same_vectors_as_the_inner_embedder():
    cached = CachedEmbedder(RecordingEmbedder(dim=16), max_entries=8)
    texts = [f"text {i % 12}" for i in range(200)]
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda t: cached.embed_batch([t, "shared"]), texts))
    alone = HashEmbedder(dim=16)
    for text, result in zip(texts, results, strict=True):
        np.testing.assert_array_equal(result, alone.embed_batch([text, "shared"]))
    assert len(cached) <= 8


def test_same_space_as_the_inner_embedder_and_empty_input():
    cached = CachedEmbedder(RecordingEmbedder(dim=16))
    assert (cached.dim, cached.model_id) == (16, "hash:16")
    assert cached.embed_batch([]).shape == (0, 16)
    assert isinstance(cached, Embedder)


def test_a_bad_item_is_named_and_nothing_is_cached():
    inner = RecordingEmbedder(dim=16)
    cached = CachedEmbedder(inner)
    with pytest.raises(InvalidInput, match=r"texts\[1\]"):
        cached.embed_batch(["ok", None])  # type: ignore[list-item]
    assert inner.seen == [] and len(cached) == 0


@pytest.mark.parametrize("field", ["max_entries", "max_text_chars"])
@pytest.mark.parametrize("value", [0, -3, True, 2.5])
def test_bad_bounds_are_refused(field, value):
    with pytest.raises(InvalidInput) as info:
        CachedEmbedder(HashEmbedder(), **{field: value})
    assert info.value.field == field
