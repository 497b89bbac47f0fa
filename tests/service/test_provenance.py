"""Provenance of service memories over every long-term backend: recorded on store, kept by
an upsert that names none, carried by every version, a filter of list and search, shown
beside a search hit's scores, and carried in the short-term tier's JSON."""

import json
from dataclasses import replace

import pytest

from memstack import InvalidInput, ManualClock
from memstack.service.memories import MemoryService
from memstack.service.principal import Principal
from memstack.service.types import PROVENANCES, Provenance, memory_from_json, memory_to_json
from memstack.storage import Filter, RecordStore
from tests.service.conftest import OLD_STORED_JSON

ACME = Principal(tenant="acme")


async def stored_each(service: MemoryService) -> dict[Provenance, str]:
    """One memory of each provenance for agent bot: provenance -> its id."""
    ids: dict[Provenance, str] = {}
    for provenance in PROVENANCES:
        memory = await service.store(
            ACME,
            agent_id="bot",
            key=f"tea.{provenance}",
            value=f"Green tea, as {provenance} says",
            provenance=provenance,
            provenance_detail=f"from {provenance}",
        )
        ids[provenance] = memory.id
    return ids


async def test_each_provenance_is_recorded_in_the_record_columns(service: MemoryService):
    ids = await stored_each(service)
    for provenance, memory_id in ids.items():
        memory = await service.get(ACME, memory_id)
        assert (memory.provenance, memory.provenance_detail) == (provenance, f"from {provenance}")
        (record,) = service.long_term.records.get(
            service.long_term.namespace("acme", "bot"), [memory_id]
        )
        assert (record.provenance, record.provenance_detail) == (provenance, f"from {provenance}")
        assert "provenance" not in record.metadata and "provenance" not in memory.metadata


async def test_a_memory_stored_without_provenance_is_user_stated(service: MemoryService):
    memory = await service.store(ACME, agent_id="bot", key="k", value="v")
    assert (memory.provenance, memory.provenance_detail) == ("user_stated", None)


@pytest.mark.parametrize(
    "wanted", [("tool_output",), ("extracted", "imported"), tuple(PROVENANCES)]
)
async def test_list_and_search_filter_by_provenance(
    service: MemoryService, wanted: tuple[Provenance, ...]
):
    ids = await stored_each(service)
    page = await service.list(ACME, agent_id="bot", provenances=wanted)
    assert page.total == len(wanted)
    assert {m.id for m in page.memories} == {ids[p] for p in wanted}
    for mode in ("hybrid", "text", "semantic"):
        hits = await service.search(ACME, "green tea", mode=mode, provenances=wanted)
        assert {h.memory.id for h in hits} == {ids[p] for p in wanted}, mode
        assert all(h.provenance == h.memory.provenance for h in hits)
        assert {h.provenance for h in hits} == set(wanted)


@pytest.mark.parametrize(
    ("call", "field"),
    [
        ({"provenance": "rumour"}, "provenance"),
        ({"provenance": "USER_STATED"}, "provenance"),
        ({"provenance_detail": ""}, "provenance_detail"),
        ({"provenance_detail": "x" * 257}, "provenance_detail"),
        ({"provenance_detail": "two\nlines"}, "provenance_detail"),
    ],
)
async def test_a_bad_provenance_is_refused_naming_the_field(
    service: MemoryService, call: dict[str, str], field: str
):
    with pytest.raises(InvalidInput) as refused:
        await service.store(ACME, agent_id="bot", key="k", value="v", **call)  # type: ignore[arg-type]
    assert refused.value.field == field
    if field == "provenance":
        assert "user_stated, extracted, tool_output, imported" in str(refused.value)
    assert (await service.list(ACME)).total == 0


@pytest.mark.parametrize("bad", [[], ["rumour"], "tool_output"])
async def test_a_bad_provenance_filter_is_refused(service: MemoryService, bad: object):
    with pytest.raises(InvalidInput) as refused:
        await service.list(ACME, provenances=bad)  # type: ignore[arg-type]
    assert refused.value.field == "provenances"
    with pytest.raises(InvalidInput):
        await service.search(ACME, "tea", provenances=bad)  # type: ignore[arg-type]


