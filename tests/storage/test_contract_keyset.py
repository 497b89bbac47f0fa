"""Keyset paging (``RecordStore.list(after=...)``) on every backend: the page after a
record's ``(order key, id)`` in each order, ties by id in code point order, records
written meanwhile before that position never shifting it, and a bad position refused."""

from __future__ import annotations

import random

import pytest

from memstack.errors import InvalidInput
from memstack.storage import Filter, Order, Record, RecordStore
from tests.storage.records import T0, ids, rec

IDS = ["r9", "r10", "r1", "r100", "R5", "_x", "a", "é", "😀", "b2", "Z1", "r11"]
"""Ids whose code point order differs from length, case-folded or UTF-16 order."""
ORDERS: list[Order] = ["created_desc", "created_asc", "updated_desc"]


@pytest.fixture
def filled(store: RecordStore) -> RecordStore:
    """36 records over three times (12 ties each), written in a shuffled order; their
    updated_at runs the other way round from created_at."""
    records = [
        rec(f"{id}.{n}", created_at=T0 + n, updated_at=T0 + 10 - n) for n in range(3) for id in IDS
    ]
    random.Random(30).shuffle(records)
    for record in records:
        store.upsert([record])
    return store


def _position(record: Record, order: Order) -> tuple[float, str]:
    return (record.updated_at if order == "updated_desc" else record.created_at), record.id


def _walk(store: RecordStore, order: Order, limit: int, **kwargs: object) -> list[Record]:
    out: list[Record] = []
    after = None
    for _ in range(100):  # a position that does not move on fails, never hangs
        page = store.list("ns", order=order, limit=limit, after=after, **kwargs)  # type: ignore[arg-type]
        if not page:
            return out
        out.extend(page)
        after = _position(page[-1], order)
    raise AssertionError(f"still listing after 100 pages: {ids(out[-3:])}")


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("limit", [1, 5, 12, 13, 100])
def test_walking_by_position_lists_every_record_once_in_order(
    filled: RecordStore, order: Order, limit: int
) -> None:
    everything = filled.list("ns", order=order, limit=100)
    assert len(everything) == 36
    assert ids(_walk(filled, order, limit)) == ids(everything)


@pytest.mark.parametrize("order", ORDERS)
def test_offset_counts_from_the_position(filled: RecordStore, order: Order) -> None:
    everything = ids(filled.list("ns", order=order, limit=100))
    after = _position(filled.list("ns", order=order, limit=100)[10], order)
    assert ids(filled.list("ns", order=order, limit=7, offset=3, after=after)) == everything[14:21]


def test_records_written_before_the_position_never_shift_the_next_page(
    filled: RecordStore,
) -> None:
    everything = ids(filled.list("ns", limit=100))
    first = filled.list("ns", limit=10)
    last = first[-1]
    # Newer records, and records tied with the last one shown whose ids sort before it
    # ("!" is below every id): all before the position.
    filled.upsert([rec(f"new{n}", created_at=T0 + 50) for n in range(5)])
    filled.upsert([rec(f"!{n}", created_at=last.created_at) for n in range(3)])
    rest: list[str] = []
    after = _position(last, "created_desc")
    for _ in range(10):
        page = filled.list("ns", limit=7, after=after)
        rest += ids(page)
        after = _position(page[-1], "created_desc") if page else after
    assert ids(first) + rest == everything


def test_a_filter_applies_with_the_position(store: RecordStore) -> None:
    store.upsert(
        [rec(f"m{n:02}", created_at=T0 + n % 4, kind="k" if n % 2 else None) for n in range(40)]
    )
    wanted = Filter(kinds=("k",))
    walked = _walk(store, "created_desc", 3, filter=wanted)
    assert ids(walked) == ids(store.list("ns", filter=wanted, limit=100))
    assert len(walked) == 20


@pytest.mark.parametrize(
    ("after", "field"),
    [
        ((float("nan"), "a"), "after[0]"),
        ((True, "a"), "after[0]"),
        ((T0, ""), "after[1]"),
        ((T0, "x" * 1025), "after[1]"),
        ([T0, "a"], "after"),
        ((T0,), "after"),
        ("a", "after"),
    ],
)
def test_a_bad_position_is_refused_naming_it(store: RecordStore, after: object, field: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        store.list("ns", after=after)  # type: ignore[arg-type]
    assert refused.value.field == field
