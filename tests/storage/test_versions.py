"""The version rules on records (``memstack.storage.versions``), on every backend where a
store is involved: a version never closes before it started, a closed copy names its
memory and sorts after it, newest closed first, and the earliest closed go beyond
``KEPT_VERSIONS``."""

from __future__ import annotations

import pytest

from memstack.errors import InvalidInput, NotFound, WriteConflict
from memstack.storage import Filter, RecordStore
from memstack.storage.versions import (
    KEPT_VERSIONS,
    Closing,
    beyond_kept,
    close_current,
    closed,
    closed_copy,
    history,
    memory_of,
    starts,
)
from tests.storage.records import T0, ids, rec


def test_a_version_never_closes_before_it_started() -> None:
    moved_in = rec("m", created_at=T0 - 100, valid_from=T0 - 10)
    assert starts(moved_in) == T0 - 10
    early = closed(moved_in, at=T0 - 50, reason="superseded", by="n")
    assert (early.valid_to, early.superseded_by, early.closed_reason) == (
        T0 - 10,
        "n",
        "superseded",
    )
    assert early.updated_at == T0 - 50
    copy = closed_copy(moved_in, "m", at=T0 - 50, reason="superseded", expires_at=None)
    assert (copy.valid_from, copy.valid_to) == (T0 - 10, T0 - 10)
    assert starts(rec("plain", created_at=T0 - 7)) == T0 - 7


def test_a_closed_copy_names_its_memory_and_keeps_the_shorter_ttl() -> None:
    stored = rec("m", created_at=T0 - 100, expires_at=T0 + 500, metadata={"value": "tea"})
    copy = closed_copy(stored, "m", at=T0, reason="superseded", expires_at=T0 + 200)
    assert copy.id.startswith("m~") and memory_of(copy) == "m" and memory_of(stored) == "m"
    assert copy.metadata == {"value": "tea", "version_of": "m"}
    assert (copy.superseded_by, copy.closed_reason, copy.expires_at) == (
        "m",
        "superseded",
        T0 + 200,
    )
    forever = closed_copy(rec("m"), "m", at=T0, reason="evicted", expires_at=None)
    assert forever.expires_at is None


def test_a_newest_first_listing_shows_the_memory_then_its_versions_newest_first(
    store: RecordStore,
) -> None:
    current = rec("m", created_at=T0 - 100, valid_from=T0 - 10)
    first = rec("m", created_at=T0 - 100, valid_from=T0 - 100)
    second = rec("m", created_at=T0 - 100, valid_from=T0 - 40)
    copies = [
        closed_copy(first, "m", at=T0 - 40, reason="superseded", expires_at=None),
        closed_copy(second, "m", at=T0 - 10, reason="superseded", expires_at=None),
    ]
    store.upsert([current, *copies])
    listed = store.list("ns", filter=Filter(include_superseded=True), order="created_desc")
    assert ids(listed) == ["m", copies[1].id, copies[0].id]
    assert ids(store.list("ns")) == ["m"]


def test_beyond_kept_names_the_earliest_closed() -> None:
    versions = [
        closed(rec(f"v{i:02}", created_at=T0), at=T0 + (KEPT_VERSIONS + 2 - i), reason="x")
        for i in range(KEPT_VERSIONS + 2)
    ]
    assert beyond_kept(versions) == [
        f"v{i:02}" for i in (KEPT_VERSIONS + 1, KEPT_VERSIONS, KEPT_VERSIONS - 1)
    ]
    assert beyond_kept(versions[: KEPT_VERSIONS - 1]) == []


def test_close_current_and_history_walk_the_chain(store: RecordStore) -> None:
    store.upsert([rec("lisbon", created_at=T0 - 100), rec("berlin", created_at=T0 - 50)])
    (done,), (expect,) = close_current(
        store, "ns", [Closing(id="lisbon", at=T0 - 50, reason="superseded", by="berlin")]
    )
    assert (expect.id, expect.seen) == ("lisbon", store.get("ns", ["lisbon"])[0])
    store.write(upserts=[done], expect=[expect])
    with pytest.raises(WriteConflict):  # closed already: a second writer's close is refused
        store.write(upserts=[done], expect=[expect])
    assert ids(history(store, "ns", "berlin")) == ["lisbon", "berlin"]
    assert ids(history(store, "ns", "lisbon")) == ["lisbon", "berlin"]
    with pytest.raises(InvalidInput, match="already superseded by 'berlin'"):
        close_current(store, "ns", [Closing(id="lisbon", at=T0, reason="superseded")])
    with pytest.raises(NotFound):
        history(store, "ns", "paris")
