"""ApiKeys.principal: keys that checked out are answered from memory for recheck_s seconds."""

from __future__ import annotations

import asyncio
import builtins
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest

from memstack import InvalidInput, ManualClock
from memstack.service.api_keys import RECHECK_S, ApiKeys
from memstack.service.principal import Principal
from memstack.storage import NamespaceLike, Record, SQLiteRecordStore


class CountingStore(SQLiteRecordStore):
    """A SQLite store that counts ``get`` calls and can run a hook inside one."""

    def __init__(self, path: Path, clock: ManualClock) -> None:
        super().__init__(path, clock=clock)
        self.gets = 0
        self.during_get: list[Callable[[], object]] = []

    def get(self, namespace: NamespaceLike, ids: Sequence[str]) -> builtins.list[Record]:
        self.gets += 1
        found = super().get(namespace, ids)
        while self.during_get:
            self.during_get.pop()()
        return found


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(start=1_780_000_000.0)


@pytest.fixture
def store(tmp_path: Path, clock: ManualClock) -> Iterator[CountingStore]:
    records = CountingStore(tmp_path / "keys.db", clock)
    records.setup()
    yield records
    records.close()


@pytest.fixture
def other(tmp_path: Path, store: CountingStore, clock: ManualClock) -> Iterator[ApiKeys]:
    """ApiKeys on its own connection to the same file: another process's view."""
    records = SQLiteRecordStore(tmp_path / "keys.db", clock=clock)
    yield ApiKeys(records, clock=clock)
    records.close()


def principal(keys: ApiKeys, raw: str) -> Principal | None:
    return asyncio.run(keys.principal(raw))


def test_a_verified_key_is_answered_without_reading_the_store(
    store: CountingStore, clock: ManualClock
):
    keys = ApiKeys(store, clock=clock)
    raw, _ = keys.create(tenant="acme", agents=["bot"])
    assert keys.verified(raw) is None  # never checked yet
    expected = Principal(tenant="acme", agents=frozenset({"bot"}))
    assert principal(keys, raw) == expected
    assert store.gets == 1
    for _ in range(5):
        assert principal(keys, raw) == expected
        assert keys.verified(raw) == expected
    assert store.gets == 1
    clock.advance(RECHECK_S)
    assert keys.verified(raw) is None
    assert principal(keys, raw) == expected
    assert store.gets == 2


def test_authenticate_reads_the_store_every_time(store: CountingStore, clock: ManualClock):
    keys = ApiKeys(store, clock=clock)
    raw, _ = keys.create(tenant="acme")
    for calls in range(1, 4):
        assert keys.authenticate(raw) == Principal(tenant="acme", agents=None)
        assert store.gets == calls


def test_a_key_revoked_here_stops_at_once(store: CountingStore, clock: ManualClock):
    keys = ApiKeys(store, clock=clock)
    raw, info = keys.create(tenant="acme")
    assert principal(keys, raw) is not None
    keys.revoke(info.id)
    assert keys.verified(raw) is None
    assert principal(keys, raw) is None


def test_a_key_revoked_elsewhere_stops_within_recheck_s(
    store: CountingStore, other: ApiKeys, clock: ManualClock
):
    keys = ApiKeys(store, clock=clock, recheck_s=5)
    raw, info = keys.create(tenant="acme")
    assert principal(keys, raw) is not None
    other.revoke(info.id)
    clock.advance(4.9)
    assert principal(keys, raw) is not None  # trusted from memory until recheck_s
    clock.advance(0.1)
    assert principal(keys, raw) is None
    assert principal(keys, raw) is None


def test_a_check_that_read_before_a_revocation_here_is_not_kept(
    store: CountingStore, clock: ManualClock
):
    keys = ApiKeys(store, clock=clock)
    raw, info = keys.create(tenant="acme")
    # The record is read while the key is active; the key is revoked before the check ends.
    store.during_get.append(lambda: keys.revoke(info.id))
    assert keys.authenticate(raw) is not None  # what that read saw
    assert keys.verified(raw) is None
    assert principal(keys, raw) is None


