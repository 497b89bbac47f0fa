"""BatchingEmbedder: concurrent callers share inner calls and each gets exactly its rows."""

import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from memstack.embeddings import BatchingEmbedder, Embedder, HashEmbedder, Vectors
from memstack.errors import InvalidInput, StoreUnavailable
from tests.embeddings.recording import RecordingEmbedder, embed_within


def texts_of(caller: int) -> list[str]:
    return [f"caller {caller} text {i}" for i in range(3)]


def at_once(count: int, call: Callable[[int], Vectors]) -> list[Vectors | BaseException]:
    """``call(i)`` in ``count`` threads released together; each result or error."""
    barrier = threading.Barrier(count)

    def run(i: int) -> Vectors | BaseException:
        barrier.wait()
        try:
            return call(i)
        except Exception as exc:
            return exc

    with ThreadPoolExecutor(count) as pool:
        return list(pool.map(run, range(count)))


def test_concurrent_callers_share_one_inner_call_and_get_their_own_rows():
    inner = RecordingEmbedder()
    # The first caller waits until all 8 callers' 24 texts are queued, then runs once.
    batching = BatchingEmbedder(inner, max_wait_ms=10_000, max_batch=24)
    results = at_once(8, lambda i: batching.embed_batch(texts_of(i)))
    alone = HashEmbedder(dim=32)
    for i, result in enumerate(results):
        assert isinstance(result, np.ndarray)
        np.testing.assert_array_equal(result, alone.embed_batch(texts_of(i)))
    assert len(inner.batches) == 1
    assert sorted(inner.batches[0]) == sorted(t for i in range(8) for t in texts_of(i))


def test_batches_never_exceed_max_batch_and_a_callers_rest_goes_in_the_next():
    inner = RecordingEmbedder()
    # 24 texts in batches of 8: some callers' 3 texts straddle two batches.
    batching = BatchingEmbedder(inner, max_wait_ms=10_000, max_batch=8)
    results = at_once(8, lambda i: batching.embed_batch(texts_of(i)))
    alone = HashEmbedder(dim=32)
    for i, result in enumerate(results):
        assert isinstance(result, np.ndarray)
        np.testing.assert_array_equal(result, alone.embed_batch(texts_of(i)))
    assert [len(b) for b in inner.batches] == [8, 8, 8]


def test_one_caller_with_more_than_max_batch_texts_is_split_in_order():
    inner = RecordingEmbedder()
    texts = [f"text {i}" for i in range(12)]
    vectors = BatchingEmbedder(inner, max_wait_ms=0, max_batch=5).embed_batch(texts)
    assert [len(b) for b in inner.batches] == [5, 5, 2]
    np.testing.assert_array_equal(vectors, HashEmbedder(dim=32).embed_batch(texts))


class OverlapProbe:
    """An embedder whose calls each wait until another call is running at the same time."""

    def __init__(self) -> None:
        self._inner = HashEmbedder(dim=32)
        self._both_inside = threading.Barrier(2, timeout=30)
        self.dim, self.model_id = self._inner.dim, self._inner.model_id

    def embed_batch(self, texts: Sequence[str]) -> Vectors:
        self._both_inside.wait()  # BrokenBarrierError if the calls ran one after the other
        return self._inner.embed_batch(texts)


def test_the_next_batch_runs_while_the_previous_one_is_still_running():
    batching = BatchingEmbedder(OverlapProbe(), max_wait_ms=0, max_batch=1)
    results = at_once(2, lambda i: batching.embed_batch([f"text {i}"]))
    for i, result in enumerate(results):
        assert isinstance(result, np.ndarray), result
        np.testing.assert_array_equal(result, HashEmbedder(dim=32).embed_batch([f"text {i}"]))


class GatedEmbedder(RecordingEmbedder):
    """Records each batch as its call starts; the first call waits until ``release`` is
    set, and the most calls ever inside at once is kept."""

    def __init__(self) -> None:
        super().__init__()
        self.first_inside = threading.Event()
        self.release = threading.Event()
        self._count_lock = threading.Lock()
        self._inside = 0
        self.most_inside = 0

    def embed_batch(self, texts: Sequence[str]) -> Vectors:
        with self._count_lock:
            self._inside += 1
            self.most_inside = max(self.most_inside, self._inside)
            first = not self.first_inside.is_set()
        try:
            with self._lock:
                self.batches.append(list(texts))
            if first:
                self.first_inside.set()
                assert self.release.wait(30)
            return self.inner.embed_batch(texts)
        finally:
            with self._count_lock:
                self._inside -= 1


