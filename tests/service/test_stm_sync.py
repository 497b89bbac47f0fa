"""The short-term tier heals after an outage (TierSync), on both tiers: a bucket is served
only when it is complete and filled at the long-term tier's epoch.

``Switchable`` is a real ``ShortTermTier`` (in this module, plugged in through the
production seam) that forwards to a real tier until ``down`` is set, then raises
``StoreUnavailable`` as a stopped Redis does; ``lose_everything`` clears it as a Redis
restarted without persistence would.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import pytest

from memstack import ManualClock
from memstack.embeddings import HashEmbedder
from memstack.errors import StoreUnavailable
from memstack.service.memories import MemoryService
from memstack.service.principal import Principal
from memstack.service.stm import BucketRead, InProcessTier, ShortTermTier
from memstack.service.stm_redis import RedisTier
from memstack.service.types import Memory
from memstack.storage import InMemoryRecordStore, RecordStore
from tests.service.test_stm import T0, delete_prefix, mem

ACME = Principal(tenant="acme")
STM_MAX = 5


@dataclass(kw_only=True)
class Switchable:
    """A ``ShortTermTier`` that forwards to ``inner`` while up and fails while down."""

    inner: ShortTermTier
    down: bool = False

    @property
    def max_entries(self) -> int:
        return self.inner.max_entries

    def _up(self) -> ShortTermTier:
        if self.down:
            raise StoreUnavailable("the short-term tier is down (test)")
        return self.inner

    def put(self, memory: Memory) -> None:
        self._up().put(memory)

    def recent(
        self, tenant: str, bucket: str, *, now: float, limit: int | None = None
    ) -> list[Memory]:
        return self._up().recent(tenant, bucket, now=now, limit=limit)

    def read(self, tenant: str, bucket: str, *, now: float, limit: int | None = None) -> BucketRead:
        return self._up().read(tenant, bucket, now=now, limit=limit)

    def remove(self, tenant: str, bucket: str, ids: Sequence[str]) -> int:
        return self._up().remove(tenant, bucket, ids)

    def replace(
        self,
        tenant: str,
        bucket: str,
        memories: Sequence[Memory],
        *,
        epoch: str | None = None,
        if_version: str | None = None,
    ) -> bool:
        return self._up().replace(tenant, bucket, memories, epoch=epoch, if_version=if_version)

    def clear_tenant(self, tenant: str) -> int:
        return self._up().clear_tenant(tenant)

    def ping(self) -> None:
        self._up().ping()

    def close(self) -> None:
        self.inner.close()

    def lose_everything(self) -> None:
        self.inner.clear_tenant("acme")


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(start=T0)


@pytest.fixture
def records(clock: ManualClock) -> Iterator[RecordStore]:
    store = InMemoryRecordStore(clock=clock)
    store.setup()
    yield store
    store.close()


@pytest.fixture(params=["inprocess", "redis"])
def new_tier(request: pytest.FixtureRequest) -> Iterator[Callable[[], ShortTermTier]]:
    """Tiers of one kind; two from one call on Redis share its keys (two processes)."""
    prefix = f"memstack:test:{uuid.uuid4().hex[:12]}"
    opened: list[ShortTermTier] = []
    shared = InProcessTier(max_entries=STM_MAX)

    def make() -> ShortTermTier:
        if request.param == "inprocess":
            return shared
        url: str = request.getfixturevalue("redis_url")
        tier = RedisTier.from_url(url, max_entries=STM_MAX, prefix=prefix)
        opened.append(tier)
        return tier

    yield make
    for tier in opened:
        tier.close()
    if request.param == "redis":
        delete_prefix(request.getfixturevalue("redis_url"), prefix)


def service(records: RecordStore, tier: ShortTermTier, clock: ManualClock) -> MemoryService:
    return MemoryService(records=records, embedder=HashEmbedder(), short_term=tier, clock=clock)


async def truth(store: MemoryService, agent: str = "bot") -> list[tuple[str, str]]:
    """The context the long-term tier alone gives: its newest STM_MAX of the bucket."""
    rows = store.long_term.list("acme", agent, limit=STM_MAX, order="updated_desc")
    return [(m.key, m.value) for m in rows]


async def context(store: MemoryService, agent: str = "bot") -> list[tuple[str, str]]:
    return [(m.key, m.value) for m in await store.context(ACME, agent_id=agent)]


async def write(store: MemoryService, clock: ManualClock, *keys: str, value: str = "v") -> None:
    for key in keys:
        clock.advance(1)
        await store.store(ACME, agent_id="bot", key=key, value=f"{value} {key}")


# -- the tier's state ------------------------------------------------------------------------


def test_a_put_into_a_cold_bucket_keeps_it_cold(new_tier) -> None:
    tier = new_tier()
    tier.put(mem("a"))
    got = tier.read("acme", "agent-1", now=T0)
    assert (got.epoch, [m.key for m in got.memories]) == (None, ["a"])
    assert tier.replace("acme", "agent-1", [mem("a"), mem("b", at=T0 + 1)], epoch="e1")
    tier.put(mem("c", at=T0 + 2))
    got = tier.read("acme", "agent-1", now=T0)
    assert (got.epoch, [m.key for m in got.memories]) == ("e1", ["c", "b", "a"])


def test_a_fill_never_wipes_a_write_that_came_after_its_read(new_tier) -> None:
    tier = new_tier()
    version = tier.read("acme", "agent-1", now=T0).version
    tier.put(mem("late"))  # reached the tier after the filler read the long-term tier
    assert not tier.replace("acme", "agent-1", [mem("old")], epoch="e1", if_version=version)
    got = tier.read("acme", "agent-1", now=T0)
    assert (got.epoch, [m.key for m in got.memories]) == (None, ["late"])
    assert tier.replace("acme", "agent-1", [mem("old")], epoch="e1", if_version=got.version)


@pytest.mark.parametrize(
    "shrink",
    [
        lambda t: t.remove("acme", "agent-1", [mem("k2").id]),
        lambda t: t.read("acme", "agent-1", now=T0 + 50),  # k0 has expired
    ],
    ids=["remove", "expire"],
)
def test_a_full_bucket_that_loses_an_entry_turns_cold(new_tier, shrink) -> None:
    tier = new_tier()
    full = [mem(f"k{i}", at=T0 + i, expires_at=T0 + 10 if i == 0 else None) for i in range(5)]
    tier.replace("acme", "agent-1", full, epoch="e1")
    shrink(tier)
    assert tier.read("acme", "agent-1", now=T0 + 50).epoch is None
    tier.replace("acme", "agent-1", full[1:3], epoch="e1")  # not full: removing keeps it warm
    tier.remove("acme", "agent-1", [mem("k2").id])
    assert tier.read("acme", "agent-1", now=T0).epoch == "e1"


# -- the service over a tier that fails and comes back ---------------------------------------


async def test_a_tier_back_empty_is_never_served_partially(new_tier, records, clock) -> None:
    tier = Switchable(inner=new_tier())
    store = service(records, tier, clock)
    await write(store, clock, *[f"k{i}" for i in range(8)])
    tier.lose_everything()  # Redis restarted without its data
    await write(store, clock, "first-after")  # the write that used to look complete
    assert await context(store) == await truth(store)
    assert len(await context(store)) == STM_MAX


async def test_writes_redis_missed_are_seen_once_it_returns_with_old_data(
    new_tier, records, clock
) -> None:
    tier = Switchable(inner=new_tier())
    store = service(records, tier, clock)
    await write(store, clock, "a", "b", "c")
    assert await context(store) == await truth(store)  # filled, then warm
    tier.down = True
    await write(store, clock, "a", "d", value="during")  # an update and a new one
    deleted = await store.list(ACME, agent_id="bot", key="b")
    await store.delete(ACME, deleted.memories[0].id)
    assert await context(store) == await truth(store)  # from the long-term tier meanwhile
    tier.down = False  # back with its old entries (AOF): a, b, c as before
    assert await context(store) == await truth(store)
    assert [k for k, _ in await context(store)] == ["d", "a", "c"]


async def test_a_process_that_saw_redis_fail_distrusts_it_once_it_answers(
    new_tier, records, clock
) -> None:
    """Only reads failed here, so no write bumped the epoch; answering again does."""
    tier = Switchable(inner=new_tier())
    store = service(records, tier, clock)
    await write(store, clock, "a", "b")
    await context(store)
    stale = tier.read("acme", "bot", now=clock.now())
    tier.down = True
    await context(store)
    records.write(deletes={store.long_term.namespace("acme", "bot"): [stale.memories[0].id]})
    tier.down = False
    assert await context(store) == await truth(store) == [("a", "v a")]


async def test_another_process_sees_a_missed_write_within_the_epoch_ttl(
    new_tier, records, clock
) -> None:
    tier_a, tier_b = Switchable(inner=new_tier()), new_tier()
    a, b = service(records, tier_a, clock), service(records, tier_b, clock)
    await write(a, clock, "x", "y")
    assert await context(b) == await truth(b)  # b filled the shared bucket
    tier_a.down = True  # a alone cannot reach Redis (a partition)
    await write(a, clock, "z")
    clock.advance(1.0)  # b's cached epoch is now too old to trust
    assert await context(b) == await truth(b) == [("z", "v z"), ("y", "v y"), ("x", "v x")]
    tier_a.down = False
    assert await context(a) == await context(b) == await truth(a)


async def test_warmup_fills_buckets_at_the_current_epoch(new_tier, records, clock) -> None:
    tier = new_tier()
    store = service(records, tier, clock)
    await write(store, clock, "a", "b")
    tier.clear_tenant("acme")
    assert await store.warmup() == 2
    assert tier.read("acme", "bot", now=clock.now()).epoch == store.long_term.epoch()
