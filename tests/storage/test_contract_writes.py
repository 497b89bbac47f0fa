"""The RecordStore contract for batch writes, caps, models, namespaces and the legacy layout:
every backend (memory, sqlite, postgres) passes these tests."""

from __future__ import annotations

import numpy as np
import pytest

from memstack.clock import ManualClock
from memstack.errors import ConfigError, InvalidInput
from memstack.storage import Cap, Filter, Namespace, RecordStore
from tests.storage.records import T0, ids, rec, snapshot

DAY = 86_400.0


def test_upserts_deletes_and_caps_happen_in_one_transaction(store: RecordStore) -> None:
    store.upsert([rec(i, embedding=[1, 0]) for i in ("a", "b")])
    before = snapshot(store, ["ns", "idx"])
    with pytest.raises(InvalidInput):  # the third record is refused: nothing at all changes
        store.write(
            upserts=[rec("c", embedding=[0, 1]), rec("d", namespace="idx"), rec("e", text=1)],  # type: ignore[arg-type]
            deletes={"ns": ["a"]},
            caps=[Cap(namespace="ns", keep=1)],
        )
    assert snapshot(store, ["ns", "idx"]) == before


def test_a_cap_evicts_the_oldest_beyond_keep_and_the_same_ids_elsewhere(
    store: RecordStore,
) -> None:
    store.upsert([rec(f"m{i}", created_at=T0 - 100 + i) for i in range(5)])
    store.upsert([rec(f"m{i}", namespace="index") for i in range(5)])
    result = store.write(
        upserts=[rec("m5", created_at=T0)],
        caps=[Cap(namespace="ns", keep=3, also_from=("index",))],
    )
    assert sorted(result.evicted["ns"]) == ["m0", "m1", "m2"]
    assert sorted(ids(store.list("ns"))) == ["m3", "m4", "m5"]
    assert sorted(ids(store.list("index"))) == ["m3", "m4"]


def test_a_cap_under_its_limit_evicts_nothing(store: RecordStore) -> None:
    store.upsert([rec("a"), rec("b")])
    assert store.write(caps=[Cap(namespace="ns", keep=2)]).evicted == {"ns": []}
    assert store.count("ns") == 2


def test_a_retention_cap_drops_the_lowest_recency_and_importance_first(
    store: RecordStore, clock: ManualClock
) -> None:
    now = clock.now()
    store.upsert(
        [
            rec("old-unimportant", created_at=now - 90 * DAY, importance=0.1),
            rec("old-important", created_at=now - 90 * DAY, importance=1.0),
            rec("old-but-used", created_at=now - 90 * DAY, importance=0.1, last_accessed_at=now),
            rec("new-unimportant", created_at=now, importance=0.1),
        ]
    )
    cap = Cap(namespace="ns", keep=2, recency_weight=0.2, importance_weight=0.1)
    # retention: 0.2·0.5^(age/30 days) + 0.1·importance -> 0.035, 0.125, 0.21, 0.21
    assert sorted(store.write(caps=[cap]).evicted["ns"]) == ["old-important", "old-unimportant"]
    assert sorted(ids(store.list("ns"))) == ["new-unimportant", "old-but-used"]


def test_a_cap_counts_and_evicts_unexpired_records_only(
    store: RecordStore, clock: ManualClock
) -> None:
    store.upsert([rec("gone", created_at=T0 - 10, expires_at=clock.now() - 1), rec("a"), rec("b")])
    assert store.write(caps=[Cap(namespace="ns", keep=2)]).evicted == {"ns": []}


