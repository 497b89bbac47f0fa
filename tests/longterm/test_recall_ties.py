"""Recall orders memories of exactly equal score by id, the smaller first, on every backend."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from memstack import ManualClock
from memstack.longterm import Collection, LongTermMemory
from memstack.storage import Record, RecordStore


class _FirstAxis:
    """Embeds every query as (1, 0, 0), so the memories' cosines come out exact."""

    dim = 3
    model_id = "axis:3"

    def embed_batch(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return np.tile(np.asarray([1.0, 0.0, 0.0], dtype=np.float32), (len(texts), 1))


def _memory(store: RecordStore, at: float) -> LongTermMemory:
    """Two memories of equal score, 0.7·0.5 + 0.2·1 + 0.1·0.5, with ``keyword_weight``
    0.5: "m2" matches the query word "tea" but is orthogonal to the query (relevance
    0.5·0 + 0.5·1); "m1" matches no word but points its way (0.5·1 + 0.5·0). "m2", a
    keyword match, is gathered first."""
    memory = LongTermMemory(
        collection=Collection(user_id="alice"),
        store=store,
        embedder=_FirstAxis(),
        keyword_weight=0.5,
    )
    store.upsert(
        [
            Record(
                id=id,
                namespace=memory.namespace,
                text=text,
                created_at=at,
                updated_at=at,
                embedding=np.asarray(vector, dtype=np.float32),
            )
            for id, text, vector in (
                ("m2", "green tea", [0.0, 1.0, 0.0]),
                ("m1", "black coffee", [1.0, 0.0, 0.0]),
            )
        ],
        model_id=_FirstAxis.model_id,
    )
    return memory


async def _check(memory: LongTermMemory) -> None:
    try:
        first, second = await memory.recall("tea", k=2, touch=False)
        assert {first.scores.keyword, second.scores.keyword} == {0.0, 1.0}  # two ways to 0.5
        assert first.scores.score == second.scores.score  # an exact tie
        assert first.scores.relevance == second.scores.relevance == 0.5
        assert [first.id, second.id] == ["m1", "m2"]
        (only,) = await memory.recall("tea", k=1, touch=False)
        assert only.id == "m1"
    finally:
        memory.close()


async def test_recall_orders_an_exact_tie_by_id(store: RecordStore, clock: ManualClock) -> None:
    await _check(_memory(store, clock.now()))


async def test_recall_orders_an_exact_tie_by_id_on_sqlite_and_postgres(
    real_store: RecordStore,
) -> None:
    await _check(_memory(real_store, real_store.clock.now()))
