"""Whole team runs with a scripted model: what lands in memory and in the stream
(spec 000 "TeamExecutor" and its troubleshooting cases)."""

import asyncio
from collections.abc import AsyncGenerator, Mapping
from typing import Any, cast

import pytest

from memstack import ProcessingContext, Tool
from memstack._json import JSON
from memstack.agents.messages import StepResult, TaskUpdate, ToolCallUpdate, ToolResult
from memstack.agents.team import (
    TEAM_TOOL_NAMES,
    BoardTask,
    TaskBoard,
    TaskSpec,
    TeamExecutor,
    TeamMember,
)
from memstack.errors import InvalidInput, ProviderError
from memstack.providers import Completion, Message, ScriptedProvider
from memstack.working import MEMORY_TOOL_NAMES
from tests.agents.scripts import Rendezvous

from .scripts import Rule, calls_of, finish, instructions, last_result, last_tool, team_model, use

FINDINGS: JSON = {"findings": ["alpha", "beta"]}
RESEARCHER = TeamMember(name="researcher", role="researcher: finds sources")
WRITER = TeamMember(name="writer", role="writer: writes the report")
RESEARCH_THEN_REPORT = (
    TaskSpec(id="research", title="Research the topic", description="Top sources."),
    TaskSpec(id="report", title="Write the report", depends_on=("research",)),
)


def claimable(board: TaskBoard, task_id: str) -> bool:
    return task_id in {t.id for t in board.claimable()}


def doer(board: TaskBoard, task_id: str, result: JSON, *, after_complete: Any = None) -> Rule:
    """Claim ``task_id`` when it is claimable, complete it with ``result``, finish."""

    def rule(messages: list[Message]) -> Completion:
        last = last_tool(messages)
        if last is None:
            if claimable(board, task_id):
                return use("board_claim", {"task_id": task_id})
            return finish("nothing for me yet")
        if last == "board_claim":
            return use("board_complete", {"task_id": task_id, "result": result})
        if after_complete is not None:
            after_complete()
        return finish(f"{task_id} done")

    return rule


def report_writer(board: TaskBoard) -> Rule:
    """Claim "report", read the research from memory, complete the report with it."""

    def rule(messages: list[Message]) -> Completion:
        last = last_tool(messages)
        if last is None:
            if claimable(board, "report"):
                return use("board_claim", {"task_id": "report"})
            return finish("waiting for the research")
        if last == "board_claim":
            return use("memory_read", {"keys": ["task:research"]})
        if last == "memory_read":
            research = last_result(messages)["entries"]["task:research"]["value"]
            return use("board_complete", {"task_id": "report", "result": {"from": research}})
        return finish("report done")

    return rule


async def drain(team: TeamExecutor, context: ProcessingContext) -> list[Any]:
    return [m async for m in team.execute(context)]


async def run_research_team() -> tuple[TeamExecutor, ProcessingContext, list[Any], dict[str, Any]]:
    board = TaskBoard()
    context = ProcessingContext()
    seen: dict[str, Any] = {"written": []}
    context.memory.subscribe(lambda entry: seen["written"].append(entry.key))

    def after_complete() -> None:
        seen["right_after_complete"] = context.memory.get_value("task:research")

    provider = team_model(
        {
            "researcher": doer(board, "research", FINDINGS, after_complete=after_complete),
            "writer": report_writer(board),
        }
    )
    team = TeamExecutor(
        objective="Report on the topic.",
        members=[RESEARCHER, WRITER],
        provider=provider,
        model="m",
        tasks=RESEARCH_THEN_REPORT,
        board=board,
    )
    seen["provider"] = provider
    return team, context, await drain(team, context), seen


async def test_a_completed_task_is_mirrored_into_memory_at_once():
    _, context, _, seen = await run_research_team()
    entry = context.memory.get("task:research")
    assert entry is not None
    assert (entry.kind, entry.value, entry.source, entry.title, entry.description) == (
        "task_result",
        FINDINGS,
        "research",
        "Research the topic",
        "Top sources.",
    )
    assert seen["right_after_complete"] == FINDINGS  # before the researcher's next turn
    written = seen["written"]
    assert written.index("task:research") < written.index("step:researcher_r1")


