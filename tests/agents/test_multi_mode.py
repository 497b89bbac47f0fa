"""MultiModeAgent: each mode runs through its executor and leaves its results in memory."""

from __future__ import annotations

from typing import Any

import pytest

from memstack import InvalidInput, ProcessingContext
from memstack.agents import MemoryServiceBinding, MultiModeAgent, Step, Task
from memstack.embeddings import HashEmbedder
from memstack.providers import Completion, Message
from memstack.service.memories import MemoryService
from memstack.service.principal import Principal
from memstack.service.stm import InProcessTier
from memstack.storage import InMemoryRecordStore
from tests.agents.scripts import by_instructions, finish, turns
from tests.agents.team.scripts import calls_of, instructions, last_tool, team_model, use
from tests.agents.team.scripts import finish as finish_turn


async def drain(agent: MultiModeAgent, context: ProcessingContext) -> list[Any]:
    return [m async for m in agent.execute(context)]


async def test_loop_mode_is_one_tool_loop():
    provider = by_instructions({"Say hi": turns("hi")})
    agent = MultiModeAgent(name="a", objective="Say hi", provider=provider, model="m", env={})
    context = ProcessingContext()
    await drain(agent, context)
    assert agent.get_results() == "hi" and context.memory.get_value("task:a") == "hi"


async def test_plan_mode_runs_the_plan():
    step = Step(id="s", instructions="S: go", output_schema={"type": "object"})
    task = Task(id="t", title="T", steps=(step,))
    provider = by_instructions({"S:": turns(finish({"n": 1}))})
    agent = MultiModeAgent(
        name="a", objective="x", provider=provider, model="m", mode="plan", task=task, env={}
    )
    context = ProcessingContext()
    await drain(agent, context)
    assert agent.get_results() == {"n": 1} and context.memory.get_value("task:t") == {"n": 1}


def lead(messages: list[Message]) -> Completion:
    if "plan the team's work" in instructions(messages):
        if last_tool(messages) is None:
            return use("board_add_task", {"id": "draft", "title": "Draft the answer"})
        return finish_turn("one task: draft")
    return finish_turn("nothing for me")


def worker(messages: list[Message]) -> Completion:
    done = last_tool(messages)
    if done is None:
        return use("board_claim", {"task_id": "draft"})
    if done == "board_claim":
        return use("board_complete", {"task_id": "draft", "result": "42"})
    return finish_turn("drafted")


async def test_multi_agent_mode_runs_the_default_team_over_a_board():
    provider = team_model({"lead": lead, "worker": worker})
    agent = MultiModeAgent(
        name="team", objective="Answer it", provider=provider, model="m", mode="multi-agent"
    )
    context = ProcessingContext()
    await drain(agent, context)
    assert agent.get_results() == {"draft": "42"}
    entry = context.memory.get("task:draft")
    assert entry is not None and entry.value == "42" and entry.title == "Draft the answer"


def test_an_unknown_mode_is_refused():
    with pytest.raises(InvalidInput, match="mode must be one of loop, plan, multi-agent"):
        mode: Any = "swarm"
        MultiModeAgent(name="a", objective="x", provider=by_instructions({}), model="m", mode=mode)


async def test_running_again_does_not_stack_the_memories_block():
    records = InMemoryRecordStore()
    records.setup()
    service = MemoryService(records=records, embedder=HashEmbedder(), short_term=InProcessTier())
    acme = Principal(tenant="acme")
    await service.store(acme, agent_id="team", key="style", value="Be brief.")
    provider = team_model({"lead": lead, "worker": worker})
    agent = MultiModeAgent(
        name="team",
        objective="Answer it",
        provider=provider,
        model="m",
        mode="multi-agent",
        system_prompt="You are careful.",
        memory_store=MemoryServiceBinding(store=service, principal=acme, agent_id="team"),
    )
    for _ in range(2):
        await drain(agent, ProcessingContext())
        assert agent.team is not None
        assert agent.team.system_prompt.count("<memories>") == 1
        assert agent.team.system_prompt.endswith("You are careful.")
    worker_turn = calls_of(provider, "worker")[0]
    assert "Be brief." in worker_turn.messages[0].content
    assert "store_memory" in worker_turn.tool_names
