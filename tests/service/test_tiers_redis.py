"""The memory service on real Redis + PostgreSQL: shared tiers, warmup, Redis failing."""

import uuid
from collections.abc import Iterator

import pytest

from memstack import ManualClock
from memstack.embeddings import HashEmbedder
from memstack.service.memories import MemoryService
from memstack.service.principal import Principal
from memstack.service.stm_redis import RedisTier
from memstack.storage import PostgresRecordStore, RecordStore
from tests.servers import running_redis

ACME = Principal(tenant="acme")


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(start=1_780_000_000.0)


@pytest.fixture
def records(postgres_url: str, pg_schema: str, clock: ManualClock) -> Iterator[RecordStore]:
    store = PostgresRecordStore(postgres_url, clock=clock, schema=pg_schema)
    store.setup()
    yield store
    store.close()


def _service(records: RecordStore, tier: RedisTier, clock: ManualClock) -> MemoryService:
    return MemoryService(records=records, embedder=HashEmbedder(), short_term=tier, clock=clock)


@pytest.fixture
def prefix() -> str:
    return f"t{uuid.uuid4().hex[:10]}"


async def test_two_services_share_both_tiers(records, redis_url, prefix, clock):
    tier_a = RedisTier.from_url(redis_url, prefix=prefix)
    tier_b = RedisTier.from_url(redis_url, prefix=prefix)
    try:
        a, b = _service(records, tier_a, clock), _service(records, tier_b, clock)
        written = await a.store(ACME, agent_id="bot", key="style", value="Written through A")
        assert [m.value for m in await b.context(ACME, agent_id="bot")] == ["Written through A"]
        assert (await b.get(ACME, written.id)).value == "Written through A"
        await b.delete(ACME, written.id)
        assert await a.context(ACME, agent_id="bot") == []
        assert tier_a.recent("acme", "bot", now=clock.now()) == []
    finally:
        tier_a.clear_tenant("acme")
        tier_a.close()
        tier_b.close()


async def test_warmup_loads_redis_from_postgres(records, redis_url, prefix, clock):
    tier = RedisTier.from_url(redis_url, prefix=prefix)
    try:
        service = _service(records, tier, clock)
        for i in range(25):
            await service.store(ACME, agent_id="bot", key=f"k{i}", value=f"v{i}")
            clock.advance(1)
        tier.clear_tenant("acme")  # as after a Redis restart
        assert await service.warmup() == 20
        recent = tier.recent("acme", "bot", now=clock.now())
        assert [m.key for m in recent] == [f"k{i}" for i in range(24, 4, -1)]
    finally:
        tier.clear_tenant("acme")
        tier.close()


async def test_redis_dying_mid_run_fails_no_read_and_loses_no_write(records, clock):
    with running_redis() as server:
        tier = RedisTier.from_url(server.url, timeout=2.0)
        service = _service(records, tier, clock)
        before = await service.store(
            ACME, agent_id="bot", key="before", value="stored with Redis up"
        )
        clock.advance(1)
        server.stop()
        after = await service.store(
            ACME, agent_id="bot", key="after", value="stored with Redis down"
        )
        context = await service.context(ACME, agent_id="bot")
        assert [m.key for m in context] == ["after", "before"]  # read from the long-term tier
        assert (await service.get(ACME, after.id)).value == "stored with Redis down"
        assert "stored with Redis down" in await service.render_memories(ACME, agent_id="bot")
        hits = await service.search(ACME, "Redis down", mode="text")
        assert hits[0].memory.key == "after"
        await service.delete(ACME, before.id)
        assert [m.key for m in await service.context(ACME, agent_id="bot")] == ["after"]
        tier.close()