async def test_an_upsert_keeps_the_provenance_unless_it_names_one(
    service: MemoryService, clock: ManualClock
):
    first = await service.store(
        ACME,
        agent_id="bot",
        key="bob.city",
        value="Lisbon",
        provenance="tool_output",
        provenance_detail="crm",
    )
    clock.advance(60)
    kept = await service.store(ACME, agent_id="bot", key="bob.city", value="Berlin")
    assert (kept.provenance, kept.provenance_detail) == ("tool_output", "crm")
    clock.advance(60)
    changed = await service.store(
        ACME,
        agent_id="bot",
        key="bob.city",
        value="Rome",
        provenance="extracted",
        provenance_detail="gpt-test",
    )
    assert (changed.provenance, changed.provenance_detail) == ("extracted", "gpt-test")
    clock.advance(60)
    retold = await service.store(
        ACME, agent_id="bot", key="bob.city", value="Oslo", provenance="user_stated"
    )
    assert (retold.provenance, retold.provenance_detail) == ("user_stated", None)
    history = await service.history(ACME, first.id)
    assert [(m.value, m.provenance, m.provenance_detail) for m in history] == [
        ("Lisbon", "tool_output", "crm"),
        ("Berlin", "tool_output", "crm"),
        ("Rome", "extracted", "gpt-test"),
        ("Oslo", "user_stated", None),
    ]
    page = await service.list(ACME, include_superseded=True, provenances=["tool_output"])
    assert sorted(m.value for m in page.memories) == ["Berlin", "Lisbon"]


async def test_update_changes_the_provenance_or_keeps_it(
    service: MemoryService, clock: ManualClock
):
    memory = await service.store(
        ACME, agent_id="bot", key="k", value="v", provenance="tool_output", provenance_detail="crm"
    )
    kept = await service.update(ACME, memory.id, value="v2")
    assert (kept.provenance, kept.provenance_detail) == ("tool_output", "crm")
    detailed = await service.update(ACME, memory.id, provenance_detail="crm v2")
    assert (detailed.provenance, detailed.provenance_detail) == ("tool_output", "crm v2")
    changed = await service.update(ACME, memory.id, provenance="imported")
    assert (changed.provenance, changed.provenance_detail) == ("imported", None)
    assert (await service.get(ACME, memory.id)).provenance == "imported"
    history = await service.history(ACME, memory.id)
    assert [(m.value, m.provenance) for m in history] == [("v", "tool_output"), ("v2", "imported")]
    with pytest.raises(InvalidInput) as refused:
        await service.update(ACME, memory.id, provenance="rumour")  # type: ignore[arg-type]
    assert refused.value.field == "provenance"


async def test_a_memory_stored_before_provenance_reads_none_and_gets_one_when_written(
    service: MemoryService, records: RecordStore
):
    memory = await service.store(ACME, agent_id="bot", key="k", value="v")
    namespace = service.long_term.namespace("acme", "bot")
    (record,) = records.get(namespace, [memory.id])
    records.write(upserts=[replace(record, provenance=None)])  # as written before provenance
    old = await service.get(ACME, memory.id)
    assert old.provenance is None
    assert (await service.list(ACME, provenances=["user_stated"])).total == 0
    rewritten = await service.update(ACME, old.id, value="v2")
    assert rewritten.provenance == "user_stated"
    assert records.count(namespace, Filter(provenances=("user_stated",))) == 1


def test_the_short_term_json_carries_provenance_and_old_json_still_loads():
    old = OLD_STORED_JSON
    memory = memory_from_json(json.dumps(old))
    assert (memory.provenance, memory.provenance_detail) == (None, None)
    for provenance in PROVENANCES:
        learned = replace(memory, provenance=provenance, provenance_detail="tool: crm")
        assert memory_from_json(memory_to_json(learned)) == learned
    assert memory_from_json(json.dumps({**old, "provenance": "rumour"})).provenance is None
