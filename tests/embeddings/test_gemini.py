"""GeminiEmbedder against a fake Gemini API on a real local HTTP server, with requests,
replies and error bodies shaped like the real API's (tests/embeddings/gemini_server.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memstack.embeddings import Embedder, GeminiEmbedder
from memstack.errors import ConfigError, InvalidInput, StoreUnavailable
from memstack.longterm import Collection, LongTermMemory
from memstack.storage import open_record_store
from tests.embeddings.gemini_server import (
    KEY,
    FakeGemini,
    bad_request,
    google_error,
    leaked_key,
    quota_exceeded,
    vector,
)


@pytest.fixture
def _forbid_real_http() -> None:
    """These tests talk real HTTP to a server on this machine: the package conftest's
    refusal of httpx's real transport is lifted (the root one still refuses the network)."""


@pytest.fixture
def gemini() -> Iterator[FakeGemini]:
    with FakeGemini().running() as fake:
        yield fake


def embedder(fake: FakeGemini, **kwargs: Any) -> GeminiEmbedder:
    kwargs.setdefault("api_key", KEY)
    kwargs.setdefault("dimensions", 8)
    return GeminiEmbedder(base_url=fake.url, **kwargs)


def normalized(rows: list[list[float]]) -> np.ndarray:
    matrix = np.array(rows, dtype=np.float64)
    unit: np.ndarray = matrix / np.linalg.norm(matrix, axis=1, keepdims=True)
    return unit


def test_the_request_is_shaped_like_gemini_and_rows_are_normalized(gemini: FakeGemini):
    with embedder(gemini, task_type="SEMANTIC_SIMILARITY") as model:
        vectors = model.embed_batch(["hi", "hello"])
    (seen,) = gemini.requests
    assert seen.path == "/v1beta/models/gemini-embedding-001:batchEmbedContents"  # no key in it
    assert seen.headers["x-goog-api-key"] == KEY
    assert seen.headers["content-type"] == "application/json"
    assert seen.body == {
        "requests": [
            {
                "model": "models/gemini-embedding-001",
                "content": {"parts": [{"text": text}]},
                "taskType": "SEMANTIC_SIMILARITY",
                "outputDimensionality": 8,
            }
            for text in ("hi", "hello")
        ]
    }
    assert vectors.dtype == np.float32 and vectors.shape == (2, 8)
    np.testing.assert_allclose(
        vectors, normalized([vector("hi", 8), vector("hello", 8)]), rtol=1e-6
    )
    assert model.model_id == "gemini:gemini-embedding-001" and model.dim == 8
    assert isinstance(model, Embedder)


def test_batches_hold_at_most_100_texts_and_keep_the_order(gemini: FakeGemini):
    texts = [f"text number {i}" + "!" * (i % 7) for i in range(250)]
    with embedder(gemini) as model:
        vectors = model.embed_batch(texts)
    assert [len(seen.body["requests"]) for seen in gemini.requests] == [100, 100, 50]
    np.testing.assert_allclose(vectors, normalized([vector(t, 8) for t in texts]), rtol=1e-6)


def test_the_api_refuses_a_batch_of_101_so_the_embedder_does_too(gemini: FakeGemini):
    with pytest.raises(InvalidInput, match="at most 100") as excinfo:
        embedder(gemini, batch_size=101)
    assert excinfo.value.field == "batch_size"
    # what the API answers to 101 requests, were they sent
    with embedder(gemini, batch_size=100) as model:
        gemini.fail_next(
            bad_request(
                "* BatchEmbedContentsRequest.requests: at most 100 requests can be in one batch"
            )
        )
        with pytest.raises(InvalidInput, match="at most 100 requests can be in one batch"):
            model.embed_batch(["x"])


def test_dim_is_known_for_gemini_models_and_learnt_for_others(gemini: FakeGemini):
    native = GeminiEmbedder(api_key=KEY, base_url=gemini.url)
    assert native.dim == 3072 and gemini.requests == []  # known: no request
    older = GeminiEmbedder(api_key=KEY, model="models/text-embedding-004", base_url=gemini.url)
    assert (older.model, older.model_id, older.dim) == (
        "text-embedding-004",
        "gemini:text-embedding-004",
        768,
    )
    newer = GeminiEmbedder(api_key=KEY, model="gemini-embedding-2", base_url=gemini.url)
    assert newer.dim == 12 and len(gemini.requests) == 1  # learnt from one probe
    assert newer.embed_batch([]).shape == (0, 12)
    for model in (native, older, newer):
        model.close()


