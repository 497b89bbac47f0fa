"""BatchingEmbedder: callers queue their texts, lane threads of its own embed whatever is
queued in one call, and each caller gets exactly its rows. Its lanes on given cores and
its spill lane: tests/server/test_lanes.py."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from functools import partial
from typing import Any

import numpy as np
import pytest

from memstack.embeddings import BatchingEmbedder, Embedder, HashEmbedder, LocalEmbedder, Vectors
from memstack.errors import ConfigError, InvalidInput, StoreUnavailable
from tests.embeddings.recording import RecordingEmbedder, embed_within

Make = Callable[..., BatchingEmbedder]


@pytest.fixture
def make() -> Iterator[Make]:
    """``BatchingEmbedder(inner, **kwargs)``, closed (its lanes stopped) after the test."""
    made: list[BatchingEmbedder] = []

    def build(inner: Embedder, **kwargs: Any) -> BatchingEmbedder:
        made.append(BatchingEmbedder(inner, **kwargs))
        return made[-1]

    yield build
    for batching in made:
        batching.close()


def in_background(call: Callable[[], Vectors]) -> Future[Vectors]:
    """``call()`` on a daemon thread: a caller stuck for good (a dead lane) fails its test
    at ``result(timeout)`` instead of hanging the run."""
    future: Future[Vectors] = Future()

    def run() -> None:
        try:
            future.set_result(call())
        except BaseException as exc:
            future.set_exception(exc)

    threading.Thread(target=run, daemon=True).start()
    return future


def embedding(batching: BatchingEmbedder, texts: list[str]) -> Future[Vectors]:
    """``batching.embed_batch(texts)`` in the background."""
    return in_background(lambda: batching.embed_batch(texts))


def at_once(count: int, call: Callable[[int], Vectors]) -> list[Vectors | BaseException]:
    """``call(i)`` in ``count`` threads released together; each result or error."""
    barrier = threading.Barrier(count)

    def run(i: int) -> Vectors:
        barrier.wait()
        return call(i)

    futures = [in_background(partial(run, i)) for i in range(count)]
    return [f.exception(30) or f.result() for f in futures]


def queued(batching: BatchingEmbedder, count: int) -> None:
    """Wait until ``count`` callers are queued behind the running calls (30 s at most)."""
    deadline = time.monotonic() + 30
    while len(batching._queue) < count:
        assert time.monotonic() < deadline, f"{len(batching._queue)} queued, not {count}"
        time.sleep(0.005)


class GatedEmbedder(RecordingEmbedder):
    """Records each batch as its call starts; the first call waits until ``release`` is
    set, and the most calls ever inside at once is kept. Fails a batch holding
    ``fail_on``; embeds with ``inner`` when given (else a 32-dimension HashEmbedder)."""

    def __init__(self, inner: Embedder | None = None, *, fail_on: str | None = None) -> None:
        super().__init__(fail_on=fail_on)
        if inner is not None:
            self.inner = inner
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
            if self.fail_on is not None and self.fail_on in texts:
                raise StoreUnavailable(f"the model cannot embed {self.fail_on!r}")
            return self.inner.embed_batch(texts)
        finally:
            with self._count_lock:
                self._inside -= 1


@pytest.mark.parametrize("max_running", [1, 3])
def test_each_caller_gets_exactly_its_own_rows(make: Make, max_running: int):
    inner = RecordingEmbedder()
    batching = make(inner, max_running=max_running)
    calls = [[f"text {i}-{j}" for j in range(i % 4 + 1)] for i in range(40)]
    got = [future.result(30) for future in [embedding(batching, texts) for texts in calls]]
    reference = HashEmbedder(dim=32)
    for texts, rows in zip(calls, got, strict=True):
        np.testing.assert_array_equal(rows, reference.embed_batch(texts))
    assert sorted(inner.seen) == sorted(t for texts in calls for t in texts)


def test_texts_arriving_during_a_call_wait_and_go_in_one_batch(make: Make):
    inner = GatedEmbedder()
    batching = make(inner, max_running=1)
    first = embedding(batching, ["first"])
    assert inner.first_inside.wait(30)
    # Three callers arrive while the only lane is busy: none of them may start a call.
    later = [embedding(batching, [f"later {i}"]) for i in range(3)]
    queued(batching, 3)
    assert inner.batches == [["first"]]
    inner.release.set()
    results = [first.result(30), *(f.result(30) for f in later)]
    assert inner.most_inside == 1
    assert inner.batches[0] == ["first"]
    assert sorted(inner.batches[1]) == ["later 0", "later 1", "later 2"]
    alone = HashEmbedder(dim=32)
    for text, result in zip(["first", "later 0", "later 1", "later 2"], results, strict=True):
        np.testing.assert_array_equal(result, alone.embed_batch([text]))


def test_a_batch_holds_at_most_max_batch_texts_and_never_splits_a_caller(make: Make):
    inner = GatedEmbedder()
    batching = make(inner, max_batch=3)
    first = embedding(batching, ["a"])
    assert inner.first_inside.wait(30)
    two = embedding(batching, ["b1", "b2"])
    queued(batching, 1)
    five = embedding(batching, [f"c{i}" for i in range(5)])
    queued(batching, 2)
    inner.release.set()
    assert first.result(30).shape == (1, 32)
    assert two.result(30).shape == (2, 32)
    np.testing.assert_array_equal(
        five.result(30), HashEmbedder(dim=32).embed_batch([f"c{i}" for i in range(5)])
    )
    assert inner.batches == [["a"], ["b1", "b2"], [f"c{i}" for i in range(5)]]


class OverlapProbe:
    """An embedder whose calls each wait until another call is running at the same time."""

    def __init__(self) -> None:
        self._inner = HashEmbedder(dim=32)
        self._both_inside = threading.Barrier(2, timeout=30)
        self.dim, self.model_id = self._inner.dim, self._inner.model_id

    def embed_batch(self, texts: Sequence[str]) -> Vectors:
        self._both_inside.wait()  # BrokenBarrierError if the calls ran one after the other
        return self._inner.embed_batch(texts)


def test_max_running_lanes_make_their_calls_at_the_same_time(make: Make):
    # max_batch=1: each lane takes one caller, so two lanes hold the two callers at once.
    batching = make(OverlapProbe(), max_running=2, max_batch=1)
    results = at_once(2, lambda i: batching.embed_batch([f"text {i}"]))
    for i, result in enumerate(results):
        assert isinstance(result, np.ndarray), result
        np.testing.assert_array_equal(result, HashEmbedder(dim=32).embed_batch([f"text {i}"]))


def test_an_error_reaches_every_caller_of_its_batch_and_no_other(make: Make):
    inner = GatedEmbedder(fail_on="boom")
    batching = make(inner)
    first = embedding(batching, ["first"])
    assert inner.first_inside.wait(30)
    poisoned = embedding(batching, ["boom"])
    queued(batching, 1)
    beside = embedding(batching, ["fine"])  # in the same batch
    queued(batching, 2)
    inner.release.set()
    np.testing.assert_array_equal(first.result(30), HashEmbedder(dim=32).embed_batch(["first"]))
    for failed in (poisoned, beside):
        with pytest.raises(StoreUnavailable, match="boom"):
            failed.result(30)
    assert inner.batches == [["first"], ["boom", "fine"]]
    # The lane lived on: had it died with the call, this one would wait forever.
    assert embed_within(batching, ["after"]).shape == (1, 32)


def test_a_model_returning_the_wrong_number_of_rows_is_a_config_error(make: Make):
    class ShortRows(RecordingEmbedder):
        def embed_batch(self, texts: Sequence[str]) -> Vectors:
            return super().embed_batch(texts)[:-1]

    with pytest.raises(ConfigError, match="returned 1 rows for 2 texts"):
        embedding(make(ShortRows()), ["a", "b"]).result(30)


def test_a_bad_item_is_refused_in_its_callers_thread_and_never_queued(make: Make):
    inner = RecordingEmbedder()
    batching = make(inner)
    bad: list[object] = ["fine", 3]
    results = at_once(2, lambda i: batching.embed_batch(bad if i == 0 else ["fine"]))  # type: ignore[arg-type]
    assert isinstance(results[0], InvalidInput) and results[0].field == "texts[1]"
    assert isinstance(results[1], np.ndarray) and results[1].shape == (1, 32)
    assert inner.batches == [["fine"]]


def test_an_empty_batch_gives_zero_rows_without_starting_a_lane(make: Make):
    batching = make(RecordingEmbedder())
    assert batching.embed_batch([]).shape == (0, 32)
    assert batching._threads == []
    assert (batching.dim, batching.model_id) == (32, "hash:32")
    assert isinstance(batching, Embedder)


def test_lanes_start_with_the_first_call_and_close_stops_them(make: Make):
    batching = make(RecordingEmbedder(), max_running=2)
    assert batching._threads == []
    batching.embed_batch(["a"])
    threads = list(batching._threads)
    assert len(threads) == 2 and all(t.is_alive() for t in threads)
    batching.close()
    batching.close()  # idempotent
    assert not any(t.is_alive() for t in threads)
    with pytest.raises(ConfigError, match="closed"):
        batching.embed_batch(["b"])


def test_the_local_model_batched_across_threads_matches_it_alone(
    make: Make, local_embedder: LocalEmbedder
):
    sentences = [f"a sentence about topic number {i}" + " and more" * (i % 3) for i in range(6)]
    inner = GatedEmbedder(local_embedder)
    batching = make(inner)
    first = embedding(batching, ["warm"])
    assert inner.first_inside.wait(30)
    later = [embedding(batching, [s]) for s in sentences]
    queued(batching, 6)
    inner.release.set()
    first.result(30)
    results = [f.result(60) for f in later]
    assert sorted(inner.batches[1]) == sorted(sentences)  # the six in one call
    for sentence, result in zip(sentences, results, strict=True):
        np.testing.assert_allclose(result, local_embedder.embed_batch([sentence]), atol=1e-5)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"max_running": 0}, "max_running"),
        ({"max_running": True}, "max_running"),
        ({"max_running": 1.5}, "max_running"),
        ({"max_batch": 0}, "max_batch"),
        ({"max_batch": True}, "max_batch"),
        ({"max_batch": 2.5}, "max_batch"),
        ({"spill_batch": 0}, "spill_batch"),
        ({"cores": frozenset()}, "cores"),
        ({"spill_cores": frozenset()}, "spill_cores"),
    ],
)
def test_bad_arguments_are_refused(kwargs, field):
    with pytest.raises(InvalidInput) as refused:
        BatchingEmbedder(HashEmbedder(), **kwargs)
    assert refused.value.field == field
