"""TaskExecutor: the step DAG, inputs, fan-out and failures, as spec 000 "TaskExecutor" says."""

from __future__ import annotations

from typing import Any

import pytest

from memstack import ProcessingContext
from memstack.agents.messages import StepResult
from memstack.agents.plan import Step, Task
from memstack.agents.runner import StepRunner
from memstack.agents.task_executor import TaskExecutor
from memstack.providers import ScriptedProvider
from tests.agents.scripts import Rendezvous, by_instructions, call, finish, tool_results, turns

OBJ: dict[str, Any] = {"type": "object"}


def run(task: Task, provider: ScriptedProvider, context: ProcessingContext, **kwargs: Any):
    tools = kwargs.pop("tools", ())
    runner = StepRunner(provider=provider, model="m", tools=tools, max_iterations=3)
    return TaskExecutor(task=task, context=context, runner=runner, **kwargs)


async def drain(executor: TaskExecutor) -> list[Any]:
    return [m async for m in executor.execute()]


def step_results(messages: list[Any]) -> dict[str, StepResult]:
    return {m.step_id: m for m in messages if isinstance(m, StepResult)}


async def test_steps_run_in_dependency_order_and_the_last_one_writes_the_task():
    task = Task(
        id="t1",
        title="Report",
        steps=(
            Step(id="a", instructions="A: gather", output_schema=OBJ),
            Step(id="b", instructions="B: gather more", output_schema=OBJ),
            Step(id="c", instructions="C: combine", depends_on=("a", "b"), output_schema=OBJ),
        ),
    )
    provider = by_instructions(
        {
            "A:": turns(finish({"a": 1})),
            "B:": turns(finish({"b": 2})),
            "C:": turns(
                call("memory_read", {"keys": ["step:a", "step:b"]}),
                finish({"c": 3}),
            ),
        }
    )
    context = ProcessingContext()
    executor = run(task, provider, context)
    results = step_results(await drain(executor))
    assert set(results) == {"a", "b", "c"} and results["c"].is_task_result
    assert not results["a"].is_task_result
    c_call = next(c for c in provider.calls if c.messages[1].content.startswith("C:"))
    hint = c_call.messages[1].content
    assert "- step:a — A: gather" in hint and "- step:b — B: gather more" in hint
    assert '"a"' not in hint  # keys only, never values
    read = tool_results(provider.calls[-1].messages, "memory_read")[0]
    assert read["entries"]["step:a"]["value"] == {"a": 1} and read["missing"] == []
    assert context.memory.get_value("task:t1") == {"c": 3}
    assert executor.result == {"c": 3} and executor.error is None
    assert [e.key for e in context.memory.list(kind="task_result")] == ["task:t1"]


async def test_independent_steps_run_concurrently():
    meet = Rendezvous(parties=2)
    task = Task(
        id="t",
        title="Both",
        steps=(
            Step(id="x", instructions="X: wait", output_schema=OBJ),
            Step(id="y", instructions="Y: wait", output_schema=OBJ),
        ),
    )
    both = turns(call("rendezvous", {}), finish({}))
    provider = by_instructions({"X:": both, "Y:": both})
    results = step_results(await drain(run(task, provider, ProcessingContext(), tools=[meet])))
    assert results["x"].error is None and results["y"].error is None
    met = [r for c in provider.calls for r in tool_results(c.messages, "rendezvous")]
    assert met == [{"met": 2}, {"met": 2}]  # one at a time, the first would time out


async def test_inputs_are_seeded_and_upstream_keys_are_hinted():
    context = ProcessingContext()
    context.memory.set(key="task:prior", kind="task_result", value=[1], title="Prior work")
    task = Task(id="t", title="T", steps=(Step(id="s", instructions="S: use it"),))
    provider = by_instructions({"S:": turns("done")})
    executor = run(
        task,
        provider,
        context,
        inputs={"city": "Paris"},
        upstream_memory_keys=["task:prior"],
    )
    await drain(executor)
    entry = context.memory.get("input:city")
    assert entry is not None and entry.kind == "input" and entry.title == "city"
    assert entry.value == "Paris"
    assert provider.calls[0].messages[1].content.endswith("- task:prior — Prior work")
    assert context.memory.get_value("task:t") == "done"