def test_with_one_lane_texts_arriving_during_a_call_wait_and_go_in_one_batch():
    inner = GatedEmbedder()
    batching = BatchingEmbedder(inner, max_wait_ms=0, max_batch=64, max_running=1)
    with ThreadPoolExecutor(4) as pool:
        first = pool.submit(batching.embed_batch, ["first"])
        assert inner.first_inside.wait(30)
        # Three callers arrive while the only lane is busy: none of them may start a call.
        later = [pool.submit(batching.embed_batch, [f"later {i}"]) for i in range(3)]
        deadline = time.monotonic() + 30
        while batching._queued < 3 and time.monotonic() < deadline:  # all three queued
            time.sleep(0.001)
        time.sleep(0.05)  # room for a wrongly started call to show up
        assert inner.batches == [["first"]]
        inner.release.set()
        results = [first.result(30), *(f.result(30) for f in later)]
    assert inner.most_inside == 1
    assert inner.batches[0] == ["first"]
    assert sorted(inner.batches[1]) == ["later 0", "later 1", "later 2"]
    alone = HashEmbedder(dim=32)
    for text, result in zip(["first", "later 0", "later 1", "later 2"], results, strict=True):
        np.testing.assert_array_equal(result, alone.embed_batch([text]))


def test_a_failed_call_frees_its_lane():
    inner = RecordingEmbedder(fail_on="boom")
    batching = BatchingEmbedder(inner, max_wait_ms=0, max_running=1)
    with pytest.raises(StoreUnavailable):
        batching.embed_batch(["boom"])
    # Were the lane still counted as busy, this call would wait forever.
    assert embed_within(batching, ["fine"]).shape == (1, 32)


def test_an_inner_error_reaches_every_caller_of_that_batch():
    inner = RecordingEmbedder(fail_on="boom")
    batching = BatchingEmbedder(inner, max_wait_ms=10_000, max_batch=2)
    results = at_once(2, lambda i: batching.embed_batch(["boom" if i == 0 else "fine"]))
    assert all(isinstance(r, StoreUnavailable) for r in results)
    assert len(inner.batches) == 1
    # The embedder is usable afterwards: the failed batch left no leader behind.
    again = at_once(2, lambda i: batching.embed_batch([f"fine {i}"]))
    assert all(isinstance(r, np.ndarray) and r.shape == (1, 32) for r in again)


def test_a_failed_callers_queued_rest_is_not_embedded():
    inner = RecordingEmbedder(fail_on="boom")
    batching = BatchingEmbedder(inner, max_wait_ms=0, max_batch=2)
    with pytest.raises(StoreUnavailable, match="boom"):
        batching.embed_batch(["a", "boom", "c", "d"])
    assert inner.batches == [["a", "boom"]]
    batching.embed_batch(["e"])
    assert inner.batches[1] == ["e"]


def test_a_bad_item_fails_only_its_own_caller():
    inner = RecordingEmbedder()
    batching = BatchingEmbedder(inner, max_wait_ms=5, max_batch=64)
    bad: list[object] = ["fine", 3]
    results = at_once(2, lambda i: batching.embed_batch(bad if i == 0 else ["fine"]))  # type: ignore[arg-type]
    assert isinstance(results[0], InvalidInput) and results[0].field == "texts[1]"
    assert isinstance(results[1], np.ndarray) and results[1].shape == (1, 32)
    assert inner.batches == [["fine"]]


def test_an_empty_batch_gives_zero_rows():
    inner = RecordingEmbedder()
    batching = BatchingEmbedder(inner)
    assert batching.embed_batch([]).shape == (0, 32)
    assert (batching.dim, batching.model_id) == (32, "hash:32")
    assert isinstance(batching, Embedder)


def test_the_local_model_batched_across_threads_matches_it_alone(local_embedder):
    sentences = [f"a short sentence about topic number {i}" for i in range(6)]
    batching = BatchingEmbedder(local_embedder, max_wait_ms=10_000, max_batch=6)
    results = at_once(6, lambda i: batching.embed_batch([sentences[i]]))
    for i, result in enumerate(results):
        assert isinstance(result, np.ndarray)
        np.testing.assert_allclose(result, local_embedder.embed_batch([sentences[i]]), atol=1e-5)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"max_wait_ms": -1}, "max_wait_ms"),
        ({"max_wait_ms": float("nan")}, "max_wait_ms"),
        ({"max_batch": 0}, "max_batch"),
        ({"max_batch": True}, "max_batch"),
        ({"max_running": 0}, "max_running"),
        ({"max_running": True}, "max_running"),
        ({"max_running": 1.5}, "max_running"),
    ],
)
def test_bad_settings_are_refused(kwargs, field):
    with pytest.raises(InvalidInput) as info:
        BatchingEmbedder(HashEmbedder(), **kwargs)
    assert info.value.field == field
