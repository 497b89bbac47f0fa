"""A closed version keeps its own TTL (not the one of the value that replaced it), and
its ``superseded_by`` names the version that replaced it (not its own memory's id), on
every long-term backend; restores keep those links, and versions written before versions
had ids get one when they are next written."""

from dataclasses import replace

from memstack import ManualClock
from memstack.service.memories import MemoryService
from memstack.service.principal import Principal
from memstack.service.restore import MemoryIn, VersionIn
from memstack.storage import Filter, RecordStore

ACME = Principal(tenant="acme")
HOUR = 3600.0
DAY = 24 * HOUR


async def test_a_closed_version_keeps_its_own_ttl(service: MemoryService, clock: ManualClock):
    t0 = clock.now()
    await service.store(ACME, agent_id="bot", key="city", value="Lisbon")  # no TTL
    clock.advance(60)
    await service.store(ACME, agent_id="bot", key="city", value="Berlin", ttl=DAY)
    clock.advance(60)
    current = await service.store(ACME, agent_id="bot", key="city", value="Rome", ttl=HOUR)
    lisbon, berlin, rome = await service.history(ACME, current.id)
    assert lisbon.expires_at is None  # not Berlin's day, nor Rome's hour
    assert berlin.expires_at == t0 + 60 + DAY  # not Rome's hour
    assert rome.expires_at == t0 + 120 + HOUR
    listed = await service.list(ACME, agent_id="bot", include_superseded=True)
    assert {m.value: m.expires_at for m in listed.memories} == {
        "Lisbon": None,
        "Berlin": t0 + 60 + DAY,
        "Rome": t0 + 120 + HOUR,
    }


async def test_superseded_by_names_the_version_that_replaced_it(
    service: MemoryService, clock: ManualClock
):
    first = await service.store(ACME, agent_id="bot", key="city", value="Lisbon")
    clock.advance(60)
    second = await service.update(ACME, first.id, value="Berlin")
    clock.advance(60)
    third = await service.store(ACME, agent_id="bot", key="city", value="Rome")
    history = await service.history(ACME, first.id)
    assert [m.version_id for m in history] == [
        first.version_id,
        second.version_id,
        third.version_id,
    ]
    assert len({first.version_id, second.version_id, third.version_id, first.id}) == 4
    assert [m.superseded_by for m in history] == [second.version_id, third.version_id, None]
    assert all(m.superseded_by != m.id for m in history)
    # The same links on every read of a closed version.
    then = (await service.list(ACME, agent_id="bot", as_of=first.created_at + 30)).memories
    assert [(m.value, m.superseded_by) for m in then] == [("Lisbon", second.version_id)]


async def test_a_rewrite_in_place_keeps_the_version_s_id(service: MemoryService):
    first = await service.store(ACME, agent_id="bot", key="city", value="Lisbon")
    same = await service.store(ACME, agent_id="bot", key="city", value="Lisbon", ttl=HOUR)
    tagged = await service.update(ACME, first.id, metadata={"source": "chat"})
    assert first.version_id is not None
    assert same.version_id == tagged.version_id == first.version_id
    assert (await service.get(ACME, first.id)).version_id == first.version_id


async def test_a_restore_keeps_version_ids_and_links_them(
    service: MemoryService, clock: ManualClock
):
    t0 = clock.now() - DAY
    versions = [
        VersionIn(value="Lisbon", created_at=t0, valid_to=t0 + 60, superseded_by="x"),
        VersionIn(value="Berlin", created_at=t0, valid_from=t0 + 60, version_id="ver_berlin"),
    ]
    restored = MemoryIn(agent_id="bot", scope="agent", key="city", versions=versions)
    await service.restore(ACME, [restored])
    (current,) = (await service.list(ACME, agent_id="bot")).memories
    lisbon, berlin = await service.history(ACME, current.id)
    assert berlin.version_id == "ver_berlin" and lisbon.version_id not in (None, "x")
    assert lisbon.superseded_by == "ver_berlin"
    # Restored again as listed: the same ids and links.
    again = MemoryIn(
        agent_id="bot",
        scope="agent",
        key="city",
        versions=[
            replace(versions[0], version_id=lisbon.version_id, superseded_by="ver_berlin"),
            versions[1],
        ],
    )
    await service.restore(ACME, [again], replace=True)
    assert [(m.version_id, m.superseded_by) for m in await service.history(ACME, current.id)] == [
        (lisbon.version_id, "ver_berlin"),
        ("ver_berlin", None),
    ]


async def test_a_version_written_before_versions_had_ids_gets_one(
    service: MemoryService, records: RecordStore, clock: ManualClock
):
    first = await service.store(ACME, agent_id="bot", key="city", value="Lisbon", ttl=DAY)
    namespace = service.long_term.namespace("acme", "bot")
    (stored,) = records.list(namespace, filter=Filter(include_superseded=True))
    legacy = {k: v for k, v in stored.metadata.items() if k != "version"}
    records.upsert([replace(stored, metadata=legacy)])  # as the code before wrote it
    assert (await service.get(ACME, first.id)).version_id is None
    clock.advance(60)
    current = await service.store(ACME, agent_id="bot", key="city", value="Berlin")
    old, new = await service.history(ACME, first.id)
    assert old.version_id is not None and old.version_id not in (new.version_id, first.id)
    assert (old.superseded_by, old.expires_at) == (new.version_id, first.expires_at)
    assert new.version_id == current.version_id is not None
