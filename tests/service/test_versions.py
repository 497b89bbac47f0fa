"""Versions of a service memory over every long-term backend: a new value closes the old
one and keeps it, history shows them all, the cap closes what it evicts, a delete erases
everything of a memory."""

import json
from dataclasses import replace

import pytest

from memstack import InvalidInput, ManualClock, NotFound
from memstack.embeddings import HashEmbedder
from memstack.service.ltm import LongTermTier
from memstack.service.memories import MemoryService
from memstack.service.principal import Principal
from memstack.service.restore import MemoryIn, VersionIn
from memstack.service.stm import InProcessTier
from memstack.service.types import Memory, memory_from_json, memory_to_json
from memstack.storage import Filter, RecordStore
from memstack.storage.versions import KEPT_VERSIONS
from tests.service.conftest import OLD_STORED_JSON

ACME = Principal(tenant="acme")
OTHER = Principal(tenant="other")
BOT_ONLY = Principal(tenant="acme", agents=frozenset({"bot"}))
EVERY_RECORD = Filter(include_superseded=True, include_expired=True)


def make_service(records: RecordStore, clock: ManualClock, keep: int = 200) -> MemoryService:
    return MemoryService(
        records=records,
        embedder=HashEmbedder(),
        short_term=InProcessTier(max_entries=20),
        ltm_max_entries=keep,
        clock=clock,
    )


@pytest.fixture
def service(records: RecordStore, clock: ManualClock) -> MemoryService:
    return make_service(records, clock)


async def lives_in(service: MemoryService, clock: ManualClock, *cities: str) -> Memory:
    """Store where Bob lives, once per city, a minute apart; the last write."""
    memory = None
    for city in cities:
        memory = await service.store(ACME, agent_id="bot", key="bob.city", value=city)
        clock.advance(60)
    assert memory is not None
    return memory


def stored_records(service: MemoryService, tenant: str, bucket: str) -> int:
    return service.long_term.records.count(
        service.long_term.namespace(tenant, bucket), EVERY_RECORD
    )


async def test_an_upsert_closes_the_old_version_and_keeps_it(
    service: MemoryService, clock: ManualClock
):
    t0 = clock.now()
    current = await lives_in(service, clock, "Lisbon", "Berlin", "Rome")
    assert (current.valid_from, current.valid_to, current.created_at) == (t0 + 120, None, t0)
    history = await service.history(ACME, current.id)
    assert [m.value for m in history] == ["Lisbon", "Berlin", "Rome"]
    assert {m.id for m in history} == {current.id}  # each is "memory X as it was"
    assert [(m.valid_from, m.valid_to) for m in history] == [
        (t0, t0 + 60),
        (t0 + 60, t0 + 120),
        (t0 + 120, None),
    ]
    # Each closed version names the version that replaced it, not its own memory.
    assert [(m.superseded_by, m.closed_reason) for m in history] == [
        (history[1].version_id, "superseded"),
        (history[2].version_id, "superseded"),
        (None, None),
    ]
    assert len({m.version_id for m in history} - {None, current.id}) == 3
    assert history[2].version_id == current.version_id
    assert stored_records(service, "acme", "bot") == 3  # nothing deleted to get there
    assert (await service.get(ACME, current.id)).value == "Rome"


async def test_default_reads_show_the_current_version_only(
    service: MemoryService, clock: ManualClock
):
    current = await lives_in(service, clock, "Lisbon", "Berlin")
    page = await service.list(ACME, agent_id="bot")
    assert (page.total, [m.value for m in page.memories]) == (1, ["Berlin"])
    assert [m.value for m in await service.context(ACME, agent_id="bot")] == ["Berlin"]
    hits = await service.search(ACME, "Lisbon Berlin", agent_id="bot")
    assert [(h.memory.id, h.memory.value) for h in hits] == [(current.id, "Berlin")]
    block = await service.render_memories(ACME, agent_id="bot")
    assert "Berlin" in block and "Lisbon" not in block