async def test_a_teammate_reads_the_result_through_memory_read():
    team, context, messages, _ = await run_research_team()
    reads = [m for m in messages if isinstance(m, ToolResult) and m.name == "memory_read"]
    assert len(reads) == 1 and reads[0].step_id.startswith("writer_r")
    read: Any = reads[0].result
    assert read["entries"]["task:research"]["value"] == FINDINGS
    assert context.memory.get_value("task:report") == {"from": FINDINGS}
    assert team.get_results() == {"research": FINDINGS, "report": {"from": FINDINGS}}
    assert team.failed_tasks() == [] and team.board.is_done()
    updates = [(m.task_id, m.status) for m in messages if isinstance(m, TaskUpdate)]
    assert updates == [
        ("research", "started"),
        ("research", "completed"),
        ("report", "started"),
        ("report", "completed"),
    ]


async def test_steps_are_one_per_member_and_round():
    team, context, messages, _ = await run_research_team()
    steps = [m.step_id for m in messages if isinstance(m, StepResult)]
    assert sorted(steps) == ["researcher_r1", "researcher_r2", "writer_r1", "writer_r2"]
    assert team.rounds_run == 2
    assert all(context.memory.has(f"step:{s}") for s in steps)


async def test_every_member_is_offered_memory_and_team_tools_and_the_shared_memory_prompt():
    _, _, _, seen = await run_research_team()
    provider: ScriptedProvider = seen["provider"]
    assert calls_of(provider, "researcher") and calls_of(provider, "writer")
    for sent in provider.calls:
        assert set(MEMORY_TOOL_NAMES) <= set(sent.tool_names)
        assert set(TEAM_TOOL_NAMES) <= set(sent.tool_names)
        system = sent.messages[0].content
        assert "## Shared Memory (progressive disclosure)" in system
        assert "## Memory Tools (progressive disclosure)" in system  # the default prompt stays
    writer_system = calls_of(provider, "writer")[0].messages[0].content
    assert "You are writer (role: writer: writes the report)" in writer_system


async def test_the_next_round_names_the_upstream_key_without_its_value():
    _, _, _, seen = await run_research_team()
    round_two = [
        c for c in calls_of(seen["provider"], "writer") if "round 2" in instructions(c.messages)
    ]
    text = instructions(round_two[0].messages)
    assert "- task:research — Research the topic" in text and "alpha" not in text
    assert "- report: Write the report (uses the results of research)" in text


async def test_a_failed_task_is_not_mirrored_and_its_dependents_fail_but_others_finish():
    board = TaskBoard()

    def give_up(messages: list[Message]) -> Completion:
        last = last_tool(messages)
        if last is None and claimable(board, "research"):
            return use("board_claim", {"task_id": "research"})
        if last == "board_claim":
            return use("board_fail", {"task_id": "research", "error": "no sources found"})
        return finish("gave up")

    team = TeamExecutor(
        objective="Report and glossary.",
        members=[RESEARCHER, WRITER],
        provider=team_model({"researcher": give_up, "writer": doer(board, "glossary", ["a"])}),
        model="m",
        tasks=[*RESEARCH_THEN_REPORT, {"id": "glossary", "title": "Glossary"}],
        board=board,
    )
    context = ProcessingContext()
    messages = await drain(team, context)
    assert not context.memory.has("task:research") and not context.memory.has("task:report")
    assert context.memory.get_value("task:glossary") == ["a"]
    failures = {
        m.task_id: m for m in messages if isinstance(m, TaskUpdate) and m.status != "started"
    }
    assert {k: m.status for k, m in failures.items()} == {
        "research": "failed",
        "report": "skipped",
        "glossary": "completed",
    }
    assert failures["research"].error == "no sources found"
    assert "'research'" in (failures["report"].error or "")
    assert [t.id for t in team.failed_tasks()] == ["research", "report"]
    assert team.get_results() == {"glossary": ["a"]}
    assert board.is_done() and team.rounds_run == 1


