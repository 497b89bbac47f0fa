"""Spec 004 "injects all memories as a <memories> block": every short-term memory by
default; a budget only when the caller gives one, and then the block says how many it
left out."""

import re

from memstack.service.memories import MemoryService
from memstack.service.principal import Principal
from memstack.service.render import DEFAULT_BUDGET, left_out_note, render_memories
from memstack.service.types import Memory

ACME = Principal(tenant="acme")
LONG = "Deploys go out blue-green, one region at a time, after the canary holds. " * 30


def _left_out(block: str) -> int:
    found = re.findall(r"^\[(\d+) more memor(?:y|ies) left out to fit the budget\]$", block, re.M)
    return int(found[0]) if found else 0


async def test_every_memory_is_injected_without_a_budget(service: MemoryService):
    for i in range(12):
        await service.store(ACME, agent_id="bot", key=f"note-{i}", value=f"{i}: {LONG}")
    await service.store(ACME, agent_id="ops", key="shared", value=LONG, scope="global")
    found = await service.prompt_context(ACME, agent_id="bot")
    block = found.memories_block
    assert len(block) > DEFAULT_BUDGET  # the old default budget would have cut it
    assert block.count("<memory ") == 13 == len(found.memories)
    assert {f"note-{i}" for i in range(12)} | {"shared"} == set(
        re.findall(r'<memory key="([^"]+)"', block)
    )
    assert _left_out(block) == 0
    assert await service.render_memories(ACME, agent_id="bot") == block


async def test_a_budget_asked_for_says_how_many_it_left_out(service: MemoryService):
    for i in range(12):
        await service.store(ACME, agent_id="bot", key=f"note-{i}", value=f"{i}: {LONG}")
    block = (await service.prompt_context(ACME, agent_id="bot", budget=8_000)).memories_block
    assert len(block) <= 8_000
    shown = block.count("<memory ")
    assert 0 < shown < 12
    assert _left_out(block) == 12 - shown
    assert block.endswith(f"\n{left_out_note(12 - shown)}\n</memories>")


async def test_a_budget_that_holds_everything_adds_no_note(service: MemoryService):
    await service.store(ACME, agent_id="bot", key="k", value="Short.")
    block = await service.render_memories(ACME, agent_id="bot", budget_chars=1_000)
    assert block.count("<memory ") == 1 and _left_out(block) == 0


def _memory(key: str, value: str) -> Memory:
    return Memory(
        id=f"mem_{key}",
        tenant="acme",
        agent_id="bot",
        scope="agent",
        key=key,
        value=value,
        created_at=0,
        updated_at=0,
    )


def test_the_note_counts_what_it_skipped_wherever_it_was():
    memories = [_memory("a", "x" * 250), _memory("b", "short"), _memory("c", "y" * 250)]
    block = render_memories(memories, budget_chars=450)
    assert len(block) <= 450
    assert re.findall(r'<memory key="([^"]+)"', block) == ["a", "b"]
    assert _left_out(block) == 1 and "[1 more memory left out" in block
    assert render_memories(memories).count("<memory ") == 3
