"""``MemoryService.store_many`` (issue 34's bulk store) on every backend: each memory is
taken as a single store takes it, all of them in one transaction; a batch with one bad
memory (a bad field, a credential, a memory given twice, an agent the key may not act
for) is refused naming it, and nothing of it is stored."""

from __future__ import annotations

from dataclasses import replace

import pytest

from memstack import ManualClock
from memstack.embeddings import HashEmbedder
from memstack.errors import Forbidden, InvalidInput, MemstackError
from memstack.service.memories import MemoryService
from memstack.service.principal import Principal
from memstack.service.stm import InProcessTier
from memstack.service.writes import MAX_BATCH_MEMORIES, MemoryWrite
from memstack.storage import RecordStore
from memstack.storage.versions import KEPT_VERSIONS

ACME = Principal(tenant="acme")
BOT_ONLY = Principal(tenant="acme", agents=frozenset({"bot"}))
GOOD = [
    MemoryWrite(agent_id="bot", key="editor", value="The user edits in Neovim."),
    MemoryWrite(agent_id="bot", key="lang", value="Answers in French.", metadata={"p": "x"}),
    MemoryWrite(agent_id="bot", key="run", value="Step 2 is done.", scope="session"),
    MemoryWrite(agent_id="ops", key="freeze", value="No deploys on Fridays.", scope="global"),
    MemoryWrite(
        agent_id="ops", key="cache", value="Warm the cache.", ttl=60, provenance="tool_output"
    ),
]


async def _everything(service: MemoryService) -> dict[str, str]:
    page = await service.list(ACME, limit=100)
    return {m.key: m.value for m in page.memories}


async def test_a_batch_is_stored_as_single_stores_would_store_it(
    service: MemoryService, clock: ManualClock
):
    await service.store(ACME, agent_id="bot", key="editor", value="The user edits in Vim.")
    clock.advance(10)
    stored = await service.store_many(ACME, GOOD)
    assert [m.key for m in stored] == [g.key for g in GOOD]
    for memory, given in zip(stored, GOOD, strict=True):
        assert memory == await service.get(ACME, memory.id)
        assert (memory.agent_id, memory.scope, memory.value) == (
            given.agent_id,
            given.scope,
            given.value,
        )
    editor, _, run, _, cache = stored
    assert run.session_id == "default"
    assert cache.expires_at == clock.now() + 60 and cache.provenance == "tool_output"
    assert stored[1].metadata == {"p": "x"} and stored[0].provenance == "user_stated"
    # The value it replaced is closed and kept, as a store keeps it.
    versions = await service.history(ACME, editor.id)
    assert [v.value for v in versions] == ["The user edits in Vim.", "The user edits in Neovim."]
    # Found by search and injected from the short-term tier, as stored ones are.
    hits = await service.search(ACME, "Neovim", agent_id="bot", limit=1)
    assert hits[0].memory.id == editor.id
    context = await service.context(ACME, agent_id="bot")
    assert {m.key for m in context} >= {"editor", "lang", "run"}
    # Again: an upsert of each, nothing new.
    again = await service.store_many(ACME, GOOD)
    assert [m.id for m in again] == [m.id for m in stored]
    assert len(await _everything(service)) == len(GOOD)


