"""A write of a memory that another writer beats between its read and its write, on every
long-term backend: the store refuses the stale write (``Expect``) and the service reads
again, so the history stays one chain of every acknowledged value. The other writer is
let in by ``Interleaved``, a backend that runs it just before a write, after the reads it
depends on (what another process or host may do at any moment)."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from typing import Any

import pytest

from memstack import ManualClock, NotFound
from memstack.embeddings import HashEmbedder
from memstack.errors import StoreUnavailable, WriteConflict
from memstack.service.ltm import TRIES
from memstack.service.memories import MemoryService
from memstack.service.principal import Principal
from memstack.service.stm import InProcessTier
from memstack.service.types import Memory
from memstack.storage import Filter, RecordStore
from memstack.storage.backend import Backend, WriteBatch, WriteResult

ACME = Principal(tenant="acme")


class Interleaved:
    """A backend over ``inner`` that runs ``meanwhile`` just before its next write (once;
    before every write with ``always``)."""

    def __init__(self, inner: Backend) -> None:
        self.inner = inner
        self.meanwhile: Callable[[], None] | None = None
        self.always = False

    def write(self, batch: WriteBatch) -> WriteResult:
        if self.meanwhile is not None:
            run = self.meanwhile
            self.meanwhile = run if self.always else None
            run()
        return self.inner.write(batch)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def service_on(records: RecordStore, clock: ManualClock) -> MemoryService:
    return MemoryService(
        records=records, embedder=HashEmbedder(), short_term=InProcessTier(), clock=clock
    )


@pytest.fixture
def other(records: RecordStore, clock: ManualClock) -> MemoryService:
    """The other writer: straight on the store."""
    return service_on(records, clock)


@pytest.fixture
def between(records: RecordStore) -> Interleaved:
    return Interleaved(records.backend)


@pytest.fixture
def mine(between: Interleaved, clock: ManualClock) -> MemoryService:
    """The writer that the other one beats: on the same store, through ``between``."""
    return service_on(RecordStore(between, clock=clock), clock)


def meanwhile_store(other: MemoryService, clock: ManualClock, value: str) -> Callable[[], None]:
    """The other writer storing ``value`` a second later (from the writer's thread)."""

    def run() -> None:
        clock.advance(1)
        asyncio.run(other.store(ACME, agent_id="bot", key="bob.city", value=value))

    return run


def linear(history: list[Memory]) -> bool:
    chained = all(a.valid_to == b.valid_from for a, b in itertools.pairwise(history))
    return chained and [m.valid_to for m in history].count(None) == 1


async def test_a_store_beaten_by_another_closes_the_others_version(
    other: MemoryService, mine: MemoryService, between: Interleaved, clock: ManualClock
):
    first = await other.store(ACME, agent_id="bot", key="bob.city", value="Lisbon")
    clock.advance(60)
    between.meanwhile = meanwhile_store(other, clock, "Berlin")
    written = await mine.store(ACME, agent_id="bot", key="bob.city", value="Rome")
    history = await other.history(ACME, first.id)
    assert [m.value for m in history] == ["Lisbon", "Berlin", "Rome"]
    assert linear(history)
    assert written.valid_from == history[1].valid_to


async def test_an_update_beaten_by_another_changes_only_what_it_was_asked_to(
    other: MemoryService, mine: MemoryService, between: Interleaved, clock: ManualClock
):
    first = await other.store(ACME, agent_id="bot", key="bob.city", value="Lisbon")
    clock.advance(60)
    between.meanwhile = meanwhile_store(other, clock, "Berlin")
    updated = await mine.update(ACME, first.id, metadata={"source": "chat"})
    assert (updated.value, updated.metadata) == ("Berlin", {"source": "chat"})
    history = await other.history(ACME, first.id)
    assert [m.value for m in history] == ["Lisbon", "Berlin"]  # not "Lisbon" again
    assert linear(history)


async def test_a_delete_beaten_by_another_erases_the_version_it_added(
    other: MemoryService, mine: MemoryService, between: Interleaved, clock: ManualClock
):
    first = await other.store(ACME, agent_id="bot", key="bob.city", value="Lisbon")
    clock.advance(60)
    await other.store(ACME, agent_id="bot", key="bob.city", value="Berlin")
    between.meanwhile = meanwhile_store(other, clock, "Rome")  # closes Berlin: a version
    await mine.delete(ACME, first.id)
    with pytest.raises(NotFound):
        await other.history(ACME, first.id)
    namespace = other.long_term.namespace("acme", "bot")
    everything = Filter(include_superseded=True, include_expired=True)
    assert other.long_term.records.count(namespace, everything) == 0


async def test_a_store_beaten_every_time_gives_up_naming_the_memory(
    other: MemoryService, mine: MemoryService, between: Interleaved, clock: ManualClock
):
    first = await other.store(ACME, agent_id="bot", key="bob.city", value="Lisbon")
    between.meanwhile, between.always = meanwhile_store(other, clock, "Berlin"), True
    with pytest.raises(WriteConflict) as raised:
        await mine.store(ACME, agent_id="bot", key="bob.city", value="Rome")
    assert isinstance(raised.value, StoreUnavailable)  # a 503 at the REST edge
    assert first.id in str(raised.value) and f"{TRIES} tries" in str(raised.value)
    history = await other.history(ACME, first.id)
    assert "Rome" not in [m.value for m in history]
    assert linear(history)
