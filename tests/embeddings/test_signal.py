"""when_computing: an embedder says when it starts work that holds no GIL."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from memstack.embeddings import BatchingEmbedder, CachedEmbedder, HashEmbedder, LocalEmbedder
from memstack.embeddings.signal import computing, when_computing


def test_the_callback_is_called_only_inside_its_block() -> None:
    calls: list[int] = []
    computing()
    with when_computing(lambda: calls.append(1)):
        computing()
    computing()
    assert calls == [1]


def test_another_threads_embedding_calls_no_ones_callback() -> None:
    calls: list[int] = []
    with when_computing(lambda: calls.append(1)), ThreadPoolExecutor(1) as pool:
        pool.submit(computing).result()
    assert calls == []


def test_the_local_model_calls_it_before_its_run_through_the_servers_wrappers(
    local_embedder: LocalEmbedder,
) -> None:
    calls: list[int] = []
    wrapped = CachedEmbedder(BatchingEmbedder(local_embedder, max_wait_ms=0))
    with when_computing(lambda: calls.append(1)):
        wrapped.embed_batch(["how long have you been married?"])
    assert calls == [1]
    with when_computing(lambda: calls.append(2)):
        wrapped.embed_batch(["how long have you been married?"])  # a cache hit: no run
        HashEmbedder().embed_batch(["no model"])  # nothing to announce
    assert calls == [1]
