"""Validity through the storage seam, on every backend: closed versions are kept, default
reads leave them out, ``as_of`` and ``include_superseded`` bring them back, caps count
current records only and can keep what they evict as history."""

from __future__ import annotations

from dataclasses import replace

import pytest

from memstack.clock import ManualClock
from memstack.errors import InvalidInput
from memstack.storage import Cap, Filter, Record, RecordStore
from tests.storage.records import T0, ids, rec

LISBON = [1.0, 0.0, 0.1]
BERLIN = [0.9, 0.1, 0.1]


def _moved(store: RecordStore) -> tuple[Record, Record]:
    """Bob lived in Lisbon from T0 - 100 until T0 - 50, then in Berlin."""
    old = rec("lisbon", text="Bob lives in Lisbon", embedding=LISBON, created_at=T0 - 100)
    new = rec(
        "berlin",
        text="Bob moved from Lisbon to Berlin",
        embedding=BERLIN,
        created_at=T0 - 50,
        provenance="user_stated",
    )
    store.upsert([old])
    store.vector_search("ns", LISBON, k=5)  # load the search indexes before the change
    store.text_search("ns", "Bob", k=5)
    closed = replace(old, valid_to=T0 - 50, superseded_by="berlin", closed_reason="superseded")
    store.upsert([closed, new])
    return closed, new


def test_default_reads_leave_closed_versions_out(store: RecordStore) -> None:
    _moved(store)
    assert ids(store.list("ns")) == ["berlin"]
    assert store.count("ns") == 1
    assert [r.record.id for r in store.vector_search("ns", LISBON, k=5)] == ["berlin"]
    assert [r.record.id for r in store.text_search("ns", "Lisbon", k=5)] == ["berlin"]


def test_get_by_id_returns_a_closed_version(store: RecordStore) -> None:
    closed, _ = _moved(store)
    (got,) = store.get("ns", ["lisbon"])
    assert got == closed
    assert (got.valid_to, got.superseded_by, got.closed_reason) == (
        T0 - 50,
        "berlin",
        "superseded",
    )


def test_as_of_answers_with_what_was_valid_then(store: RecordStore) -> None:
    _moved(store)
    before = Filter(as_of=T0 - 60)
    assert ids(store.list("ns", filter=before)) == ["lisbon"]
    assert [r.record.id for r in store.vector_search("ns", BERLIN, k=5, filter=before)] == [
        "lisbon"
    ]
    assert [r.record.id for r in store.text_search("ns", "Bob", k=5, filter=before)] == ["lisbon"]
    assert ids(store.list("ns", filter=Filter(as_of=T0 - 50))) == ["berlin"]
    assert store.list("ns", filter=Filter(as_of=T0 - 101)) == []
    assert store.count("ns", Filter(as_of=T0 - 60)) == 1


def test_include_superseded_shows_every_version(store: RecordStore) -> None:
    _moved(store)
    every = Filter(include_superseded=True)
    assert ids(store.list("ns", filter=every, order="created_asc")) == ["lisbon", "berlin"]
    assert len(store.vector_search("ns", LISBON, k=5, filter=every)) == 2
    assert store.count("ns", every) == 2


def test_provenance_round_trips_and_filters(store: RecordStore) -> None:
    store.upsert(
        [
            rec("a", provenance="extracted", provenance_detail="gpt-4o-mini", embedding=LISBON),
            rec("b", provenance="user_stated", embedding=BERLIN),
            rec("c", embedding=BERLIN),
        ]
    )
    (a,) = store.get("ns", ["a"])
    assert (a.provenance, a.provenance_detail) == ("extracted", "gpt-4o-mini")
    extracted = Filter(provenances=("extracted",))
    assert ids(store.list("ns", filter=extracted)) == ["a"]
    hits = store.vector_search("ns", BERLIN, k=5, filter=extracted)
    assert [h.record.id for h in hits] == ["a"]
    assert store.list("ns", filter=Filter(provenances=())) == []


def test_a_validity_that_ends_later_hides_the_record_from_then(
    store: RecordStore, clock: ManualClock
) -> None:
    store.upsert([rec("lease", text="the lease runs", embedding=LISBON, valid_to=T0 + 60)])
    assert [r.record.id for r in store.vector_search("ns", LISBON, k=5)] == ["lease"]
    clock.advance(61)
    assert store.vector_search("ns", LISBON, k=5) == []
    assert store.text_search("ns", "lease", k=5) == []
    assert ids(store.list("ns", filter=Filter(as_of=T0 + 30))) == ["lease"]


