"""Changed facts in long-term memory: superseded, not lost (issue 15).

The acceptance case runs the real local model on a real SQLite file and PostgreSQL:
"Where does Bob live?" answers Berlin first, ``as_of`` before the move answers Lisbon,
the history shows both, and nothing was deleted."""

from __future__ import annotations

import pytest

from memstack import ManualClock
from memstack.embeddings import HashEmbedder, LocalEmbedder
from memstack.errors import InvalidInput, NotFound
from memstack.longterm import Collection, LongTermMemory
from memstack.storage import Filter, RecordStore
from tests.longterm.conftest import NOW

DAY = 86_400.0


async def test_bob_moved_recall_answers_berlin_and_as_of_answers_lisbon(
    real_store: RecordStore, local_embedder: LocalEmbedder
) -> None:
    memory = LongTermMemory(
        collection=Collection(user_id="alice"),
        store=real_store,
        embedder=local_embedder,
        clock=ManualClock(start=NOW),
    )
    t1, t2 = NOW - 60 * DAY, NOW - 10 * DAY
    lisbon = await memory.remember("Bob lives in Lisbon", created_at=t1)
    await memory.remember("Bob works as a nurse", created_at=t1)
    assert lisbon.id is not None
    berlin = await memory.remember(
        "Bob moved from Lisbon to Berlin", created_at=t2, supersedes=[lisbon.id]
    )
    assert berlin.status == "stored" and berlin.id is not None

    now = await memory.recall("Where does Bob live?", k=2)
    assert now[0].id == berlin.id
    assert lisbon.id not in [m.id for m in now]

    before = await memory.recall("Where does Bob live?", k=2, as_of=t2 - DAY)
    assert before[0].id == lisbon.id and before[0].text == "Bob lives in Lisbon"
    assert berlin.id not in [m.id for m in before]

    versions = await memory.history(berlin.id)
    assert [v.id for v in versions] == [lisbon.id, berlin.id]
    old, new = versions
    assert (old.valid_from, old.valid_to, old.superseded_by) == (t1, t2, berlin.id)
    assert old.closed_reason == "superseded" and not old.current
    assert (new.valid_from, new.valid_to) == (t2, None) and new.current
    assert [v.id for v in await memory.history(lisbon.id)] == [lisbon.id, berlin.id]
    everything = real_store.count(memory.namespace, Filter(include_superseded=True))
    assert everything == 3  # nothing was deleted


async def test_a_chain_of_changes_keeps_every_version(memory: LongTermMemory) -> None:
    ids = []
    previous: list[str] = []
    for n, city in enumerate(["Lisbon", "Berlin", "Oslo", "Kyoto"]):
        outcome = await memory.remember(
            f"Bob lives in {city}", created_at=NOW - 100 + n * 10, supersedes=previous
        )
        assert outcome.id is not None
        ids.append(outcome.id)
        previous = [outcome.id]
    for any_version in ids:
        assert [v.id for v in await memory.history(any_version)] == ids
    assert [i.id for i in await memory.items()] == [ids[-1]]
    assert len(await memory.items(include_superseded=True)) == 4
    assert [i.id for i in await memory.items(as_of=NOW - 85)] == [ids[1]]
    assert await memory.count() == 1


async def test_supersedes_refuses_unknown_or_closed_ids_and_changes_nothing(
    memory: LongTermMemory,
) -> None:
    first = await memory.remember("Bob lives in Lisbon")
    assert first.id is not None
    with pytest.raises(InvalidInput, match="not a memory of this collection") as caught:
        await memory.remember("Bob lives in Berlin", supersedes=["nope"])
    assert caught.value.field == "supersedes"
    await memory.remember("Bob lives in Oslo", supersedes=[first.id])
    with pytest.raises(InvalidInput, match="already superseded"):
        await memory.remember("Bob lives in Rome", supersedes=[first.id])
    with pytest.raises(InvalidInput) as caught:
        await memory.remember("x", supersedes="abc")
    assert caught.value.field == "supersedes"
    texts = sorted(i.text for i in await memory.items(include_superseded=True))
    assert texts == ["Bob lives in Lisbon", "Bob lives in Oslo"]