def test_creating_a_key_here_forgets_the_verified_ones(store: CountingStore, clock: ManualClock):
    keys = ApiKeys(store, clock=clock)
    raw, _ = keys.create(tenant="acme")
    assert principal(keys, raw) is not None
    keys.create(tenant="globex")
    assert keys.verified(raw) is None


def test_wrong_keys_are_never_kept(store: CountingStore, clock: ManualClock):
    keys = ApiKeys(store, clock=clock)
    raw, info = keys.create(tenant="acme")
    wrong = [f"msk_{info.id}_" + "A" * 43, raw[:-1] + ("A" if raw[-1] != "A" else "B"), ""]
    for attempt in range(1, 3):
        for key in wrong:
            assert principal(keys, key) is None
            assert keys.verified(key) is None
        assert store.gets == 2 * attempt  # the empty key never reaches the store


def test_at_most_cached_keys_are_kept_the_least_recently_used_go(
    store: CountingStore, clock: ManualClock
):
    keys = ApiKeys(store, clock=clock, cached_keys=2)
    raws = [keys.create(tenant=f"t{n}")[0] for n in range(3)]
    for raw in raws[:2]:
        assert principal(keys, raw) is not None
    assert keys.verified(raws[0]) is not None  # raws[1] is now the least recently used
    assert principal(keys, raws[2]) is not None
    assert keys.verified(raws[1]) is None
    assert keys.verified(raws[0]) is not None and keys.verified(raws[2]) is not None


def test_a_clock_that_went_back_is_not_trusted(store: CountingStore, clock: ManualClock):
    keys = ApiKeys(store, clock=clock)
    raw, _ = keys.create(tenant="acme")
    assert principal(keys, raw) is not None
    clock.advance(-30)
    assert keys.verified(raw) is None


def test_recheck_s_zero_reads_the_store_for_every_key(store: CountingStore, clock: ManualClock):
    keys = ApiKeys(store, clock=clock, recheck_s=0)
    raw, _ = keys.create(tenant="acme")
    for calls in range(1, 4):
        assert principal(keys, raw) is not None
        assert store.gets == calls


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"recheck_s": -1}, "recheck_s"),
        ({"recheck_s": 3_601}, "recheck_s"),
        ({"recheck_s": "1"}, "recheck_s"),
        ({"recheck_s": True}, "recheck_s"),
        ({"cached_keys": 0}, "cached_keys"),
        ({"cached_keys": 2.5}, "cached_keys"),
    ],
)
def test_bad_settings_are_refused_naming_the_field(
    store: CountingStore, kwargs: dict[str, object], field: str
):
    with pytest.raises(InvalidInput) as raised:
        ApiKeys(store, **kwargs)  # type: ignore[arg-type]
    assert raised.value.field == field and field in str(raised.value)


@pytest.mark.parametrize(
    ("given", "field"),
    [
        ({"tenant": "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"}, "tenant"),
        ({"tenant": "acme", "agents": ["bot", "AKIA" + "Z7XQ4M2P9R3T6W8Y"]}, "agents[1]"),
        (
            {"tenant": "acme", "label": "ci key sk-" + "proj-" + "Q3v9Lp2Xz8Rt5Wm1Yk7Nb4Hc6Jd0Fs"},
            "label",
        ),
    ],
)
def test_a_key_record_never_stores_a_credential(
    store: CountingStore, given: dict[str, object], field: str
) -> None:
    """The tenant, agents and label of a key are stored (and the tenant names every
    namespace of it), so they pass the one secret filter too."""
    keys = ApiKeys(store)
    with pytest.raises(InvalidInput, match="looks like a secret") as refused:
        keys.create(**given)  # type: ignore[arg-type]
    assert refused.value.field == field
    assert keys.list() == []
