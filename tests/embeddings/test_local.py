"""The real all-MiniLM-L6-v2 model, run locally."""

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import onnxruntime as ort  # type: ignore[import-untyped]
import pytest

from memstack.embeddings import Embedder, LocalEmbedder, embed
from memstack.embeddings.local import _session_options
from memstack.errors import ConfigError, InvalidInput

SENTENCES = [
    "The cat sits on the mat",
    "A cat is sitting on a mat",
    "Stock markets fell sharply today",
    "Shares dropped steeply on the exchange",
    "I love hiking in the mountains",
]

# Cosine similarities of SENTENCES from the fp32 model (sentence-transformers' safetensors
# weights, run by a plain numpy BERT): the int8 ONNX model must stay close to them.
FP32_REFERENCE = np.array(
    [
        [1.0000, 0.9726, 0.0526, 0.0399, -0.0676],
        [0.9726, 1.0000, 0.0598, 0.0382, -0.0562],
        [0.0526, 0.0598, 1.0000, 0.6176, -0.0416],
        [0.0399, 0.0382, 0.6176, 1.0000, -0.0282],
        [-0.0676, -0.0562, -0.0416, -0.0282, 1.0000],
    ]
)


def test_shape_dtype_and_unit_norm(local_embedder):
    vectors = local_embedder.embed_batch(SENTENCES)
    assert local_embedder.dim == 384
    assert local_embedder.model_id == "local:all-MiniLM-L6-v2"
    assert vectors.shape == (5, 384)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert isinstance(local_embedder, Embedder)


def test_similarities_match_the_fp32_model(local_embedder):
    vectors = local_embedder.embed_batch(SENTENCES)
    np.testing.assert_allclose(vectors @ vectors.T, FP32_REFERENCE, atol=0.01)


def test_paraphrase_is_much_closer_than_an_unrelated_sentence(local_embedder):
    cat, cat2, stocks = local_embedder.embed_batch(SENTENCES[:3])
    assert float(cat @ cat2) > 0.9
    assert float(cat @ stocks) < 0.2


def test_batched_and_single_vectors_agree(local_embedder):
    texts = [*SENTENCES, "a much longer sentence " * 20, "x"]
    batched = local_embedder.embed_batch(texts)
    for i, text in enumerate(texts):
        np.testing.assert_allclose(embed(local_embedder, text), batched[i], atol=1e-5)


@pytest.mark.parametrize("parallel", [1, 3])
def test_rows_come_back_in_input_order_across_internal_batches(parallel: int):
    small_batches = LocalEmbedder(batch_size=2, parallel=parallel)
    texts = ["short", "a somewhat longer text than that", "mid length", "x", "the longest one " * 5]
    vectors = small_batches.embed_batch(texts)
    expected = np.stack([embed(small_batches, text) for text in texts])
    np.testing.assert_allclose(vectors, expected, atol=1e-5)


def test_empty_input_gives_shape_zero_by_dim(local_embedder):
    assert local_embedder.embed_batch([]).shape == (0, 384)


def test_long_text_is_truncated_not_rejected(local_embedder):
    long_text = "memory " * 5000
    truncated = LocalEmbedder(max_length=256).embed_batch([long_text])
    assert truncated.shape == (1, 384)
    # Everything past 256 tokens is dropped, so a longer tail changes nothing.
    np.testing.assert_allclose(
        local_embedder.embed_batch([long_text + "unrelated words at the end"]), truncated, atol=1e-5
    )


def test_empty_string_embeds(local_embedder):
    vector = embed(local_embedder, "")
    assert np.isclose(np.linalg.norm(vector), 1.0, atol=1e-5)


def test_non_string_item_is_named(local_embedder):
    with pytest.raises(InvalidInput, match=r"texts\[2\]") as info:
        local_embedder.embed_batch(["a", "b", 3])
    assert info.value.field == "texts[2]"


def test_the_session_is_shared_between_embedders(local_embedder):
    assert LocalEmbedder()._session() is local_embedder._session()


def test_one_quiet_thread_per_call_by_default_and_threads_overridable():
    assert LocalEmbedder().threads == 1
    assert LocalEmbedder(threads=3).threads == 3
    options = _session_options(ort, 1)
    assert options.intra_op_num_threads == 1
    assert options.get_session_config_entry("session.intra_op.allow_spinning") == "0"
    assert options.get_session_config_entry("session.inter_op.allow_spinning") == "0"


def test_concurrent_calls_on_the_shared_session_match_calls_alone(local_embedder):
    alone = [local_embedder.embed_batch([s]) for s in SENTENCES]
    with ThreadPoolExecutor(4) as pool:
        together = list(pool.map(lambda s: local_embedder.embed_batch([s]), SENTENCES * 4))
    for i, vectors in enumerate(together):
        np.testing.assert_array_equal(vectors, alone[i % len(SENTENCES)])


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"max_length": 1}, "max_length"),
        ({"max_length": 513}, "max_length"),
        ({"batch_size": 0}, "batch_size"),
        ({"threads": 0}, "threads"),
        ({"parallel": 0}, "parallel"),
    ],
)
def test_bad_arguments_are_rejected(kwargs, field):
    with pytest.raises(InvalidInput) as info:
        LocalEmbedder(**kwargs)
    assert info.value.field == field


def test_a_missing_model_file_is_a_config_error(tmp_path):
    embedder = LocalEmbedder(model_path=tmp_path / "nope.onnx")
    assert embedder.model_id == "local:nope.onnx"
    with pytest.raises(ConfigError, match="cannot read model_path"):
        embedder.embed_batch(["hello"])


def test_a_file_that_is_not_onnx_is_a_config_error(tmp_path):
    path = tmp_path / "broken.onnx"
    path.write_bytes(b"not a model")
    with pytest.raises(ConfigError, match="onnxruntime cannot load"):
        LocalEmbedder(model_path=path).embed_batch(["hello"])


def test_a_batch_holds_texts_of_similar_length_only():
    from memstack.embeddings.local import _batches

    lengths = [10, 100, 11, 12, 60, 13, 14, 70]
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    batches = _batches(order, lengths, size=3)
    assert [[lengths[i] for i in b] for b in batches] == [[10, 11, 12], [13, 14], [60, 70], [100]]
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))


def test_tokenizing_starts_no_threads():
    """A call tokenizes on its own thread. The tokenizer's ``encode_batch`` runs on a
    thread pool of its own that it starts on first use, and a server's model lane then
    waits on threads the scheduler puts on a busy core. Counted in a fresh process,
    where nothing has started that pool yet."""
    script = (
        "import os\n"
        "from memstack.embeddings import LocalEmbedder\n"
        "e = LocalEmbedder(parallel=1)\n"
        "e.dim\n"  # the session and its threads, before any text
        "before = len(os.listdir('/proc/self/task'))\n"
        "e.embed_batch([f'text number {i} of a batch' for i in range(8)])\n"
        "print(before, len(os.listdir('/proc/self/task')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    )
    before, after = (int(n) for n in done.stdout.split())
    assert after == before
