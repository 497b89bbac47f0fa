"""BatchingEmbedder's lanes on given cores and its spill lane: what ``memstack serve
--pin-cores`` runs the local model's calls with. Its batching: tests/embeddings/test_batching.py."""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence

import numpy as np
import pytest

from memstack.embeddings import BatchingEmbedder, HashEmbedder, Vectors
from memstack.embeddings.cores import split_cores
from memstack.errors import ConfigError, StoreUnavailable
from tests.embeddings.recording import RecordingEmbedder, embed_within
from tests.embeddings.test_batching import GatedEmbedder, embedding


class WhereItRuns(RecordingEmbedder):
    """Records, with each batch, the thread and the cores its call ran on; fails a batch
    holding ``fail_on``."""

    def __init__(self, fail_on: str | None = None) -> None:
        super().__init__(dim=8, fail_on=fail_on)
        self.where: list[tuple[int, set[int]]] = []

    def embed_batch(self, texts: Sequence[str]) -> Vectors:
        self.where.append((threading.get_native_id(), os.sched_getaffinity(0)))
        return super().embed_batch(texts)


@pytest.mark.usefixtures("two_cores")
def test_calls_run_on_the_lanes_threads_and_cores_not_the_callers():
    split = split_cores(1)
    assert split is not None, "this test needs two cores"
    inner = WhereItRuns(fail_on="b")
    lanes = BatchingEmbedder(inner, cores=split.model)
    before = os.sched_getaffinity(0)
    try:
        assert lanes.embed_batch(["a"]).shape == (1, 8)
        with pytest.raises(StoreUnavailable):
            embedding(lanes, ["b"]).result(30)
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
    lanes = BatchingEmbedder(inner, cores=split.model)
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
    lanes = BatchingEmbedder(inner, cores=split.model, spill_cores=split.requests, spill_batch=2)
    reference = HashEmbedder(dim=32)
    callers = [["s0"], ["s1", "s2"], ["s3", "s4", "s5"], ["s6"]]
    try:
        first = embedding(lanes, ["first"])
        assert inner.first_inside.wait(30)
        later = [embedding(lanes, texts) for texts in callers]
        # Every one is answered while the lane is still held in its call.
        for texts, future in zip(callers, later, strict=True):
            np.testing.assert_array_equal(future.result(30), reference.embed_batch(texts))
        assert not first.done()
        inner.release.set()
        np.testing.assert_array_equal(first.result(30), reference.embed_batch(["first"]))
    finally:
        inner.release.set()  # else close() waits for the held call
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
    lanes = BatchingEmbedder(inner, cores=split.model, spill_cores=split.requests)
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
    lanes = BatchingEmbedder(RecordingEmbedder(), cores=frozenset({4095}))
    try:
        assert embed_within(lanes, ["a"]).shape == (1, 32)
    finally:
        lanes.close()


def test_cores_on_a_platform_without_affinity_are_refused(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delattr(os, "sched_setaffinity")
    for kwargs in ({"cores": frozenset({1})}, {"spill_cores": frozenset({0})}):
        with pytest.raises(ConfigError, match="sched_setaffinity"):
            BatchingEmbedder(RecordingEmbedder(), **kwargs)  # type: ignore[arg-type]
    BatchingEmbedder(RecordingEmbedder()).close()  # without cores, nothing to pin


def test_close_stops_the_spill_lane_too():
    lanes = BatchingEmbedder(RecordingEmbedder(), max_running=2, spill_cores=frozenset({0}))
    lanes.embed_batch(["a"])
    threads = list(lanes._threads)
    assert len(threads) == 3 and all(t.is_alive() for t in threads)  # two lanes, one spill
    lanes.close()
    assert not any(t.is_alive() for t in threads)