async def test_a_crashing_member_is_reported_and_does_not_hang_the_others():
    board = TaskBoard()

    def crash(messages: list[Message]) -> Completion:
        raise ProviderError("model on fire", provider="scripted", status=500)

    team = TeamExecutor(
        objective="Report on the topic.",
        members=[RESEARCHER, WRITER],
        provider=team_model({"researcher": doer(board, "research", FINDINGS), "writer": crash}),
        model="m",
        tasks=RESEARCH_THEN_REPORT,
        board=board,
        max_rounds=3,
    )
    context = ProcessingContext()
    messages = await asyncio.wait_for(drain(team, context), timeout=10)
    crashed = [m for m in messages if isinstance(m, StepResult) and m.error]
    assert [m.step_id for m in crashed] == ["writer_r1", "writer_r2", "writer_r3"]
    assert all("ProviderError: model on fire" in (m.error or "") for m in crashed)
    stored = context.memory.get_value("step:writer_r1")
    assert isinstance(stored, dict) and "model on fire" in str(stored["error"])
    assert context.memory.get_value("task:research") == FINDINGS  # the researcher finished
    (failure,) = [m for m in messages if isinstance(m, TaskUpdate) and m.status == "failed"]
    assert failure.task_id == "report" and "max_rounds=3" in (failure.error or "")
    assert team.get_results() == {"research": FINDINGS}


async def test_a_bug_in_our_code_propagates_instead_of_being_reported():
    def bug(messages: list[Message]) -> Completion:
        raise ZeroDivisionError("a bug")

    team = TeamExecutor(
        objective="Report on the topic.",
        members=[RESEARCHER],
        provider=team_model({"researcher": bug}),
        model="m",
        tasks=RESEARCH_THEN_REPORT,
    )
    with pytest.raises(ZeroDivisionError):
        await asyncio.wait_for(drain(team, ProcessingContext()), timeout=10)


async def test_max_rounds_bounds_a_team_that_never_finishes():
    provider = team_model({"dreamer": lambda messages: finish("still thinking")})
    team = TeamExecutor(
        objective="Never done.",
        members=[TeamMember(name="dreamer", role="thinker")],
        provider=provider,
        model="m",
        tasks=[{"id": "t", "title": "Think"}],
        max_rounds=3,
    )
    messages = await asyncio.wait_for(drain(team, ProcessingContext()), timeout=10)
    assert len(provider.calls) == 3 and team.rounds_run == 3
    (failure,) = [m for m in messages if isinstance(m, TaskUpdate)]
    assert (failure.task_id, failure.status) == ("t", "failed")
    assert (
        failure.error
        == "the team stopped after 3 round(s) (max_rounds=3) before it was finished (it was open)"
    )
    task = team.board.get("t")
    assert task is not None and task.status == "failed"


async def test_only_members_with_work_take_a_turn_and_messages_wake_a_member():
    board = TaskBoard()

    def researcher(messages: list[Message]) -> Completion:
        last = last_tool(messages)
        if last is None:
            if "round 1 " in instructions(messages):
                return use("board_claim", {"task_id": "research"})
            return use("read_messages", {})
        if last == "read_messages":
            note = last_result(messages)["messages"][0]["content"]
            return use("board_complete", {"task_id": "research", "result": {"note": note}})
        return finish("halfway" if last == "board_claim" else "done")

    def writer(messages: list[Message]) -> Completion:
        if last_tool(messages) is None:
            return use("send_message", {"to": "researcher", "content": "cite your sources"})
        return finish("asked for citations")

    provider = team_model({"researcher": researcher, "writer": writer})
    team = TeamExecutor(
        objective="Research.",
        members=[RESEARCHER, WRITER],
        provider=provider,
        model="m",
        tasks=[RESEARCH_THEN_REPORT[0]],
        board=board,
    )
    await drain(team, ProcessingContext())
    assert team.get_results() == {"research": {"note": "cite your sources"}}
    assert len(calls_of(provider, "writer")) == 2  # round 1 only: no work afterwards
    round_two = [
        c for c in calls_of(provider, "researcher") if "round 2" in instructions(c.messages)
    ]
    text = instructions(round_two[0].messages)
    assert "Tasks you claimed and have not finished:\n- research" in text
    assert "You have 1 unread message(s)" in text