BAD: list[tuple[str, Principal, int, MemoryWrite, type[Exception], str]] = [
    ("empty value", ACME, 2, MemoryWrite(agent_id="bot", key="k", value=""), InvalidInput, "value"),
    (
        "bad agent",
        ACME,
        0,
        MemoryWrite(agent_id="-x", key="k", value="v"),
        InvalidInput,
        "agent_id",
    ),
    ("bad scope", ACME, 4, replace(GOOD[0], scope="team"), InvalidInput, "scope"),  # type: ignore[arg-type]
    ("bad ttl", ACME, 1, replace(GOOD[1], ttl=-5), InvalidInput, "ttl"),
    ("session elsewhere", ACME, 1, replace(GOOD[1], session_id="s1"), InvalidInput, "session_id"),
    (
        "credential",
        ACME,
        3,
        replace(GOOD[3], key="pw", value="password=hunter2hunter2"),
        InvalidInput,
        "value",
    ),
    (
        "credential in metadata",
        ACME,
        1,
        replace(GOOD[1], key="gh", metadata={"auth": {"token": "ghp_" + "a1B2" * 9}}),
        InvalidInput,
        "metadata.auth.token",
    ),
    ("twice", ACME, 1, replace(GOOD[0], value="Again."), InvalidInput, "key"),
    (
        "another agent",
        BOT_ONLY,
        3,
        MemoryWrite(agent_id="ops", key="k", value="v"),
        Forbidden,
        "agent_id",
    ),
    (
        "global without the right",
        BOT_ONLY,
        2,
        replace(GOOD[0], key="g", scope="global"),
        Forbidden,
        "scope",
    ),
]


@pytest.mark.parametrize(
    ("name", "caller", "at", "bad", "error", "field"), BAD, ids=[b[0] for b in BAD]
)
async def test_a_batch_with_one_bad_memory_stores_nothing(
    service: MemoryService,
    name: str,
    caller: Principal,
    at: int,
    bad: MemoryWrite,
    error: type[Exception],
    field: str,
):
    await service.store(ACME, agent_id="bot", key="editor", value="The user edits in Vim.")
    before = await _everything(service)
    good = [g for g in GOOD if caller.agents is None or g.agent_id in caller.agents]
    batch = [*good[:at], bad, *good[at:]]
    with pytest.raises(error) as raised:
        await service.store_many(caller, batch)
    assert raised.value.field == f"memories[{at}].{field}"  # type: ignore[attr-defined]
    assert str(raised.value).startswith(f"memories[{at}]")
    assert "hunter2" not in str(raised.value)
    assert await _everything(service) == before


@pytest.mark.parametrize("count", [0, MAX_BATCH_MEMORIES + 1])
async def test_a_batch_holds_1_to_the_cap(service: MemoryService, count: int):
    batch = [MemoryWrite(agent_id="bot", key=f"k{i}", value="v") for i in range(count)]
    with pytest.raises(InvalidInput) as raised:
        await service.store_many(ACME, batch)
    assert raised.value.field == "memories"
    assert f"1 to {MAX_BATCH_MEMORIES}" in str(raised.value)
    assert await _everything(service) == {}


async def test_a_batch_the_store_refuses_part_of_writes_none_of_it(
    records: RecordStore, clock: ManualClock
):
    """One transaction: a bucket embedded by another model refuses its memory inside the
    write, and the memories of the other buckets, written before it, are not kept."""
    other_model = MemoryService(
        records=records, embedder=HashEmbedder(dim=32), short_term=InProcessTier(max_entries=20)
    )
    await other_model.store(ACME, agent_id="ops", key="old", value="Embedded at 32 dimensions.")
    service = MemoryService(
        records=records, embedder=HashEmbedder(), short_term=InProcessTier(max_entries=20)
    )
    batch = [GOOD[0], MemoryWrite(agent_id="ops", key="new", value="At 64.")]
    with pytest.raises(MemstackError):
        await service.store_many(ACME, batch)
    assert set(await _everything(service)) == {"old"}


async def test_a_batch_keeps_the_versions_a_single_store_keeps(
    service: MemoryService, clock: ManualClock
):
    for i in range(KEPT_VERSIONS + 1):  # the memory and KEPT_VERSIONS closed versions
        await service.store(ACME, agent_id="bot", key="city", value=f"city {i}")
        clock.advance(1)
    last, new = await service.store_many(
        ACME,
        [
            MemoryWrite(agent_id="bot", key="city", value="city last"),
            MemoryWrite(agent_id="bot", key="pet", value="A beagle."),
        ],
    )
    history = await service.history(ACME, last.id)
    assert len(history) == KEPT_VERSIONS + 1  # the earliest closed one went
    assert [history[0].value, history[-1].value] == ["city 1", "city last"]
    assert [m.value for m in await service.history(ACME, new.id)] == ["A beagle."]