@pytest.mark.parametrize(
    ("setup", "error", "parts"),
    [
        ({"api_key": "AIza-wrong"}, ConfigError, ["400", "API key not valid", "GEMINI_API_KEY"]),
        ({"reply": leaked_key()}, ConfigError, ["403", "reported as leaked", "GEMINI_API_KEY"]),
        (
            {"model": "text-embedding-9"},
            ConfigError,
            ["404", "models/text-embedding-9 is not found", "MEMSTACK_MEMORY_EMBEDDING_MODEL"],
        ),
        (
            {
                "reply": google_error(
                    400, "FAILED_PRECONDITION", "User location is not supported for the API use."
                )
            },
            ConfigError,
            ["User location is not supported", "billing"],
        ),
        (
            {
                "reply": bad_request(
                    "* BatchEmbedContentsRequest.requests[0].content.parts: "
                    "contents.parts must not be empty."
                )
            },
            InvalidInput,
            ["contents.parts must not be empty", "refused the texts"],
        ),
        (
            {
                "reply": google_error(
                    503, "UNAVAILABLE", "The model is overloaded. Please try again later."
                )
            },
            StoreUnavailable,
            ["503", "model is overloaded", "retry later"],
        ),
        (
            {"reply": (200, {"predictions": [[1.0, 2.0]]})},
            StoreUnavailable,
            ["without an embeddings list"],
        ),
    ],
    ids=[
        "wrong-key",
        "leaked-key",
        "unknown-model",
        "location",
        "bad-texts",
        "overloaded",
        "other-shape",
    ],
)
def test_gemini_errors_become_memstack_errors(
    gemini: FakeGemini, setup: dict[str, Any], error: type[Exception], parts: list[str]
):
    reply = setup.pop("reply", None)
    if reply is not None:
        gemini.fail_next(reply)
    with embedder(gemini, **setup) as model:
        with pytest.raises(error) as excinfo:
            model.embed_batch(["hello"])
    message = str(excinfo.value)
    assert all(part in message for part in parts), message
    assert KEY not in message and "AIza-wrong" not in message  # the key never shows


def test_a_blank_key_is_refused_before_any_request(gemini: FakeGemini):
    with pytest.raises(ConfigError, match="GEMINI_API_KEY"):
        GeminiEmbedder(api_key="  ", base_url=gemini.url)
    assert gemini.requests == []


def test_a_quota_429_is_waited_out_for_the_delay_gemini_names(gemini: FakeGemini):
    waits: list[float] = []
    gemini.fail_next(quota_exceeded("7s"), quota_exceeded("0.5s"))
    with embedder(gemini, sleep=waits.append) as model:
        vectors = model.embed_batch(["hello"])
    assert waits == [7.0, 0.5] and len(gemini.requests) == 3
    np.testing.assert_allclose(vectors, normalized([vector("hello", 8)]), rtol=1e-6)


def test_a_429_without_a_delay_backs_off(gemini: FakeGemini):
    waits: list[float] = []
    gemini.fail_next(quota_exceeded(None), quota_exceeded(None))
    with embedder(gemini, sleep=waits.append) as model:
        model.embed_batch(["hello"])
    assert waits == [1.0, 2.0]


def test_a_quota_that_stays_used_up_gives_up_after_the_retries(gemini: FakeGemini):
    waits: list[float] = []
    gemini.fail_next(*[quota_exceeded("7s")] * 3)
    with embedder(gemini, sleep=waits.append, max_retries=2) as model:
        with pytest.raises(StoreUnavailable) as excinfo:
            model.embed_batch(["hello"])
    message = str(excinfo.value)
    assert "429" in message and "quota is used up" in message and "retry in 7 s" in message
    assert "embed_content_free_tier_requests" in message  # Google's message names the quota
    assert waits == [7.0, 7.0] and len(gemini.requests) == 3


def test_a_long_wait_is_not_waited_out(gemini: FakeGemini):
    """A daily quota asks for hours: the call fails at once, saying how long."""
    waits: list[float] = []
    gemini.fail_next(quota_exceeded("52758s"))
    with embedder(gemini, sleep=waits.append) as model:
        with pytest.raises(StoreUnavailable, match="retry in 52758 s"):
            model.embed_batch(["hello"])
    assert waits == [] and len(gemini.requests) == 1


async def test_a_namespace_records_the_gemini_model_it_was_written_with(
    gemini: FakeGemini, tmp_path: Path
):
    store = open_record_store(f"sqlite:///{tmp_path / 'memstack.db'}")
    store.setup()
    collection = Collection(user_id="u")
    with embedder(gemini) as model, embedder(gemini, model="text-embedding-004") as other:
        memory = LongTermMemory(collection=collection, store=store, embedder=model)
        await memory.remember("Alice prefers green tea")
        info = store.namespace_info(collection.name)
        assert info is not None and info.model_id == "gemini:gemini-embedding-001"
        assert [r.text for r in await memory.recall("green tea")] == ["Alice prefers green tea"]
        switched = LongTermMemory(collection=collection, store=store, embedder=other)
        with pytest.raises(ConfigError, match="gemini:gemini-embedding-001"):
            await switched.recall("tea")
    store.close()