class EchoTool(Tool):
    name = "echo"
    description = "Echo."
    input_schema = {"type": "object"}

    async def process(self, context: ProcessingContext, params: Mapping[str, JSON]) -> JSON:
        return "echo"


async def test_members_run_concurrently_with_their_own_and_the_shared_tools():
    def meet(messages: list[Message]) -> Completion:
        return use("rendezvous", {}) if last_tool(messages) is None else finish("met")

    provider = team_model({"researcher": meet, "writer": meet})
    researcher = TeamMember(name="researcher", role="researcher", tools=(EchoTool(),))
    team = TeamExecutor(
        objective="Meet.",
        members=[researcher, WRITER],
        provider=provider,
        model="m",
        tools=[Rendezvous(2)],
        tasks=[{"id": "t", "title": "Something"}],
        max_rounds=1,
    )
    messages = await asyncio.wait_for(drain(team, ProcessingContext()), timeout=10)
    met = [m for m in messages if isinstance(m, ToolResult) and m.name == "rendezvous"]
    assert [m.result for m in met] == [{"met": 2}, {"met": 2}]
    assert "echo" in calls_of(provider, "researcher")[0].tool_names
    assert "echo" not in calls_of(provider, "writer")[0].tool_names
    assert "rendezvous" in calls_of(provider, "writer")[0].tool_names


async def test_with_no_tasks_the_lead_plans_the_board_first():
    board = TaskBoard()

    def lead(messages: list[Message]) -> Completion:
        if "plan the team's work" not in instructions(messages):
            return doer(board, "research", FINDINGS)(messages)
        added = sum(1 for m in messages if m.role == "tool" and m.name == "board_add_task")
        if added == 0:
            return use("board_add_task", {"id": "research", "title": "Research"})
        if added == 1:
            return use(
                "board_add_task",
                {"id": "report", "title": "Report", "depends_on": ["research"]},
            )
        return finish("two tasks")

    provider = team_model({"researcher": lead, "writer": report_writer(board)})
    team = TeamExecutor(
        objective="Report on the topic.",
        members=[RESEARCHER, WRITER],
        provider=provider,
        model="m",
        board=board,
    )
    context = ProcessingContext()
    messages = await drain(team, context)
    planning = provider.calls[0]
    assert planning.tool_names == [
        "board_list",
        "board_add_task",
        "memory_list",
        "memory_read",
        "memory_write",
    ]
    assert "## Shared Memory (progressive disclosure)" in planning.messages[0].content
    assert messages[0].step_id == "researcher_plan"
    first = board.get("research")
    assert first is not None and first.added_by == "researcher"
    assert team.get_results() == {"research": FINDINGS, "report": {"from": FINDINGS}}


async def test_a_plan_that_adds_nothing_ends_the_run():
    provider = team_model({"researcher": lambda messages: finish("nothing to plan")})
    team = TeamExecutor(objective="Idle.", members=[RESEARCHER], provider=provider, model="m")
    messages = await drain(team, ProcessingContext())
    assert len(provider.calls) == 1 and team.rounds_run == 0
    assert [type(m) for m in messages][-1] is StepResult


async def test_the_mirror_is_unsubscribed_when_the_run_ends():
    team, context, _, _ = await run_research_team()
    team.board.add(id="later", title="Later")
    team.board.claim("later", "someone")
    team.board.complete("later", "someone", 1)
    assert not context.memory.has("task:later")