async def test_a_failed_step_skips_its_dependents_and_independent_ones_finish():
    task = Task(
        id="t",
        title="T",
        steps=(
            Step(id="bad", instructions="BAD: never finishes", output_schema=OBJ),
            Step(id="after", instructions="AFTER: needs bad", depends_on=("bad",)),
            Step(id="later", instructions="LATER: needs after", depends_on=("after",)),
            Step(id="free", instructions="FREE: independent", output_schema=OBJ),
        ),
    )
    provider = by_instructions({"BAD:": turns("thinking..."), "FREE:": turns(finish({"ok": 1}))})
    context = ProcessingContext()
    executor = run(task, provider, context)
    results = step_results(await drain(executor))
    assert "did not finish within 3 iterations" in (results["bad"].error or "")
    assert results["after"].error == "skipped: step 'bad' did not complete"
    assert results["later"].error == "skipped: step 'after' did not complete"
    assert results["free"].error is None
    assert context.memory.get_value("step:after") == {"error": results["after"].error}
    assert context.memory.get_value("step:free") == {"ok": 1}
    # "free" is the last step, so it is the finish step: the task still completes.
    assert executor.error is None and executor.result == {"ok": 1}
    assert results["free"].is_task_result and context.memory.get_value("task:t") == {"ok": 1}
    # spec 003's Step.completed is the record of what finished
    assert [step.completed for step in task.steps] == [False, False, False, True]
    assert executor.completed == {"free": {"ok": 1}}


async def test_steps_already_completed_are_not_run_again():
    """A task executor runs the steps not yet completed: a step marked completed (its
    result in memory) is not run, and its dependents start at once."""
    context = ProcessingContext()
    context.memory.set(key="step:a", kind="step_result", value={"a": 1}, title="A: gather")
    task = Task(
        id="t",
        title="T",
        steps=(
            Step(id="a", instructions="A: gather", output_schema=OBJ, completed=True),
            Step(id="b", instructions="B: combine", depends_on=("a",), output_schema=OBJ),
        ),
    )
    provider = by_instructions({"B:": turns(finish({"b": 2}))})
    executor = run(task, provider, context)
    results = step_results(await drain(executor))
    assert set(results) == {"b"} and len(provider.calls) == 1
    assert "- step:a — A: gather" in provider.calls[0].messages[1].content
    assert executor.completed == {"a": {"a": 1}, "b": {"b": 2}} and executor.result == {"b": 2}
    again = run(task, provider, context)
    assert await drain(again) == [] and len(provider.calls) == 1  # all done: nothing to run
    assert again.result == {"b": 2} and again.error is None


async def test_a_provider_error_fails_the_step_not_the_run():
    task = Task(
        id="t",
        title="T",
        steps=(
            Step(id="one", instructions="ONE: scripted once"),
            Step(id="two", instructions="TWO: independent"),
        ),
    )
    # ONE's rule raises ConfigError like a provider that gives up; TWO answers.
    provider = by_instructions({"ONE:": _raise_config, "TWO:": turns("fine")})
    results = step_results(await drain(run(task, provider, ProcessingContext())))
    assert (results["one"].error or "").startswith("ConfigError: ")
    assert results["two"].result == "fine"


def _raise_config(messages: Any) -> str:
    from memstack import ConfigError

    raise ConfigError("the model is not reachable")


async def test_our_own_bugs_propagate():
    task = Task(id="t", title="T", steps=(Step(id="s", instructions="S: boom"),))

    def boom(messages: Any) -> str:
        raise ZeroDivisionError("bug")

    with pytest.raises(ZeroDivisionError):
        await drain(run(task, by_instructions({"S:": boom}), ProcessingContext()))


