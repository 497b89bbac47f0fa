"""The RecordStore contract for writes that depend on what is stored, with any number of
writers: an expectation (``Expect``: a write applied only if what it read is still what
is stored, checked in the write's transaction; otherwise ``WriteConflict`` and nothing of
the batch is written), and a cap (its count and eviction after every write before it).
Every backend (memory, sqlite, postgres) passes these tests."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace

import pytest

from memstack.clock import ManualClock
from memstack.errors import InvalidInput, StoreUnavailable, WriteConflict
from memstack.storage import Cap, Expect, Filter, Record, RecordStore
from tests.storage.records import T0, rec, snapshot
from tests.threads import in_threads

EVERYTHING = Filter(include_expired=True, include_superseded=True)


def read(store: RecordStore, id: str, namespace: str = "ns") -> Record | None:
    """The record as a writer reads it before it writes: expired or closed ones too."""
    return store.fetch(namespace, [id], EVERYTHING).get(id)


def _rewritten(store: RecordStore) -> None:
    store.upsert([rec("a", text="text of a", updated_at=T0 + 1)])


def _retexted(store: RecordStore) -> None:  # same updated_at, another value
    store.upsert([rec("a", text="another text")])


def _closed(store: RecordStore) -> None:  # a cap evicts it (same id, same updated_at)
    store.upsert([rec("b", created_at=T0 + 1)])
    store.write(caps=[Cap(namespace="ns", keep=1, close=True)])


def _deleted(store: RecordStore) -> None:
    store.delete("ns", ["a"])


def _created(store: RecordStore) -> None:  # expected absent, written meanwhile
    store.upsert([rec("new")])


@pytest.mark.parametrize(
    ("expected_id", "change"),
    [
        ("a", _rewritten),
        ("a", _retexted),
        ("a", _closed),
        ("a", _deleted),
        ("new", _created),
    ],
)
def test_a_stale_expectation_refuses_the_whole_batch(
    store: RecordStore, expected_id: str, change: Callable[[RecordStore], None]
) -> None:
    store.upsert([rec("a", embedding=[1, 0]), rec("i", namespace="idx")])
    seen = read(store, expected_id)
    change(store)  # another writer comes first
    before = snapshot(store, ["ns", "idx", "other"])
    info = store.namespace_info("other")
    with pytest.raises(WriteConflict) as raised:
        store.write(
            upserts=[rec(expected_id, text="mine"), rec("o", namespace="other", embedding=[1])],
            deletes={"idx": ["i"]},
            caps=[Cap(namespace="ns", keep=0)],
            model_id="model",
            expect=[Expect(namespace="ns", id=expected_id, seen=seen)],
        )
    assert isinstance(raised.value, StoreUnavailable)  # a 503 at the REST edge
    assert repr(expected_id) in str(raised.value)
    assert snapshot(store, ["ns", "idx", "other"]) == before
    assert store.namespace_info("other") == info  # the embedding's claim was not kept


def test_an_expectation_that_holds_lets_the_write_through(
    store: RecordStore, clock: ManualClock
) -> None:
    store.upsert([rec("a"), rec("gone", expires_at=clock.now() - 1)])
    seen = read(store, "a")
    store.touch("ns", ["a"], clock.now())  # a read's touch is no change of the record
    store.write(
        upserts=[rec("a", text="mine"), rec("new"), rec("gone", text="back")],
        expect=[
            Expect(namespace="ns", id="a", seen=seen),
            Expect(namespace="ns", id="new", seen=None),
            Expect(namespace="ns", id="gone", seen=read(store, "gone")),  # expired, still there
        ],
    )
    assert [r.text for r in store.get("ns", ["a", "new", "gone"])] == [
        "mine",
        "text of new",
        "back",
    ]


def test_expectations_alone_check_without_writing(store: RecordStore) -> None:
    store.upsert([rec("a")])
    store.write(expect=[Expect(namespace="ns", id="a", seen=read(store, "a"))])
    with pytest.raises(WriteConflict):
        store.write(expect=[Expect(namespace="ns", id="a", seen=None)])


def test_an_expectation_is_of_its_own_namespace(store: RecordStore) -> None:
    store.upsert([rec("a"), rec("a", namespace="elsewhere", text="other")])
    seen = read(store, "a", "elsewhere")
    with pytest.raises(WriteConflict):
        store.write(upserts=[rec("b")], expect=[Expect(namespace="ns", id="a", seen=seen)])
    assert store.get("ns", ["b"]) == []


@pytest.mark.parametrize(
    ("expect", "field"),
    [
        ("a", "expect"),
        (["a"], "expect"),
        ([Expect(namespace="", id="a", seen=None)], "namespace"),
        ([Expect(namespace="ns", id="", seen=None)], "expect.id"),
        ([Expect(namespace="ns", id="a", seen="a")], "expect.seen"),  # type: ignore[arg-type]
        ([Expect(namespace="ns", id="a", seen=rec("b"))], "expect.seen"),
    ],
)
def test_bad_expectations_are_refused(store: RecordStore, expect: object, field: str) -> None:
    before = snapshot(store, ["ns"])
    with pytest.raises(InvalidInput) as raised:
        store.write(upserts=[rec("x")], expect=expect)  # type: ignore[arg-type]
    assert raised.value.field == field
    assert snapshot(store, ["ns"]) == before


def test_read_expect_retry_from_threads_loses_no_increment(store: RecordStore) -> None:
    """The check and the write are one step: threads that each read a counter, add one
    and write it back expecting what they read, retrying on a conflict, lose nothing."""
    threads, increments = 6, 15
    errors: list[BaseException] = []

    def work() -> None:
        try:
            for _ in range(increments):
                while True:
                    seen = read(store, "counter")
                    count = 0 if seen is None else int(seen.text)
                    update = rec("counter", text=str(count + 1), updated_at=T0 + count + 1)
                    try:
                        store.write(
                            upserts=[update],
                            expect=[Expect(namespace="ns", id="counter", seen=seen)],
                        )
                        break
                    except WriteConflict:
                        continue
        except BaseException as exc:  # reported below, on the main thread
            errors.append(exc)

    workers = [threading.Thread(target=work) for _ in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert errors == []
    (counter,) = store.get("ns", ["counter"])
    assert counter.text == str(threads * increments)


def test_a_closed_record_can_be_expected_as_read(store: RecordStore) -> None:
    store.upsert([rec("a"), rec("b", created_at=T0 + 1)])
    store.write(caps=[Cap(namespace="ns", keep=1, close=True)])
    seen = read(store, "a")
    assert seen is not None and seen.valid_to is not None
    store.write(
        upserts=[replace(seen, text="kept")], expect=[Expect(namespace="ns", id="a", seen=seen)]
    )


def test_a_cap_holds_with_writers_in_several_threads(store: RecordStore) -> None:
    """Each write counts and evicts in its transaction, after the writes before it."""
    threads, writes, keep = 6, 10, 5

    def work(t: int) -> None:
        for i in range(writes):
            record = rec(f"t{t}-{i}", created_at=T0 + i)
            store.write(upserts=[record], caps=[Cap(namespace="ns", keep=keep, close=True)])

    assert in_threads(work, threads) == []
    assert store.count("ns") == keep
    assert store.count("ns", EVERYTHING) == threads * writes