async def test_a_callers_system_prompt_is_a_preamble_and_the_bus_knows_the_members():
    provider = team_model({"researcher": lambda messages: finish("ok")})
    team = TeamExecutor(
        objective="Anything.",
        members=[RESEARCHER],
        provider=provider,
        model="m",
        tasks=[BoardTask(id="t", title="T", status="completed")],
        system_prompt="Be terse.",
        max_rounds=1,
    )
    assert team.bus.members == ["researcher"]
    task = team.board.get("t")
    assert task is not None and task.status == "open"  # seeds are fresh open tasks
    await drain(team, ProcessingContext())
    assert provider.calls[0].messages[0].content.startswith("Be terse.\n\n# Team")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"members": []}, "at least one member"),
        ({"members": [RESEARCHER, RESEARCHER]}, "duplicate member name 'researcher'"),
        ({"objective": " "}, "objective"),
        ({"max_rounds": 0}, "max_rounds"),
        ({"max_step_iterations": 0}, "max_step_iterations"),
        ({"tasks": [{"id": "t", "title": "T", "owner": "x"}]}, "unknown task field 'owner'"),
        ({"tasks": [{"id": "b", "title": "B", "depends_on": ["a"]}]}, "unknown task 'a'"),
        ({"tasks": ["research"]}, "a TaskSpec, a BoardTask or a dict"),
    ],
)
def test_bad_teams_are_refused(kwargs: dict[str, Any], message: str):
    args: dict[str, Any] = {
        "objective": "Do it.",
        "members": [RESEARCHER],
        "provider": ScriptedProvider(),
        "model": "m",
        **kwargs,
    }
    with pytest.raises(InvalidInput, match=message):
        TeamExecutor(**args)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"name": "*", "role": "r"}, "non-empty name"),
        ({"name": "a", "role": ""}, "needs a role"),
        ({"name": "a", "role": "r", "tools": ["echo"]}, "Tool instances"),
    ],
)
def test_bad_members_are_refused(kwargs: dict[str, Any], message: str):
    with pytest.raises(InvalidInput, match=message):
        TeamMember(**kwargs)


class Blocker(Tool):
    name = "block"
    description = "Never returns."
    input_schema = {"type": "object", "properties": {}, "additionalProperties": False}

    async def process(self, context: ProcessingContext, params: Mapping[str, JSON]) -> JSON:
        await asyncio.Event().wait()
        return None


async def test_closing_the_stream_early_cancels_running_members_and_unsubscribes():
    def block(messages: list[Message]) -> Completion:
        return use("block", {})

    team = TeamExecutor(
        objective="Hang.",
        members=[RESEARCHER, WRITER],
        provider=team_model({"researcher": block, "writer": block}),
        model="m",
        tools=[Blocker()],
        tasks=[{"id": "t", "title": "T"}],
    )
    context = ProcessingContext()
    stream = cast(AsyncGenerator[Any, None], team.execute(context))
    calls = 0
    async for message in stream:
        calls += isinstance(message, ToolCallUpdate)
        if calls == 2:  # both members are now stuck in `block`
            break
    await asyncio.wait_for(stream.aclose(), timeout=5)
    assert [t for t in asyncio.all_tasks() if t is not asyncio.current_task()] == []
    team.board.claim("t", "someone")
    team.board.complete("t", "someone", 1)
    assert not context.memory.has("task:t")


async def test_a_completion_is_in_memory_before_its_update_is_streamed():
    board = TaskBoard()
    context = ProcessingContext()
    team = TeamExecutor(
        objective="Research.",
        members=[RESEARCHER],
        provider=team_model({"researcher": doer(board, "research", FINDINGS)}),
        model="m",
        tasks=[RESEARCH_THEN_REPORT[0]],
        board=board,
    )
    in_memory_when_streamed = []
    async for message in team.execute(context):
        if isinstance(message, TaskUpdate) and message.status == "completed":
            assert message.result == FINDINGS
            in_memory_when_streamed.append(context.memory.get_value("task:research"))
    assert in_memory_when_streamed == [FINDINGS]