async def test_update_supersedes_a_value_but_rewrites_metadata_and_ttl_in_place(
    service: MemoryService, clock: ManualClock
):
    first = await lives_in(service, clock, "Lisbon")
    await service.store(ACME, agent_id="bot", key="bob.city", value="Lisbon")  # same value
    await service.update(ACME, first.id, metadata={"source": "chat"})
    await service.update(ACME, first.id, ttl=3600)
    assert len(await service.history(ACME, first.id)) == 1
    clock.advance(60)
    moved = await service.update(ACME, first.id, value="Berlin")
    assert moved.valid_from == clock.now() and moved.expires_at == clock.now() - 60 + 3600
    old, new = await service.history(ACME, first.id)
    assert (old.value, old.metadata, old.valid_from) == (
        "Lisbon",
        {"source": "chat"},
        first.valid_from,
    )
    assert (old.valid_to, new.value) == (moved.valid_from, "Berlin")


async def test_history_survives_supersedes_and_an_eviction(
    records: RecordStore, clock: ManualClock
):
    service = make_service(records, clock, keep=2)
    bob = await lives_in(service, clock, "Lisbon", "Berlin", "Rome")
    await service.store(ACME, agent_id="bot", key="ann.city", value="Oslo")
    clock.advance(60)
    evicted_at = clock.now()
    await service.store(ACME, agent_id="bot", key="eve.city", value="Kyiv")  # Bob is oldest
    with pytest.raises(NotFound):
        await service.get(ACME, bob.id)
    page = await service.list(ACME, agent_id="bot")
    assert sorted(m.value for m in page.memories) == ["Kyiv", "Oslo"]
    assert "Rome" not in {m.value for m in await service.context(ACME, agent_id="bot")}
    history = await service.history(ACME, bob.id)
    assert [m.value for m in history] == ["Lisbon", "Berlin", "Rome"]
    assert (history[-1].valid_to, history[-1].closed_reason) == (evicted_at, "evicted")
    assert history[-1].superseded_by is None
    with pytest.raises(NotFound):  # a closed memory is not current: 404 as before
        await service.update(ACME, bob.id, value="Paris")
    erased = await service.delete(ACME, bob.id)  # but it can be erased by its id
    assert (erased.value, erased.closed_reason) == ("Rome", "evicted")
    with pytest.raises(NotFound):
        await service.history(ACME, bob.id)
    every = Filter(include_expired=True, include_superseded=True)
    left = records.list(LongTermTier.namespace("acme", "bot"), filter=every, limit=100)
    assert sorted(str(r.metadata.get("value")) for r in left) == ["Kyiv", "Oslo"]


async def test_storing_an_evicted_memory_again_keeps_the_eviction_in_history(
    records: RecordStore, clock: ManualClock
):
    service = make_service(records, clock, keep=1)
    bob = await lives_in(service, clock, "Lisbon")
    await service.store(ACME, agent_id="bot", key="ann.city", value="Oslo")  # evicts Bob
    clock.advance(60)
    again = await service.store(ACME, agent_id="bot", key="bob.city", value="Berlin")
    assert (again.id, again.valid_from, again.created_at) == (bob.id, clock.now(), clock.now())
    history = await service.history(ACME, bob.id)
    assert [(m.value, m.closed_reason) for m in history] == [
        ("Lisbon", "evicted"),
        ("Berlin", None),
    ]
    assert history[0].superseded_by == history[1].version_id == again.version_id
    assert again.version_id not in (None, bob.version_id, bob.id)


async def test_caps_count_current_memories_only(records: RecordStore, clock: ManualClock):
    service = make_service(records, clock, keep=2)
    bob = await lives_in(service, clock, *(f"city {i}" for i in range(5)))
    ann = await service.store(ACME, agent_id="bot", key="ann.city", value="Oslo")
    assert {m.id for m in (await service.list(ACME, agent_id="bot")).memories} == {bob.id, ann.id}
    assert len(await service.history(ACME, bob.id)) == 5


