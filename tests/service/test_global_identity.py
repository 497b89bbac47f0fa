"""Spec 004's upsert identity ``(agent_id, scope, key)`` holds for global memories too:
two agents' global memories of one key are two memories, and every agent still reads the
global memories of all agents. A store written when global memories left the agent out
of their identity keeps working and loses nothing (``global_identity``), on every
long-term backend and with the short-term tier in Redis."""

import json
import uuid
from collections.abc import Iterator
from dataclasses import replace

import pytest

from memstack import ManualClock, NotFound
from memstack.client._jsonl import read_export
from memstack.embeddings import HashEmbedder
from memstack.service import global_identity
from memstack.service.global_identity import (
    _move_tenant,
    legacy_global_id,
    migrate_global_identity,
)
from memstack.service.memories import MemoryService
from memstack.service.principal import Principal
from memstack.service.stm import InProcessTier, ShortTermTier
from memstack.service.stm_redis import RedisTier
from memstack.service.types import GLOBAL_BUCKET, Memory, memory_id
from memstack.storage import Filter, PostgresRecordStore, RecordStore

ACME = Principal(tenant="acme")
EVERY = Filter(include_superseded=True, include_expired=True)
NEWER = ("version", "followed_by")
"""Record metadata the code before did not write."""


def _service(records: RecordStore, clock: ManualClock, tier: ShortTermTier) -> MemoryService:
    return MemoryService(records=records, embedder=HashEmbedder(), short_term=tier, clock=clock)


def _global_id(agent_id: str, key: str) -> str:
    return memory_id(tenant="acme", scope="global", agent_id=agent_id, session_id=None, key=key)


async def test_two_agents_global_memories_of_one_key_are_two(service: MemoryService):
    bot = await service.store(ACME, agent_id="bot", key="hq", value="Porto", scope="global")
    ops = await service.store(ACME, agent_id="ops", key="hq", value="Faro", scope="global")
    assert bot.id != ops.id
    assert (await service.get(ACME, bot.id)).value == "Porto"  # not overwritten by ops
    again = await service.store(ACME, agent_id="bot", key="hq", value="Braga", scope="global")
    assert again.id == bot.id  # the same agent's upsert
    assert [m.value for m in await service.history(ACME, bot.id)] == ["Porto", "Braga"]
    assert [m.value for m in await service.history(ACME, ops.id)] == ["Faro"]
    # Global scope is shared for reading: every agent sees both agents' global memories.
    for reader in ("bot", "ops", "third"):
        found = await service.context(ACME, agent_id=reader)
        assert sorted((m.agent_id, m.value) for m in found) == [("bot", "Braga"), ("ops", "Faro")]
    listed = await service.list(ACME, scope="global")
    assert listed.total == 2
    mine = await service.list(ACME, agent_id="ops", scope="global")
    assert [m.value for m in mine.memories] == ["Faro"]
    block = await service.render_memories(ACME, agent_id="third")
    assert block.count('<memory key="hq" scope="global">') == 2


def _legacy(key: str, agent_id: str, value: str, at: float) -> Memory:
    return Memory(
        id=legacy_global_id("acme", key),
        tenant="acme",
        agent_id=agent_id,
        scope="global",
        key=key,
        value=value,
        created_at=at,
        updated_at=at,
    )


def _write_as_before(service: MemoryService, records: RecordStore, clock: ManualClock) -> None:
    """What the code before wrote: ``hq`` stored globally by bot, then by ops (one memory
    then, two versions, the last writer's agent on it), ``motto`` by bot; each record
    without the version ids written since."""
    t0 = clock.now()
    long_term = service.long_term
    for memory in (
        _legacy("hq", "bot", "Porto", t0),
        _legacy("hq", "ops", "Faro", t0 + 60),
        _legacy("motto", "bot", "Ship.", t0 + 90),
    ):
        long_term.upsert(memory, HashEmbedder().embed_batch([memory.value])[0])
    namespace = long_term.namespace("acme", GLOBAL_BUCKET)
    old = records.list(namespace, filter=EVERY)
    records.upsert(
        [replace(r, metadata={k: v for k, v in r.metadata.items() if k not in NEWER}) for r in old]
    )
    clock.advance(120)


async def _check_moved(service: MemoryService, records: RecordStore) -> None:
    """A store written before keeps working under the new identity and lost nothing."""
    lagos = await service.store(ACME, agent_id="ops", key="hq", value="Lagos", scope="global")
    assert lagos.id == _global_id("ops", "hq")
    history = await service.history(ACME, lagos.id)
    assert [(m.agent_id, m.value) for m in history] == [
        ("bot", "Porto"),
        ("ops", "Faro"),
        ("ops", "Lagos"),
    ]
    # A version closed before versions had ids names its memory (now under its new id).
    assert history[0].superseded_by == lagos.id
    assert history[1].superseded_by == history[2].version_id
    braga = await service.store(ACME, agent_id="bot", key="hq", value="Braga", scope="global")
    assert braga.id == _global_id("bot", "hq") != lagos.id
    assert [m.value for m in await service.history(ACME, braga.id)] == ["Braga"]
    motto = await service.get(ACME, _global_id("bot", "motto"))
    assert (motto.value, motto.agent_id) == ("Ship.", "bot")
    for old in ("hq", "motto"):
        with pytest.raises(NotFound):
            await service.get(ACME, legacy_global_id("acme", old))
    namespace = service.long_term.namespace("acme", GLOBAL_BUCKET)
    left = records.list(namespace, filter=EVERY)
    assert not [r.id for r in left if r.id.startswith(legacy_global_id("acme", "hq"))]
    assert len(left) == 5  # hq: Porto, Faro, Lagos; hq of bot; motto
    found = await service.context(ACME, agent_id="third")
    assert sorted(m.value for m in found) == ["Braga", "Lagos", "Ship."]


