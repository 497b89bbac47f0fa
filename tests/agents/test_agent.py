"""Agent: planning, the plan run through memory, and memory that outlives the run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memstack import InvalidInput, ProcessingContext
from memstack.agents.agent import Agent
from memstack.agents.durable import MemoryServiceBinding
from memstack.agents.messages import TaskUpdate
from memstack.agents.plan import Step, Task
from memstack.agents.planner import PlanningError, PlanningUpdate, plan_of
from memstack.agents.simple import SimpleAgent
from memstack.embeddings import HashEmbedder
from memstack.longterm import Collection, LongTermMemory
from memstack.providers import Completion, ScriptedProvider
from memstack.service.memories import MemoryService
from memstack.service.principal import Principal
from memstack.service.stm import InProcessTier
from memstack.storage import InMemoryRecordStore
from tests.agents.scripts import by_instructions, call, finish, tool_results, turns

OBJECTIVE = "Research TypeScript ORMs and write a comparison report"


def create(task_id: str, steps: list[dict[str, Any]], **extra: Any) -> Any:
    return call("create_task", {"id": task_id, "title": task_id.title(), "steps": steps, **extra})


ORMS_SCHEMA: dict[str, Any] = {"type": "array", "items": {"type": "string"}}
PLAN = Completion(
    tool_calls=(
        create(
            "research",
            [
                {
                    "id": "search",
                    "instructions": "RESEARCH: list three ORMs",
                    "output_schema": ORMS_SCHEMA,
                }
            ],
        ),
        create(
            "report",
            [{"id": "write", "instructions": "REPORT: compare them"}],
            depends_on=["research"],
        ),
    )
)


def report(messages: list[Any]) -> Any:
    if not any(m.role == "assistant" for m in messages):
        return call("memory_read", {"keys": ["task:research"]})
    orms = tool_results(messages, "memory_read")[0]["entries"]["task:research"]["value"]
    return finish({"report": f"{len(orms)} ORMs compared: {', '.join(orms)}"})


REPORT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"report": {"type": "string"}},
    "required": ["report"],
}


async def drain(agent: Any, context: ProcessingContext) -> list[Any]:
    return [m async for m in agent.execute(context)]


async def test_agent_plans_then_runs_the_plan_through_memory(tmp_path: Path):
    provider = by_instructions(
        {
            "# Objective": turns(PLAN),
            "RESEARCH:": turns(finish(["Prisma", "Drizzle", "TypeORM"])),
            "REPORT:": report,
        }
    )
    agent = Agent(
        name="researcher",
        objective=OBJECTIVE,
        provider=provider,
        model="m",
        planning_model="planner-m",
        output_schema=REPORT_SCHEMA,
        workspace=tmp_path / "out",
        env={},
    )
    context = ProcessingContext()
    messages = await drain(agent, context)

    planning = [m for m in messages if isinstance(m, PlanningUpdate)]
    assert [u.status for u in planning] == ["planning", "planned"]
    assert provider.calls[0].model == "planner-m" and provider.calls[0].tool_names == [
        "create_task"
    ]
    assert agent.get_results() == {"report": "3 ORMs compared: Prisma, Drizzle, TypeORM"}
    assert context.memory.get_value("task:research") == ["Prisma", "Drizzle", "TypeORM"]
    assert [e.key for e in context.memory.list(kind="task_result")] == [
        "task:research",
        "task:report",
    ]
    done = [m.task_id for m in messages if isinstance(m, TaskUpdate) and m.status == "completed"]
    assert done == ["research", "report"]
    # the agent's output schema lands on the final step only
    assert agent.plan is not None and agent.plan.last_task.last_step.output_schema == REPORT_SCHEMA
    assert agent.plan.tasks[0].last_step.output_schema == ORMS_SCHEMA  # the planner's own
    assert context.workspace == tmp_path / "out" and context.workspace.is_dir()


async def test_a_pre_built_task_skips_planning():
    task = Task(id="only", title="Only", steps=(Step(id="s", instructions="S: answer"),))
    provider = by_instructions({"S:": turns(finish({"report": "done"}))})
    agent = Agent(
        name="a",
        objective="anything",
        provider=provider,
        model="m",
        task=task,
        output_schema=REPORT_SCHEMA,
        env={},
    )
    context = ProcessingContext()
    messages = await drain(agent, context)
    assert not any(isinstance(m, PlanningUpdate) for m in messages)
    assert len(provider.calls) == 1 and "create_task" not in provider.calls[0].tool_names
    assert "# Output Schema" in provider.calls[0].messages[0].content
    assert agent.get_results() == {"report": "done"}
    assert context.workspace is not None and context.workspace.is_dir()  # auto-generated


@pytest.mark.parametrize(
    ("steps", "max_steps", "message"),
    [
        (
            [Step(id=f"s{i}", instructions="S: answer") for i in range(3)],
            2,
            "task 'only' has 3 steps, more than the limit of 2 steps in a task",
        ),
        (
            [Step(id="s", instructions="S: answer", tools=("browse",))],
            10,
            "step 's' names unknown tool 'browse'",
        ),
    ],
)
def test_a_pre_built_task_is_checked_like_a_planned_one(
    steps: list[Step], max_steps: int, message: str
):
    task = Task(id="only", title="Only", steps=tuple(steps))
    for given in (task, plan_of(task)):
        with pytest.raises(InvalidInput, match=message) as excinfo:
            Agent(
                name="a",
                objective="anything",
                provider=ScriptedProvider([]),
                model="m",
                task=given,
                max_steps=max_steps,
                env={},
            )
        assert excinfo.value.field == "task"


async def test_planning_that_never_succeeds_raises():
    provider = by_instructions({"# Objective": turns("I would research, then write.")})
    agent = Agent(name="a", objective="x", provider=provider, model="m", env={})
    with pytest.raises(PlanningError) as excinfo:
        await drain(agent, ProcessingContext())
    assert excinfo.value.attempts == 3


async def test_skills_join_the_system_prompt_of_every_step(tmp_path: Path):
    skill = tmp_path / "skills" / "orm-review"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: orm-review\ndescription: Review ORMs for TypeScript projects\n---\n"
        "Compare migrations first.\n"
    )
    task = Task(id="t", title="T", steps=(Step(id="s", instructions="S: go"),))
    provider = by_instructions({"S:": turns("ok")})
    agent = Agent(
        name="a",
        objective=OBJECTIVE,
        provider=provider,
        model="m",
        task=task,
        skill_dirs=[tmp_path / "skills"],
        env={},
    )
    await drain(agent, ProcessingContext())
    system = provider.calls[0].messages[0].content
    assert system.startswith("# Agent Skills") and "Compare migrations first." in system


@pytest.fixture
def service() -> MemoryService:
    records = InMemoryRecordStore()
    records.setup()
    return MemoryService(records=records, embedder=HashEmbedder(), short_term=InProcessTier())


async def test_memory_service_block_is_injected_and_store_memory_is_offered(
    service: MemoryService,
):
    acme = Principal(tenant="acme")
    await service.store(acme, agent_id="bot", key="style", value="Answer <briefly>.")
    await service.store(acme, agent_id="other", key="private", value="not for bot")
    binding = MemoryServiceBinding(store=service, principal=acme, agent_id="bot")
    provider = by_instructions(
        {"S:": turns(call("store_memory", {"key": "learned", "value": "ORMs differ"}), "ok")}
    )
    for make in (SimpleAgent, Agent):
        kwargs: dict[str, Any] = {"objective": "S: do it", "provider": provider, "model": "m"}
        kwargs |= {"memory_store": binding, "env": {}}
        if make is Agent:
            kwargs["task"] = Task(id="t", title="T", steps=(Step(id="s", instructions="S: go"),))
        await drain(make(name="bot", **kwargs), ProcessingContext())
        system = provider.calls[-2].messages[0].content
        assert system.startswith("<memories>")
        assert "Answer &lt;briefly&gt;." in system and "not for bot" not in system
        assert "store_memory" in provider.calls[-2].tool_names
    stored = await service.list(acme, agent_id="bot")
    assert {m.key: m.value for m in stored.memories} == {
        "style": "Answer <briefly>.",
        "learned": "ORMs differ",
    }


EXTRACTED = '{"memories": [{"text": "The user compares TypeScript ORMs", "importance": 0.7}]}'


@pytest.mark.parametrize("auto_persist", [True, False])
async def test_auto_persist_mines_the_objective_and_result(auto_persist: bool):
    records = InMemoryRecordStore()
    records.setup()
    extractor = ScriptedProvider([Completion(content=EXTRACTED)])
    ltm = LongTermMemory(
        collection=Collection(user_id="u"),
        store=records,
        embedder=HashEmbedder(),
        extraction_provider=extractor,
        extraction_model="x",
    )
    provider = by_instructions({"S:": turns("a report")})
    agent = SimpleAgent(
        name="a",
        objective="S: compare ORMs",
        provider=provider,
        model="m",
        long_term_memory=ltm,
        auto_persist_memory=auto_persist,
        env={},
    )
    await drain(agent, ProcessingContext())
    assert {"ltm_recall", "ltm_remember"} <= set(provider.calls[0].tool_names)
    items = await ltm.items()
    if auto_persist:
        assert [i.text for i in items] == ["The user compares TypeScript ORMs"]
        sent = extractor.calls[0].messages[-1].content
        assert "S: compare ORMs" in sent and "a report" in sent
    else:
        assert items == [] and extractor.calls == []