async def test_versions_per_memory_are_bounded_earliest_closed_first(
    service: MemoryService, clock: ManualClock
):
    values = [f"city {i}" for i in range(KEPT_VERSIONS + 5)]
    bob = await lives_in(service, clock, *values)
    history = await service.history(ACME, bob.id)
    assert [m.value for m in history] == values[-(KEPT_VERSIONS + 1) :]
    assert stored_records(service, "acme", "bot") == KEPT_VERSIONS + 1


async def test_delete_erases_every_version(service: MemoryService, clock: ManualClock):
    bob = await lives_in(service, clock, "Lisbon", "Berlin", "Rome")
    await service.delete(ACME, bob.id)
    with pytest.raises(NotFound):
        await service.history(ACME, bob.id)
    assert stored_records(service, "acme", "bot") == 0
    index = service.long_term.index_namespace("acme")
    assert service.long_term.records.count(index, EVERY_RECORD) == 0
    assert await service.search(ACME, "Lisbon", agent_id="bot", mode="text") == []


async def test_delete_many_erases_versions_and_evicted_memories(
    records: RecordStore, clock: ManualClock
):
    service = make_service(records, clock, keep=2)
    await lives_in(service, clock, "Lisbon", "Berlin")
    for key in ("ann.city", "eve.city"):  # the second evicts Bob
        await service.store(ACME, agent_id="bot", key=key, value="Oslo")
        clock.advance(1)
    shared = await service.store(ACME, agent_id="bot", key="hq", value="Porto", scope="global")
    await service.store(ACME, agent_id="bot", key="hq", value="Faro", scope="global")
    assert await service.delete_many(ACME, agent_id="bot") == 3  # the current ones
    assert stored_records(service, "acme", "bot") == 0
    assert stored_records(service, "acme", "~global") == 0
    with pytest.raises(NotFound):
        await service.history(ACME, shared.id)


async def test_delete_many_erases_versions_another_agent_wrote(
    service: MemoryService, clock: ManualClock
):
    # A global memory's history may hold versions of another agent (one written when
    # global memories left the agent out of their identity, restored as exported).
    t0 = clock.now() - 60
    versions = [
        VersionIn(value="Porto", agent_id="ann", created_at=t0, valid_to=t0 + 1, superseded_by="x"),
        VersionIn(value="Faro", created_at=t0, valid_from=t0 + 1),
    ]
    await service.restore(
        ACME, [MemoryIn(agent_id="bot", scope="global", key="hq", versions=versions)]
    )
    (shared,) = (await service.list(ACME, agent_id="bot", scope="global")).memories
    assert [m.agent_id for m in await service.history(ACME, shared.id)] == ["ann", "bot"]
    anns = await service.store(ACME, agent_id="ann", key="hq", value="Braga", scope="global")
    assert await service.delete_many(ACME, agent_id="bot", scope="global") == 1
    assert stored_records(service, "acme", "~global") == 1  # ann's own global memory
    assert (await service.get(ACME, anns.id)).value == "Braga"


async def test_history_is_tenant_and_key_scoped(service: MemoryService, clock: ManualClock):
    bob = await lives_in(service, clock, "Lisbon", "Berlin")
    other = await service.store(ACME, agent_id="ops", key="k", value="v1")
    await service.store(ACME, agent_id="ops", key="k", value="v2")
    for principal, memory_id in [
        (OTHER, bob.id),
        (BOT_ONLY, other.id),
        (ACME, "mem_nope"),
        (ACME, ""),
        (ACME, "x" * 201),
    ]:
        with pytest.raises(NotFound) as caught:
            await service.history(principal, memory_id)
        assert caught.value.field == "id"
    assert len(await service.history(BOT_ONLY, bob.id)) == 2


async def test_history_of_an_evicted_memory_is_scoped_too(records: RecordStore, clock: ManualClock):
    service = make_service(records, clock, keep=1)
    ops = await service.store(ACME, agent_id="ops", key="k", value="v1")
    await service.store(ACME, agent_id="ops", key="k2", value="v2")  # evicts ops/k
    for principal in (OTHER, BOT_ONLY):
        with pytest.raises(NotFound):
            await service.history(principal, ops.id)
    assert [m.closed_reason for m in await service.history(ACME, ops.id)] == ["evicted"]