async def test_a_store_written_before_keeps_working_and_loses_nothing(
    records: RecordStore, clock: ManualClock
):
    before = _service(records, clock, InProcessTier())
    _write_as_before(before, records, clock)
    service = _service(records, clock, InProcessTier())
    # Reads need no move: the global memories of the old store are there as they were.
    found = await service.context(ACME, agent_id="third")
    assert sorted((m.agent_id, m.value) for m in found) == [("bot", "Ship."), ("ops", "Faro")]
    await _check_moved(service, records)
    # Moved once per store: another service over it finds nothing left to move.
    assert migrate_global_identity(service.long_term, clock.now()) == 0


@pytest.fixture
def pg_records(postgres_url: str, pg_schema: str, clock: ManualClock) -> Iterator[RecordStore]:
    store = PostgresRecordStore(postgres_url, clock=clock, schema=pg_schema)
    store.setup()
    yield store
    store.close()


async def test_redis_holds_each_agent_s_global_memory_and_drops_the_old_ids(
    pg_records: RecordStore, redis_url: str, clock: ManualClock
):
    tier = RedisTier.from_url(redis_url, prefix=f"t{uuid.uuid4().hex[:10]}")
    try:
        before = _service(pg_records, clock, tier)
        _write_as_before(before, pg_records, clock)
        # The short-term tier as the code before filled it: the old ids, current.
        rows = before.long_term.list("acme", GLOBAL_BUCKET)
        version = tier.read("acme", GLOBAL_BUCKET, now=clock.now()).version
        epoch = before.long_term.epoch()
        tier.replace("acme", GLOBAL_BUCKET, rows, epoch=epoch, if_version=version)
        assert {m.id for m in tier.recent("acme", GLOBAL_BUCKET, now=clock.now())} == {
            legacy_global_id("acme", "hq"),
            legacy_global_id("acme", "motto"),
        }
        service = _service(pg_records, clock, tier)
        await _check_moved(service, pg_records)
        held = tier.recent("acme", GLOBAL_BUCKET, now=clock.now())
        assert sorted(m.value for m in held) == ["Braga", "Lagos", "Ship."]
        assert {m.id for m in held} == {
            _global_id("ops", "hq"),
            _global_id("bot", "hq"),
            _global_id("bot", "motto"),
        }
    finally:
        tier.clear_tenant("acme")
        tier.close()


def test_an_import_keeps_two_agents_global_memories_of_one_key_apart():
    def line(agent_id: str, memory: str, value: str) -> str:
        return json.dumps(
            {"id": memory, "agent_id": agent_id, "scope": "global", "key": "hq", "value": value}
        )

    plan = read_export([line("bot", "mem_a", "Porto"), line("ops", "mem_b", "Faro")])
    (call,) = plan.calls
    assert isinstance(call.body, dict)
    sent = call.body["memories"]
    assert [(m["agent_id"], [v["value"] for v in m["versions"]]) for m in sent] == [
        ("bot", ["Porto"]),
        ("ops", ["Faro"]),
    ]


async def test_a_run_that_finds_everything_moved_still_drops_the_old_ids_from_buckets(
    records: RecordStore, clock: ManualClock
):
    """Another process moved every memory and stopped before it wrote the marker or made
    the short-term buckets stale: the run that finds nothing left to move does it."""
    before = _service(records, clock, InProcessTier())
    _write_as_before(before, records, clock)
    service = _service(records, clock, InProcessTier())
    found = await service.context(ACME, agent_id="third")  # the bucket holds the old ids
    assert {m.id for m in found} == {
        legacy_global_id("acme", "hq"),
        legacy_global_id("acme", "motto"),
    }
    assert _move_tenant(service.long_term, "acme") == 2  # the other process, stopped here
    await service.store(ACME, agent_id="bot", key="tone", value="Calm.", scope="global")
    found = await service.context(ACME, agent_id="third")
    assert {m.id for m in found} == {
        _global_id("ops", "hq"),
        _global_id("bot", "motto"),
        _global_id("bot", "tone"),
    }


async def test_a_memory_already_under_its_new_id_keeps_the_old_one_apart(
    records: RecordStore, clock: ManualClock
):
    before = _service(records, clock, InProcessTier())
    _write_as_before(before, records, clock)
    taken = replace(_legacy("hq", "ops", "Sines", clock.now()), id=_global_id("ops", "hq"))
    before.long_term.upsert(taken, HashEmbedder().embed_batch([taken.value])[0])
    assert migrate_global_identity(before.long_term, clock.now()) == 1  # motto alone
    service = _service(records, clock, InProcessTier())
    assert (await service.get(ACME, legacy_global_id("acme", "hq"))).value == "Faro"
    assert (await service.get(ACME, _global_id("ops", "hq"))).value == "Sines"
    assert (await service.get(ACME, _global_id("bot", "motto"))).value == "Ship."


async def test_a_tenant_read_over_several_pages_moves_every_memory(
    records: RecordStore, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
):
    before = _service(records, clock, InProcessTier())
    _write_as_before(before, records, clock)
    monkeypatch.setattr(global_identity, "_PAGE", 2)  # 3 records: two pages
    service = _service(records, clock, InProcessTier())
    await _check_moved(service, records)
