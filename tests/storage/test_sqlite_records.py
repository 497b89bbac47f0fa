"""The records a SQLite store keeps in process after reading them (``RecordMemo``): reads
of held records stay exactly what the file says."""

from __future__ import annotations

from pathlib import Path

import pytest

from memstack.clock import ManualClock
from memstack.storage import Filter, SQLiteRecordStore
from memstack.storage._record_memo import RecordMemo
from tests.storage.records import T0, rec


@pytest.fixture
def pair(tmp_path: Path, clock: ManualClock):
    """Two stores on one file; ``a`` has searched ``ns``, so it holds what it reads."""
    a = SQLiteRecordStore(tmp_path / "held.db", clock=clock)
    b = SQLiteRecordStore(tmp_path / "held.db", clock=clock)
    a.setup()
    b.setup()
    a.upsert(
        [
            rec("x", text="alpha", embedding=[1, 0], metadata={"tags": ["a"], "n": 1}),
            rec("y", text="beta", embedding=[0, 1], expires_at=T0 + 60),
        ]
    )
    assert a.vector_search("ns", [1, 0], k=2)  # loads the namespace's entry
    yield a, b
    a.close()
    b.close()


def test_changing_a_returned_records_metadata_changes_no_later_read(pair) -> None:
    a, _ = pair
    [first] = a.get("ns", ["x"])
    first.metadata["n"] = 2
    first.metadata["tags"].append("b")
    [again] = a.get("ns", ["x"])
    assert again.metadata == {"tags": ["a"], "n": 1}


def test_a_touch_through_another_store_is_seen(pair) -> None:
    a, b = pair
    assert a.get("ns", ["x"])[0].last_accessed_at is None
    b.touch("ns", ["x"], T0 + 5)
    assert a.get("ns", ["x"])[0].last_accessed_at == T0 + 5


def test_its_own_touch_is_seen(pair) -> None:
    a, _ = pair
    assert a.get("ns", ["x", "y"])[0].last_accessed_at is None
    a.touch("ns", ["x"], T0 + 7)
    assert {r.id: r.last_accessed_at for r in a.get("ns", ["x", "y"])} == {
        "x": T0 + 7,
        "y": None,
    }


def test_writes_through_either_store_are_seen(pair) -> None:
    a, b = pair
    assert a.get("ns", ["x"])[0].text == "alpha"
    a.upsert([rec("x", text="alpha two", embedding=[1, 0])])
    assert a.get("ns", ["x", "y"])[0].text == "alpha two"
    a.delete("ns", ["y"])
    assert [r.id for r in a.get("ns", ["x", "y"])] == ["x"]
    b.upsert([rec("x", text="alpha three", embedding=[1, 0])])
    assert a.get("ns", ["x"])[0].text == "alpha three"


def test_a_held_record_that_expires_is_no_longer_returned(pair, clock: ManualClock) -> None:
    a, _ = pair
    assert [r.id for r in a.get("ns", ["y"])] == ["y"]
    clock.advance(61)
    assert a.get("ns", ["y"]) == []
    assert list(a.fetch("ns", ["y"], Filter(include_expired=True))) == ["y"]


def test_the_memo_holds_at_most_its_bound_forgetting_the_least_recent() -> None:
    memo = RecordMemo(3)
    memo.keep("one", [rec("a", "one"), rec("b", "one")])
    memo.keep("two", [rec("c", "two")])
    assert memo.take("one", ["a"])[0][0].id == "a"  # a is now more recent than b
    memo.keep("two", [rec("d", "two")])
    assert len(memo) == 3
    assert memo.take("one", ["a", "b"])[1] == ["b"]
    assert [r.id for r in memo.take("two", ["c", "d"])[0]] == ["c", "d"]


def test_shared_hands_out_the_held_records_or_none_if_one_is_missing() -> None:
    memo = RecordMemo(3)
    kept = memo.keep("ns", [rec("a"), rec("b"), rec("c")], shared=True)
    got = memo.shared("ns", ["b", "a", "b"])
    assert got is not None and list(got) == ["b", "a"]
    assert got["a"] is kept[0]  # the held object itself, not a copy
    assert memo.shared("ns", ["a", "zz"]) is None
    assert memo.shared("other", ["a"]) is None
    assert memo.shared("other", []) == {}
    memo.keep("ns", [rec("d")])  # "c" was used least lately: forgotten
    assert memo.shared("ns", ["c"]) is None and memo.shared("ns", ["a", "b", "d"]) is not None