def test_caps_count_current_records_only(store: RecordStore) -> None:
    _moved(store)
    result = store.write(upserts=[rec("rome", created_at=T0)], caps=[Cap(namespace="ns", keep=2)])
    assert result.evicted == {"ns": []}  # two current; the closed version does not count
    assert store.count("ns", Filter(include_superseded=True)) == 3


def test_a_closing_cap_keeps_what_it_evicts_as_history(store: RecordStore) -> None:
    store.upsert([rec(f"m{i}", created_at=T0 - 10 + i, embedding=LISBON) for i in range(3)])
    store.upsert([rec(f"m{i}", namespace="index") for i in range(3)])
    cap = Cap(namespace="ns", keep=2, close=True, also_from=("index",))
    assert store.write(caps=[cap]).evicted == {"ns": ["m0"]}
    assert ids(store.list("ns", order="created_asc")) == ["m1", "m2"]
    assert ids(store.list("index", order="created_asc")) == ["m1", "m2"]
    (m0,) = store.get("ns", ["m0"])
    assert (m0.valid_to, m0.closed_reason) == (T0, "evicted")
    assert {h.record.id for h in store.vector_search("ns", LISBON, k=5)} == {"m1", "m2"}


def test_keep_closed_bounds_the_history_earliest_closed_first(store: RecordStore) -> None:
    closed = [
        rec(f"old{i}", created_at=T0 - 100, valid_to=T0 - 50 + i, closed_reason="superseded")
        for i in range(4)
    ]
    store.upsert([*closed, rec("now")])
    store.write(caps=[Cap(namespace="ns", keep=10, keep_closed=2)])
    every = Filter(include_superseded=True)
    assert sorted(ids(store.list("ns", filter=every))) == ["now", "old2", "old3"]


def test_validity_is_checked(store: RecordStore) -> None:
    with pytest.raises(InvalidInput) as caught:
        store.upsert([rec("x", created_at=T0, valid_to=T0 - 1)])
    assert caught.value.field == "records[0].valid_to"
    with pytest.raises(InvalidInput) as caught:
        store.list("ns", filter=Filter(as_of=T0, include_superseded=True))
    assert caught.value.field == "filter.as_of"
    with pytest.raises(InvalidInput) as caught:
        store.list("ns", filter=Filter(as_of=float("nan")))
    assert caught.value.field == "filter.as_of"
    assert store.list("ns", filter=Filter(include_superseded=True)) == []


def test_superseded_by_finds_what_a_record_replaced(store: RecordStore) -> None:
    _moved(store)
    found = store.list("ns", filter=Filter(superseded_by=("berlin",), include_superseded=True))
    assert ids(found) == ["lisbon"]
    assert store.list("ns", filter=Filter(superseded_by=("berlin",))) == []  # closed: history
    assert store.list("ns", filter=Filter(superseded_by=(), include_superseded=True)) == []


def test_closed_as_of_reads_the_versions_closed_by_then(store: RecordStore) -> None:
    _moved(store)  # Lisbon closed at T0 - 50
    closed = Filter(include_superseded=True, closed_as_of=T0)
    assert ids(store.list("ns", filter=closed)) == ["lisbon"]
    assert [r.record.id for r in store.vector_search("ns", BERLIN, k=5, filter=closed)] == [
        "lisbon"
    ]
    assert [r.record.id for r in store.text_search("ns", "Bob", k=5, filter=closed)] == ["lisbon"]
    assert set(store.gather("ns", query="Bob", vector=BERLIN, k=5, filter=closed).records) == {
        "lisbon"
    }
    assert store.count("ns", replace(closed, closed_as_of=T0 - 50)) == 1  # closed right then
    assert store.count("ns", replace(closed, closed_as_of=T0 - 51)) == 0  # still valid then
    (lisbon,) = store.get("ns", ["lisbon"])
    store.upsert([replace(lisbon, valid_to=None, superseded_by=None, closed_reason=None)])
    assert store.count("ns", closed) == 0  # reopened: current again
    store.upsert([lisbon])
    assert store.delete("ns", ["lisbon"]) == 1
    assert store.list("ns", filter=closed) == []  # erased
    with pytest.raises(InvalidInput) as caught:
        store.list("ns", filter=Filter(closed_as_of=T0))
    assert caught.value.field == "filter.closed_as_of"