def fan_out_task(*, finish_on_process: bool = False, find_schema: Any = None) -> Task:
    steps = [
        Step(
            id="find", instructions="FIND: list files", mode="discover", output_schema=find_schema
        ),
        Step(
            id="each",
            instructions="Analyze the files.",
            depends_on=("find",),
            mode="process",
            per_item_instructions="EACH: analyze {item}",
        ),
    ]
    if not finish_on_process:
        steps.append(
            Step(id="sum", instructions="SUM: summarize", depends_on=("each",), mode="aggregate")
        )
    return Task(id="files", title="Files", steps=tuple(steps))


async def test_process_step_fans_out_over_discovered_items_with_a_bound():
    active, peak = 0, 0

    def each(messages: list[Any]) -> Any:
        nonlocal active, peak
        item = messages[1].content.removeprefix("EACH: analyze ")
        if not any(m.role == "assistant" for m in messages):
            active += 1
            peak = max(peak, active)
            return call("rendezvous", {})
        active -= 1
        return f"size of {item}"

    provider = by_instructions(
        {
            "FIND:": turns(finish(["a.csv", "b.csv", "c.csv"])),
            "EACH:": each,
            "SUM:": turns(call("memory_read", {"keys": ["step:each"]}), "3 files"),
        }
    )
    context = ProcessingContext()
    executor = run(
        fan_out_task(), provider, context, tools=[Rendezvous(parties=2)], fan_out_concurrency=2
    )
    results = step_results(await drain(executor))
    expected = ["size of a.csv", "size of b.csv", "size of c.csv"]
    assert results["each"].result == expected and results["each"].error is None
    assert context.memory.get_value("step:each") == expected
    assert [results[f"each.{i}"].result for i in range(3)] == expected
    assert peak == 2
    sum_call = next(c for c in provider.calls if c.messages[1].content.startswith("SUM:"))
    assert "- step:each" in sum_call.messages[1].content
    assert context.memory.get_value("task:files") == "3 files"
    assert executor.result == "3 files"
    assert [step.completed for step in executor.task.steps] == [True, True, True]


async def test_a_process_step_whose_items_all_fail_is_not_completed():
    provider = by_instructions({"FIND:": turns(finish(["a", "b"])), "EACH:": turns("")})
    task = fan_out_task()
    results = step_results(await drain(run(task, provider, ProcessingContext())))
    assert results["each"].error == "every item of process step 'each' failed"
    assert [step.completed for step in task.steps] == [True, False, False]


async def test_process_as_finish_step_writes_the_task_result():
    provider = by_instructions({"FIND:": turns(finish({"files": ["x"]})), "EACH:": turns("ok")})
    context = ProcessingContext()
    results = step_results(
        await drain(run(fan_out_task(finish_on_process=True), provider, context))
    )
    assert results["each"].is_task_result and context.memory.get_value("task:files") == ["ok"]


@pytest.mark.parametrize(
    ("found", "message"),
    [("just text", "not a list of items"), ({"a": [1], "b": [2]}, "exactly one array field")],
)
async def test_a_discover_result_that_is_not_a_list_fails_the_process_step(found, message):
    """The discover step's own schema lets anything through, so the fan-out's check is
    what refuses the result."""
    provider = by_instructions({"FIND:": turns(finish(found))})
    context = ProcessingContext()
    results = step_results(await drain(run(fan_out_task(find_schema={}), provider, context)))
    assert message in (results["each"].error or "")
    assert results["sum"].error == "skipped: step 'each' did not complete"


async def test_too_many_items_is_refused():
    provider = by_instructions({"FIND:": turns(finish(list(range(5))))})
    executor = run(fan_out_task(), provider, ProcessingContext(), max_fan_out=4)
    results = step_results(await drain(executor))
    assert "listed 5 items, more than the 4" in (results["each"].error or "")
