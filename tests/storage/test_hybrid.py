"""hybrid_candidates: the fusion of vector and keyword candidates, with the query vector
given outright or as a Future still being computed (recall embeds on another thread)."""

from __future__ import annotations

import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from memstack.storage import RecordStore
from memstack.storage.hybrid import hybrid_candidates
from tests.storage.records import rec

TEXTS = {
    "tea": ("Alice drinks green tea every morning", [1.0, 0.0, 0.0]),
    "coffee": ("Bob drinks coffee", [0.9, 0.1, 0.0]),
    "rust": ("Alice writes a compiler in Rust", [0.0, 1.0, 0.0]),
    "cat": ("the cat sleeps", [0.0, 0.0, 1.0]),
}
QUERY = np.asarray([0.95, 0.05, 0.0], dtype=np.float32)


@pytest.fixture
def filled(store: RecordStore) -> RecordStore:
    store.upsert([rec(id, text=text, embedding=v) for id, (text, v) in TEXTS.items()])
    return store


Vector = npt.NDArray[np.float32]


def _ranked(
    store: RecordStore, vector: Vector | Future[Vector]
) -> list[tuple[str, float, float | None]]:
    hits = hybrid_candidates(
        store,
        ["ns"],
        query="Alice",
        vector=vector,
        pool=3,
        keyword_weight=0.3,
    )
    return [(h.record.id, round(h.relevance, 6), h.keyword) for h in hits]


def test_a_future_vector_ranks_as_the_vector_itself(filled: RecordStore) -> None:
    expected = _ranked(filled, QUERY)
    assert [id for id, _, _ in expected][:2] == ["tea", "coffee"]
    future: Future[Vector] = Future()
    future.set_result(QUERY)
    assert _ranked(filled, future) == expected


def test_keyword_candidates_are_fetched_before_the_vector_is_awaited(
    filled: RecordStore,
) -> None:
    """The keyword half runs while the embedding is still being computed."""
    release = threading.Event()
    searched: list[str] = []
    original = filled.text_ids

    def text_ids(*args: Any, **kwargs: Any) -> list[tuple[str, float]]:
        searched.append("keywords")
        release.set()  # the "embedding" may finish only once keywords were searched
        return original(*args, **kwargs)

    filled.text_ids = text_ids  # type: ignore[method-assign]

    def embed() -> Vector:
        assert release.wait(5), "the keyword search did not run before the vector was needed"
        return QUERY

    with ThreadPoolExecutor(1) as pool:
        ranked = _ranked(filled, pool.submit(embed))
    assert searched == ["keywords"]
    assert ranked == _ranked(filled, QUERY)


def test_an_embedding_failure_reaches_the_caller(filled: RecordStore) -> None:
    future: Future[Vector] = Future()
    future.set_exception(RuntimeError("model crashed"))
    with pytest.raises(RuntimeError, match="model crashed"):
        _ranked(filled, future)
