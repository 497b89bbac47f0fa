"""A recall reads its keyword half on a helper thread while the model embeds the query."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from memstack import ManualClock
from memstack.embeddings import HashEmbedder, Vectors
from memstack.embeddings.signal import computing
from memstack.longterm import Collection, LongTermMemory
from memstack.storage import InMemoryRecordStore
from memstack.storage.backend import Gathered


class _RecordingStore(InMemoryRecordStore):
    """Records which thread read each half of a gather."""

    def __init__(self, clock: ManualClock) -> None:
        super().__init__(clock=clock)
        self.reads: list[tuple[str, str]] = []
        self.keyword_half_read = threading.Event()

    def gather(self, namespace: Any, **kwargs: Any) -> Gathered:
        half = "keyword" if kwargs["vector"] is None else "vector"
        self.reads.append((half, threading.current_thread().name))
        got = super().gather(namespace, **kwargs)
        if half == "keyword":
            self.keyword_half_read.set()
        return got


class _AnnouncingEmbedder(HashEmbedder):
    """The hash embedder, announcing its work as the local model does before its run,
    then holding on (at most 5 s) until the keyword half has been read."""

    def __init__(self, store: _RecordingStore) -> None:
        super().__init__()
        self.store = store
        self.waited: list[bool] = []

    def embed_batch(self, texts: Sequence[str]) -> Vectors:
        computing()
        self.waited.append(self.store.keyword_half_read.wait(5))
        return super().embed_batch(texts)


TEXTS = [
    "Caroline went to the LGBTQ support group on Tuesday",
    "Melanie painted a sunrise over the lake",
    "Caroline is researching adoption agencies",
    "The support group met again in May",
]


async def _recall(embedder: HashEmbedder, store: InMemoryRecordStore, clock: ManualClock) -> Any:
    writer = LongTermMemory(
        collection=Collection(user_id="u"), store=store, embedder=HashEmbedder(), clock=clock
    )
    for text in TEXTS:
        await writer.remember(text)
    memory = LongTermMemory(
        collection=Collection(user_id="u"), store=store, embedder=embedder, clock=clock
    )
    store_reads = getattr(store, "reads", None)
    if store_reads is not None:
        store_reads.clear()
    try:
        return await memory.recall("when did Caroline go to the support group?", k=3)
    finally:
        memory.close()


async def test_the_keyword_half_is_read_on_the_helper_during_the_embedding(
    clock: ManualClock,
) -> None:
    store = _RecordingStore(clock)
    store.setup()
    embedder = _AnnouncingEmbedder(store)
    ahead = await _recall(embedder, store, clock)
    assert embedder.waited[-1] is True  # read while the embedding was still running
    (keyword_reader,) = [name for half, name in store.reads if half == "keyword"]
    (vector_reader,) = [name for half, name in store.reads if half == "vector"]
    assert keyword_reader.startswith("memstack-recall")
    assert vector_reader != keyword_reader

    plain_store = InMemoryRecordStore(clock=clock)
    plain_store.setup()
    inline = await _recall(HashEmbedder(), plain_store, clock)  # never announces
    assert [r.text for r in ahead] == [r.text for r in inline]
    np.testing.assert_allclose(
        [r.scores.score for r in ahead], [r.scores.score for r in inline], atol=1e-6
    )
    assert [r.scores.keyword for r in ahead] == [r.scores.keyword for r in inline]