def test_stored_json_without_validity_still_loads():
    old = OLD_STORED_JSON
    memory = memory_from_json(json.dumps(old))
    assert (memory.valid_from, memory.valid_to, memory.superseded_by) == (None, None, None)
    assert memory.starts == 10.0 and memory.is_current
    closed = replace(
        memory,
        valid_from=11.0,
        valid_to=12.0,
        superseded_by="mem_1",
        closed_reason="superseded",
    )
    assert memory_from_json(memory_to_json(closed)) == closed


async def test_as_of_shows_the_version_valid_then_with_the_memory_id(
    service: MemoryService, clock: ManualClock
):
    t0 = clock.now()
    bob = await lives_in(service, clock, "Lisbon", "Berlin")
    await service.store(ACME, agent_id="bot", key="ann.city", value="Oslo")
    for at, values in [
        (t0 - 1, []),
        (t0 + 30, ["Lisbon"]),
        (t0 + 60, ["Berlin"]),
        (clock.now(), ["Oslo", "Berlin"]),
    ]:
        page = await service.list(ACME, agent_id="bot", as_of=at)
        assert [m.value for m in page.memories] == values
        assert page.total == len(values)
    (then,) = (await service.list(ACME, agent_id="bot", as_of=t0 + 30)).memories
    assert (then.id, then.valid_to, then.superseded_by) == (bob.id, t0 + 60, bob.version_id)


async def test_include_superseded_lists_every_version_in_pages_that_never_overlap(
    service: MemoryService, clock: ManualClock
):
    await lives_in(service, clock, "Lisbon", "Berlin", "Rome")
    await service.store(ACME, agent_id="bot", key="ann.city", value="Oslo", scope="global")
    page = await service.list(ACME, include_superseded=True)
    assert page.total == 4
    every = [(m.value, m.valid_to is None) for m in page.memories]
    assert every == [("Oslo", True), ("Rome", True), ("Berlin", False), ("Lisbon", False)]
    paged = [
        m.value
        for offset in range(4)
        for m in (
            await service.list(ACME, include_superseded=True, limit=1, offset=offset)
        ).memories
    ]
    assert paged == [value for value, _ in every]
    keyed = await service.list(ACME, agent_id="bot", key="bob.city", include_superseded=True)
    assert keyed.total == 3


async def test_search_as_of_finds_the_old_value(service: MemoryService, clock: ManualClock):
    t0 = clock.now()
    bob = await lives_in(service, clock, "Bob lives in Lisbon", "Bob moved to Berlin")
    (now,) = await service.search(ACME, "Where does Bob live?", agent_id="bot")
    assert now.memory.value == "Bob moved to Berlin"
    (then,) = await service.search(ACME, "Where does Bob live?", agent_id="bot", as_of=t0 + 1)
    assert (then.memory.id, then.memory.value) == (bob.id, "Bob lives in Lisbon")
    assert await service.search(ACME, "Lisbon", mode="text", as_of=t0 - 1) == []


@pytest.mark.parametrize("as_of", [float("nan"), float("inf"), "yesterday", True, [1.0]])
async def test_as_of_must_be_a_finite_number(service: MemoryService, as_of: object):
    with pytest.raises(InvalidInput) as listed:
        await service.list(ACME, as_of=as_of)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput) as searched:
        await service.search(ACME, "bob", as_of=as_of)  # type: ignore[arg-type]
    assert listed.value.field == searched.value.field == "as_of"
    assert "as_of" in str(listed.value)


async def test_as_of_and_include_superseded_exclude_each_other(service: MemoryService):
    with pytest.raises(InvalidInput) as caught:
        await service.list(ACME, as_of=1.0, include_superseded=True)
    assert caught.value.field == "as_of" and "include_superseded" in str(caught.value)
