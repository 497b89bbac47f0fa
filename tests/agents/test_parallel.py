"""ParallelTaskExecutor: the plan DAG and spec 000's propagation flow, checked in memory."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import pytest

from memstack import ProcessingContext, Tool
from memstack._json import JSON
from memstack.agents.messages import StepResult, TaskUpdate
from memstack.agents.parallel import ParallelTaskExecutor
from memstack.agents.plan import Step, Task, TaskPlan
from memstack.agents.runner import StepRunner
from memstack.providers import ScriptedProvider
from tests.agents.scripts import Rendezvous, by_instructions, call, finish, tool_results, turns


def executor(plan: TaskPlan, provider: ScriptedProvider, context: ProcessingContext, **kw: Any):
    runner = StepRunner(provider=provider, model="m", tools=kw.pop("tools", ()), max_iterations=3)
    return ParallelTaskExecutor(plan=plan, context=context, runner=runner, **kw)


async def drain(ex: ParallelTaskExecutor) -> list[Any]:
    return [m async for m in ex.execute()]


def updates(messages: list[Any]) -> dict[str, list[TaskUpdate]]:
    out: dict[str, list[TaskUpdate]] = {}
    for m in messages:
        if isinstance(m, TaskUpdate):
            out.setdefault(m.task_id, []).append(m)
    return out


def two_task_plan() -> TaskPlan:
    return TaskPlan(
        title="Report",
        tasks=(
            Task(
                id="research",
                title="Research findings",
                steps=(
                    Step(
                        id="search",
                        instructions="RESEARCH: find sources",
                        output_schema={"type": "array", "items": {"type": "string"}},
                    ),
                ),
            ),
            Task(
                id="report",
                title="Write the report",
                depends_on=("research",),
                steps=(Step(id="write", instructions="REPORT: write it up"),),
            ),
        ),
    )


async def test_downstream_task_reads_the_upstream_result_through_memory():
    seen_in_memory: list[bool] = []
    context = ProcessingContext()

    def report(messages: list[Any]) -> Any:
        if not any(m.role == "assistant" for m in messages):
            # step 4 of the propagation flow: task:research exists before report starts
            seen_in_memory.append(context.memory.has("task:research"))
            return call("memory_read", {"keys": ["task:research"]})
        findings = tool_results(messages, "memory_read")[0]["entries"]["task:research"]["value"]
        return f"Report on {', '.join(findings)}"

    provider = by_instructions({"RESEARCH:": turns(finish(["alpha", "beta"])), "REPORT:": report})
    ex = executor(two_task_plan(), provider, context, inputs={"topic": "ORMs"})
    messages = await drain(ex)

    assert seen_in_memory == [True]
    report_user = provider.calls[1].messages[1].content
    assert report_user == (
        "REPORT: write it up\n\n"
        "# Required upstream memory (call `memory_read` with these keys):\n"
        "- task:research — Research findings"
    )
    assert ex.get_final_result() == "Report on alpha, beta"
    assert ex.get_task_result("research") == ["alpha", "beta"]
    assert [e.key for e in ex.get_all_results()] == ["task:research", "task:report"]
    assert context.memory.get_value("input:topic") == "ORMs"
    assert [u.status for u in updates(messages)["report"]] == ["started", "completed"]
    assert updates(messages)["report"][-1].result == "Report on alpha, beta"
    finals = [m for m in messages if isinstance(m, StepResult) and m.is_task_result]
    assert [m.step_id for m in finals] == ["search", "write"]


async def test_a_lost_task_result_is_restored_from_the_last_step():
    context = ProcessingContext()

    dropped: list[str] = []

    def drop_task_results(entry: Any) -> None:  # loses the finish step's write, once
        if entry.key == "task:research" and not dropped:
            dropped.append(entry.key)
            context.memory.clear(key_prefix="task:research")

    context.memory.subscribe(drop_task_results)
    provider = by_instructions({"RESEARCH:": turns(finish(["alpha"])), "REPORT:": turns("ok")})
    ex = executor(two_task_plan(), provider, context)
    await drain(ex)
    assert dropped == ["task:research"]
    entry = context.memory.get("task:research")
    assert entry is not None and entry.value == ["alpha"] and entry.title == "Research findings"
    assert ex.get_task_result("report") == "ok"


async def test_a_failed_task_skips_dependents_and_independent_tasks_finish():
    plan = TaskPlan(
        title="P",
        tasks=(
            Task(
                id="a", title="A", steps=(Step(id="a1", instructions="A: fail", output_schema={}),)
            ),
            Task(id="b", title="B", depends_on=("a",), steps=(Step(id="b1", instructions="B: x"),)),
            Task(id="c", title="C", depends_on=("b",), steps=(Step(id="c1", instructions="C: x"),)),
            Task(id="d", title="D", steps=(Step(id="d1", instructions="D: fine"),)),
        ),
    )
    provider = by_instructions({"A:": turns("no finish_step"), "D:": turns("done")})
    context = ProcessingContext()
    ex = executor(plan, provider, context)
    by_task = updates(await drain(ex))
    assert by_task["a"][-1].status == "failed"
    assert by_task["b"] == [
        TaskUpdate(task_id="b", status="skipped", error="skipped: task 'a' did not complete")
    ]
    assert by_task["c"][-1].status == "skipped"
    assert by_task["d"][-1].status == "completed"
    failed_a: Any = context.memory.get_value("task:a")
    assert "did not finish" in failed_a["error"]
    assert context.memory.get_value("task:b") == {"error": "skipped: task 'a' did not complete"}
    assert ex.get_task_result("d") == "done"
    assert ex.failed.keys() == {"a", "b", "c"} and ex.completed == {"d"}


async def test_independent_tasks_run_concurrently():
    meet = Rendezvous(parties=2)
    plan = TaskPlan(
        title="P",
        tasks=(
            Task(id="x", title="X", steps=(Step(id="x1", instructions="X: go"),)),
            Task(id="y", title="Y", steps=(Step(id="y1", instructions="Y: go"),)),
        ),
    )
    both = turns(call("rendezvous", {}), "met")
    provider = by_instructions({"X:": both, "Y:": both})
    ex = executor(plan, provider, ProcessingContext(), tools=[meet])
    await drain(ex)
    assert ex.get_task_result("x") == "met" and ex.get_task_result("y") == "met"
    # each task reached the rendezvous while the other was there (run one after the
    # other, the first would time out and get an error back)
    met = [r for c in provider.calls for r in tool_results(c.messages, "rendezvous")]
    assert met == [{"met": 2}, {"met": 2}]


class Probe(Tool):
    """Counts how many callers are inside it at once."""

    name = "probe"
    description = "Hold on a moment."
    input_schema = {"type": "object", "properties": {}, "additionalProperties": False}

    def __init__(self) -> None:
        self.inside = 0
        self.peak = 0

    async def process(self, context: ProcessingContext, params: Mapping[str, JSON]) -> JSON:
        self.inside += 1
        self.peak = max(self.peak, self.inside)
        await asyncio.sleep(0.02)
        self.inside -= 1
        return "ok"


@pytest.mark.parametrize("limit", [1, 3])
async def test_max_concurrent_tasks_bounds_how_many_tasks_run_at_once(limit: int):
    probe = Probe()
    plan = TaskPlan(
        title="P",
        tasks=tuple(
            Task(id=n, title=n, steps=(Step(id=f"{n}1", instructions=f"{n.upper()}: go"),))
            for n in ("p", "q", "r", "s")
        ),
    )
    work = turns(call("probe", {}), "done")
    provider = by_instructions({"P:": work, "Q:": work, "R:": work, "S:": work})
    ex = executor(plan, provider, ProcessingContext(), tools=[probe], max_concurrent_tasks=limit)
    by_task = updates(await drain(ex))
    assert probe.peak == limit
    assert all(u[-1].status == "completed" for u in by_task.values())


async def test_memory_writes_follow_the_propagation_flow():
    """Spec 000 "Propagation Flow": inputs first, then per task its step result, its task
    result (from the finish step), and only then the downstream task's writes."""
    context = ProcessingContext()
    writes: list[tuple[str, str]] = []
    context.memory.subscribe(lambda entry: writes.append((entry.key, entry.kind)))
    provider = by_instructions(
        {
            "RESEARCH:": turns(finish(["alpha"])),
            "REPORT:": turns(
                call("memory_write", {"key": "draft", "value": "v1"}),
                "final",
            ),
        }
    )
    await drain(executor(two_task_plan(), provider, context, inputs={"topic": "ORMs"}))
    assert writes == [
        ("input:topic", "input"),
        ("step:search", "step_result"),
        ("task:research", "task_result"),
        ("shared:draft", "shared"),
        ("step:write", "step_result"),
        ("task:report", "task_result"),
    ]
    shared = context.memory.get("shared:draft")
    assert shared is not None and shared.source == "write"  # the writer is the step
