"""LaneEmbedder: the model's calls made by threads of its own, on the model's cores."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from memstack.embeddings import HashEmbedder, Vectors
from memstack.embeddings.cores import split_cores
from memstack.embeddings.lanes import LaneEmbedder
from memstack.errors import ConfigError, InvalidInput, StoreUnavailable
from tests.embeddings.recording import RecordingEmbedder, embed_within
from tests.embeddings.test_batching import GatedEmbedder


class WhereItRuns(RecordingEmbedder):
    """Records, with each batch, the thread and the cores its call ran on; fails a batch
    holding ``fail_on``."""

    def __init__(self, fail_on: str | None = None) -> None:
        super().__init__(dim=8, fail_on=fail_on)
        self.where: list[tuple[int, set[int]]] = []

    def embed_batch(self, texts: Sequence[str]) -> Vectors:
        self.where.append((threading.get_native_id(), os.sched_getaffinity(0)))
        return super().embed_batch(texts)


def _queued(lanes: LaneEmbedder, count: int) -> None:
    """Wait until ``count`` callers are queued behind the running call (30 s at most)."""
    deadline = time.monotonic() + 30
    while len(lanes._queue) < count:
        assert time.monotonic() < deadline, f"{len(lanes._queue)} queued, not {count}"
        time.sleep(0.005)


class ShortRows(RecordingEmbedder):
    def embed_batch(self, texts: Sequence[str]) -> Vectors:
        return super().embed_batch(texts)[:-1]


def test_each_caller_gets_exactly_its_own_rows():
    inner = RecordingEmbedder()
    lanes = LaneEmbedder(inner)
    calls = [[f"text {i}-{j}" for j in range(i % 4 + 1)] for i in range(40)]
    try:
        with ThreadPoolExecutor(8) as pool:
            got = list(pool.map(lanes.embed_batch, calls))
    finally:
        lanes.close()
    reference = HashEmbedder(dim=32)
    for texts, rows in zip(calls, got, strict=True):
        np.testing.assert_array_equal(rows, reference.embed_batch(texts))
    assert sorted(inner.seen) == sorted(t for texts in calls for t in texts)
    assert (lanes.dim, lanes.model_id) == (32, "hash:32")


def test_texts_arriving_during_a_call_wait_and_go_in_one_batch():
    inner = GatedEmbedder()
    lanes = LaneEmbedder(inner)
    try:
        with ThreadPoolExecutor(4) as pool:
            first = pool.submit(lanes.embed_batch, ["first"])
            assert inner.first_inside.wait(30)
            later = [pool.submit(lanes.embed_batch, [f"later {i}"]) for i in range(3)]
            _queued(lanes, 3)  # all three behind the running call
            inner.release.set()
            assert first.result(30).shape == (1, 32)
            assert all(f.result(30).shape == (1, 32) for f in later)
    finally:
        lanes.close()
    assert inner.batches[0] == ["first"]
    assert sorted(inner.batches[1]) == ["later 0", "later 1", "later 2"]
    assert inner.most_inside == 1


def test_a_batch_holds_at_most_max_batch_texts_and_never_splits_a_caller():
    inner = GatedEmbedder()
    lanes = LaneEmbedder(inner, max_batch=3)
    try:
        with ThreadPoolExecutor(4) as pool:
            first = pool.submit(lanes.embed_batch, ["a"])
            assert inner.first_inside.wait(30)
            two = pool.submit(lanes.embed_batch, ["b1", "b2"])
            _queued(lanes, 1)
            five = pool.submit(lanes.embed_batch, [f"c{i}" for i in range(5)])
            _queued(lanes, 2)
            inner.release.set()
            assert first.result(30).shape == (1, 32)
            assert two.result(30).shape == (2, 32)
            assert five.result(30).shape == (5, 32)
    finally:
        lanes.close()
    assert inner.batches == [["a"], ["b1", "b2"], [f"c{i}" for i in range(5)]]


def test_a_failed_call_fails_each_of_its_callers_and_the_lane_goes_on():
    inner = RecordingEmbedder(fail_on="poison")
    lanes = LaneEmbedder(inner)
    try:
        with pytest.raises(StoreUnavailable, match="poison"):
            lanes.embed_batch(["poison", "fine"])
        # Had the lane died with the call, this one would wait forever.
        assert embed_within(lanes, ["after"]).shape == (1, 32)
    finally:
        lanes.close()


def test_a_model_returning_the_wrong_number_of_rows_is_a_config_error():
    lanes = LaneEmbedder(ShortRows())
    try:
        with pytest.raises(ConfigError, match="returned 1 rows for 2 texts"):
            lanes.embed_batch(["a", "b"])
    finally:
        lanes.close()


def test_bad_texts_are_refused_in_the_callers_thread_and_never_queued():
    inner = RecordingEmbedder()
    lanes = LaneEmbedder(inner)
    try:
        with pytest.raises(InvalidInput):
            lanes.embed_batch(["fine", 7])  # type: ignore[list-item]
        assert lanes.embed_batch([]).shape == (0, 32)
    finally:
        lanes.close()
    assert inner.batches == [[]]


@pytest.mark.usefixtures("two_cores")
def test_calls_run_on_the_lanes_threads_and_cores_not_the_callers():
    split = split_cores(1)
    assert split is not None, "this test needs two cores"
    inner = WhereItRuns(fail_on="b")
    lanes = LaneEmbedder(inner, cores=split.model)
    before = os.sched_getaffinity(0)
    try:
        assert lanes.embed_batch(["a"]).shape == (1, 8)
        with pytest.raises(StoreUnavailable):
            lanes.embed_batch(["b"])
        assert os.sched_getaffinity(0) == before  # also after the failed call
        assert lanes.embed_batch(["c"]).shape == (1, 8)
    finally:
        lanes.close()
    caller = threading.get_native_id()
    assert [cores for _, cores in inner.where] == [set(split.model)] * 3
    assert all(thread != caller for thread, _ in inner.where)
    assert len({thread for thread, _ in inner.where}) == 1  # one lane, one thread
    assert os.sched_getaffinity(0) == before


@pytest.mark.usefixtures("two_cores")
def test_a_lane_moved_off_its_cores_goes_back_for_its_next_call():
    split = split_cores(1)
    assert split is not None, "this test needs two cores"
    inner = WhereItRuns()
    lanes = LaneEmbedder(inner, cores=split.model)
    try:
        lanes.embed_batch(["a"])
        lane, _ = inner.where[0]
        os.sched_setaffinity(lane, split.requests)  # as pin_threads does at serve start
        lanes.embed_batch(["b"])
    finally:
        lanes.close()
    assert inner.where[1] == (lane, set(split.model))


class HeldWhereItRuns(GatedEmbedder):
    """GatedEmbedder (the first call waits for ``release``) that also records, with each
    batch, its thread, cores and scheduling policy."""

    def __init__(self) -> None:
        super().__init__()
        self.where: list[tuple[list[str], int, set[int], int]] = []

    def embed_batch(self, texts: Sequence[str]) -> Vectors:
        here = (threading.get_native_id(), os.sched_getaffinity(0), os.sched_getscheduler(0))
        with self._count_lock:
            self.where.append((list(texts), *here))
        return super().embed_batch(texts)


@pytest.mark.usefixtures("two_cores")
def test_the_spill_lane_embeds_waiting_texts_while_the_lane_is_busy():
    split = split_cores(1)
    assert split is not None, "this test needs two cores"
    inner = HeldWhereItRuns()
    lanes = LaneEmbedder(inner, cores=split.model, spill_cores=split.requests, spill_batch=2)
    reference = HashEmbedder(dim=32)
    callers = [["s0"], ["s1", "s2"], ["s3", "s4", "s5"], ["s6"]]
    try:
        with ThreadPoolExecutor(6) as pool:
            first = pool.submit(lanes.embed_batch, ["first"])
            assert inner.first_inside.wait(30)
            later = [pool.submit(lanes.embed_batch, texts) for texts in callers]
            # Every one is answered while the lane is still held in its call.
            for texts, future in zip(callers, later, strict=True):
                np.testing.assert_array_equal(future.result(30), reference.embed_batch(texts))
            assert not first.done()
            inner.release.set()
            np.testing.assert_array_equal(first.result(30), reference.embed_batch(["first"]))
    finally:
        lanes.close()
    lane = inner.where[0]
    assert (lane[0], lane[2]) == (["first"], set(split.model))
    spilled = inner.where[1:]
    assert sorted(t for texts, *_ in spilled for t in texts) == [f"s{i}" for i in range(7)]
    for texts, thread, cores, policy in spilled:
        assert thread != lane[1] and cores == set(split.requests)
        assert policy == os.SCHED_IDLE
        # At most spill_batch texts, unless one caller brought more: it is never split.
        assert len(texts) <= 2 or texts == ["s3", "s4", "s5"]


@pytest.mark.usefixtures("two_cores")
def test_the_spill_lane_takes_nothing_while_a_lane_is_free():
    split = split_cores(1)
    assert split is not None, "this test needs two cores"
    inner = WhereItRuns()
    lanes = LaneEmbedder(inner, cores=split.model, spill_cores=split.requests)
    try:
        for n in range(20):
            lanes.embed_batch([f"t{n}"])
        threads = [thread.native_id for thread in lanes._threads]
    finally:
        lanes.close()
    assert len(threads) == 2  # the lane and the spill lane
    assert {thread for thread, _ in inner.where} == {threads[0]}
    assert all(cores == set(split.model) for _, cores in inner.where)


def test_cores_the_process_may_not_use_leave_the_call_where_it_is():
    # Core 4095 exists nowhere here: sched_setaffinity refuses it, as it would a core a
    # container lost. Had the lane died of it, the call would wait forever.
    lanes = LaneEmbedder(RecordingEmbedder(), cores=frozenset({4095}))
    try:
        assert embed_within(lanes, ["a"]).shape == (1, 32)
    finally:
        lanes.close()


def test_cores_on_a_platform_without_affinity_are_refused(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delattr(os, "sched_setaffinity")
    for kwargs in ({"cores": frozenset({1})}, {"spill_cores": frozenset({0})}):
        with pytest.raises(ConfigError, match="sched_setaffinity"):
            LaneEmbedder(RecordingEmbedder(), **kwargs)  # type: ignore[arg-type]
    LaneEmbedder(RecordingEmbedder()).close()  # without cores, nothing to pin


def test_close_stops_the_lanes_and_later_calls_are_refused():
    lanes = LaneEmbedder(RecordingEmbedder(), lanes=2, spill_cores=frozenset({0}))
    lanes.embed_batch(["a"])
    threads = list(lanes._threads)
    assert len(threads) == 3 and all(t.is_alive() for t in threads)  # two lanes, one spill
    lanes.close()
    lanes.close()  # idempotent
    assert not any(t.is_alive() for t in threads)
    with pytest.raises(ConfigError, match="closed"):
        lanes.embed_batch(["b"])


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"lanes": 0}, "lanes"),
        ({"lanes": True}, "lanes"),
        ({"max_batch": 0}, "max_batch"),
        ({"max_batch": 2.5}, "max_batch"),
        ({"cores": frozenset()}, "cores"),
        ({"spill_batch": 0}, "spill_batch"),
        ({"spill_cores": frozenset()}, "spill_cores"),
    ],
)
def test_bad_arguments_are_refused(kwargs, field):
    with pytest.raises(InvalidInput) as refused:
        LaneEmbedder(RecordingEmbedder(), **kwargs)
    assert refused.value.field == field