async def test_a_superseding_memory_is_not_dropped_as_a_duplicate(memory: LongTermMemory) -> None:
    first = await memory.remember("Bob lives in Lisbon, Portugal")
    assert first.id is not None
    again = await memory.remember("Bob lives in Lisbon, Portugal", supersedes=[first.id])
    assert again.status == "stored"


async def test_retire_closes_and_forget_erases(memory: LongTermMemory) -> None:
    kept = await memory.remember("Bob has a cat")
    gone = await memory.remember("Bob has a parrot")
    assert kept.id is not None and gone.id is not None
    assert await memory.retire(kept.id) is True
    assert await memory.retire(kept.id) is False  # already closed
    assert await memory.recall("Bob's pets", k=5) != []
    assert kept.id not in [m.id for m in await memory.recall("Bob's pets", k=5)]
    (version,) = await memory.history(kept.id)
    assert version.closed_reason == "deleted" and version.valid_to == NOW
    assert await memory.forget(gone.id) is True
    with pytest.raises(NotFound):
        await memory.history(gone.id)


async def test_eviction_counts_current_memories_and_records_what_it_removes(
    store: RecordStore, clock: ManualClock
) -> None:
    memory = LongTermMemory(
        collection=Collection(user_id="alice"),
        store=store,
        embedder=HashEmbedder(),
        clock=clock,
        max_items=2,
    )
    first = await memory.remember("Bob lives in Lisbon", created_at=NOW - 30)
    assert first.id is not None
    await memory.remember("Bob lives in Berlin", created_at=NOW - 20, supersedes=[first.id])
    await memory.remember("Bob plays chess", created_at=NOW - 10)
    assert await memory.count() == 2  # the closed Lisbon version did not count
    third = await memory.remember("Bob speaks Danish")
    assert await memory.count() == 2
    evicted = [
        i for i in await memory.items(include_superseded=True) if i.closed_reason == "evicted"
    ]
    assert [e.text for e in evicted] == ["Bob lives in Berlin"]
    assert evicted[0].valid_to == NOW
    assert third.status == "stored"
    closed = [i for i in await memory.items(include_superseded=True) if not i.current]
    assert len(closed) <= 2  # history is bounded by max_items too


async def test_provenance_is_recorded_shown_and_filtered(memory: LongTermMemory) -> None:
    await memory.remember("Bob likes tea")
    await memory.remember(
        "Bob's build failed twice", provenance="tool_output", provenance_detail="ci"
    )
    recalled = await memory.recall("Bob", k=5)
    assert {m.scores.provenance for m in recalled} == {"user_stated", "tool_output"}
    tools = await memory.recall("Bob", k=5, provenances=["tool_output"])
    assert [(m.text, m.provenance_detail) for m in tools] == [("Bob's build failed twice", "ci")]
    with pytest.raises(InvalidInput) as caught:
        await memory.recall("Bob", provenances=["rumour"])  # type: ignore[list-item]
    assert caught.value.field == "provenances"
    with pytest.raises(InvalidInput) as caught:
        await memory.remember("Bob", provenance="rumour")  # type: ignore[arg-type]
    assert caught.value.field == "provenance"


async def test_as_of_is_checked(memory: LongTermMemory) -> None:
    with pytest.raises(InvalidInput) as caught:
        await memory.recall("Bob", as_of=float("inf"))
    assert caught.value.field == "as_of"
    with pytest.raises(InvalidInput) as caught:
        await memory.items(as_of=NOW, include_superseded=True)
    assert caught.value.field == "as_of"


async def test_versions_stored_at_one_moment_come_in_the_order_they_replaced(
    memory: LongTermMemory,
) -> None:
    ids: list[str] = []
    for city in ["Lisbon", "Berlin", "Oslo", "Kyoto", "Lima"]:
        outcome = await memory.remember(f"Bob lives in {city}", supersedes=ids[-1:])
        assert outcome.id is not None
        ids.append(outcome.id)
    assert [v.id for v in await memory.history(ids[2])] == ids