@pytest.mark.parametrize(
    ("cap", "field"),
    [
        (Cap(namespace="ns", keep=-1), "cap.keep"),
        (Cap(namespace="ns", keep=1, half_life_days=0), "cap.half_life_days"),
        (Cap(namespace="", keep=1), "namespace"),
        (Cap(namespace="ns", keep=1, recency_weight=float("nan")), "cap.recency_weight"),
    ],
)
def test_bad_caps_are_refused(store: RecordStore, cap: Cap, field: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        store.write(caps=[cap])
    assert caught.value.field == field


def test_a_namespace_keeps_the_model_its_vectors_came_from(store: RecordStore) -> None:
    store.upsert([rec("a", embedding=[1, 0])], model_id="local:minilm")
    info = store.namespace_info("ns")
    assert info is not None
    assert (info.dim, info.model_id) == (2, "local:minilm")
    store.upsert([rec("b", embedding=[0, 1])], model_id="local:minilm")
    store.upsert([rec("c", embedding=[1, 1])])  # a writer that does not say is let through
    with pytest.raises(ConfigError, match=r"'local:minilm'.*'openai:small'"):
        store.upsert([rec("d", embedding=[1, 1])], model_id="openai:small")
    with pytest.raises(ConfigError, match=r"'local:minilm'.*'openai:small'"):
        store.vector_search("ns", [1, 0], k=1, model_id="openai:small")
    with pytest.raises(ConfigError, match=r"'local:minilm'.*'openai:small'"):
        store.nearest("ns", [[1, 0]], model_id="openai:small")
    assert store.count("ns") == 3
    assert ids(
        [h.record for h in store.vector_search("ns", [1, 0], k=1, model_id="local:minilm")]
    ) == ["a"]


def test_an_emptied_namespace_forgets_its_model_and_dimension(store: RecordStore) -> None:
    store.upsert([rec("a", embedding=[1, 0])], model_id="m1")
    store.delete("ns", ["a"])
    assert store.namespace_info("ns") is None
    store.upsert([rec("a", embedding=[1, 0, 0])], model_id="m2")
    info = store.namespace_info("ns")
    assert info is not None
    assert (info.dim, info.model_id) == (3, "m2")


def test_nearest_gives_each_row_its_nearest_unexpired_record(
    store: RecordStore, clock: ManualClock
) -> None:
    assert store.nearest("ns", [[1, 0]]) == [None]
    store.upsert(
        [
            rec("east", embedding=[1, 0]),
            rec("north", embedding=[0, 1]),
            rec("gone", embedding=[-1, 0], expires_at=clock.now() - 1),
        ]
    )
    found = store.nearest("ns", np.array([[2, 0.1], [0.1, 3], [-1, 0]], dtype=np.float32))
    assert [hit[0] if hit else None for hit in found] == ["east", "north", "north"]
    assert found[0] is not None and found[0][1] == pytest.approx(2 / np.hypot(2, 0.1), abs=1e-5)
    with pytest.raises(InvalidInput):
        store.nearest("ns", [[1, 0, 0]])


def test_a_namespace_value_and_its_encoding_name_the_same_records(store: RecordStore) -> None:
    bank = Namespace("bank", "auth/keys")
    store.upsert([rec("a", namespace=bank.encode())])
    assert ids(store.get(bank, ["a"])) == ["a"]
    assert store.count("bank/auth%2Fkeys") == 1
    assert store.count(Namespace("auth", "keys")) == 0
    assert store.namespaces("bank/") == ["bank/auth%2Fkeys"]


def test_setup_moves_long_term_memories_from_their_legacy_names(store: RecordStore) -> None:
    store.upsert(
        [
            rec("a", namespace="ltm_alice_chat", embedding=[1, 0]),
            rec("b", namespace="ltm_a.2fb_chat:t1"),
            rec("c", namespace="ltm_not-legacy"),
        ],
        model_id="m",
    )
    store.setup()
    assert ids(store.list("ltm/alice/chat")) == ["a"]
    assert ids(store.list(Namespace("ltm", "a/b", "chat", "t1"))) == ["b"]
    assert store.count("ltm_alice_chat", Filter(include_expired=True)) == 0
    assert ids(store.list("ltm_not-legacy")) == ["c"]
    info = store.namespace_info("ltm/alice/chat")
    assert info is not None and info.model_id == "m"
    assert ids([h.record for h in store.vector_search("ltm/alice/chat", [1, 0], k=1)]) == ["a"]


def test_a_small_namespace_is_ready_at_once(store: RecordStore) -> None:
    assert store.ready("ns")
    store.upsert([rec("a", embedding=[1, 0])])
    assert store.ready("ns")
