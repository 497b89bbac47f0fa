"""The task planner: create_task calls in, a validated TaskPlan out, retried with the error
fed back (spec 003 "Planning Phase")."""

from collections.abc import Mapping
from typing import Any

import pytest

from memstack import ProcessingContext, Tool, ToolInputError
from memstack._json import JSON, JSONObject
from memstack.agents.plan import Step, Task, TaskPlan
from memstack.agents.planner import (
    CreateTaskTool,
    PlanningError,
    TaskPlanner,
    parse_plan,
    parse_task,
    plan_of,
)
from memstack.errors import InvalidInput
from memstack.providers import Completion, ScriptedProvider, ToolCall
from memstack.providers.base import INVALID_JSON_KEY

call = ScriptedProvider.tool_call
OBJECTIVE = "Research Python ORMs and write a comparison report"
SCHEMA: JSONObject = {
    "type": "object",
    "properties": {"orms": {"type": "array"}},
    "required": ["orms"],
}


class SearchTool(Tool):
    name = "search"
    description = "Search the web for pages.\nReturns titles and URLs."
    input_schema = {"type": "object", "properties": {"q": {"type": "string"}}}

    async def process(self, context: ProcessingContext, params: Mapping[str, JSON]) -> JSON:
        return []


class WriteTool(Tool):
    name = "write_file"
    description = "Write a file to the workspace."
    input_schema = {"type": "object"}

    async def process(self, context: ProcessingContext, params: Mapping[str, JSON]) -> JSON:
        return None


def step(step_id: str, **fields: Any) -> dict[str, Any]:
    return {"id": step_id, "instructions": f"Do {step_id}.", **fields}


def task(task_id: str = "research", steps: list[dict[str, Any]] | None = None, **fields: Any):
    return {"id": task_id, "title": task_id.title(), "steps": steps or [step("s1")], **fields}


def reply(*tasks: dict[str, Any]) -> Completion:
    return Completion(tool_calls=tuple(call("create_task", t) for t in tasks))


def planner(provider: ScriptedProvider, **kwargs: Any) -> TaskPlanner:
    kwargs.setdefault("tools", [SearchTool(), WriteTool()])
    return TaskPlanner(provider=provider, model="m", objective=OBJECTIVE, **kwargs)


VALID = task(
    "research",
    [
        step("find", mode="discover", tools=["search"]),
        step("analyze", mode="process", depends_on=["find"], per_item_instructions="Read {item}"),
        step("report", mode="aggregate", depends_on=["analyze"], output_schema=SCHEMA),
    ],
    description="Find and compare ORMs.",
)


async def test_a_valid_single_task_plan():
    provider = ScriptedProvider([reply(VALID)])
    plan = await planner(provider).plan()
    assert plan == TaskPlan(
        title=OBJECTIVE,
        tasks=(
            Task(
                id="research",
                title="Research",
                description="Find and compare ORMs.",
                steps=(
                    Step(id="find", instructions="Do find.", mode="discover", tools=("search",)),
                    Step(
                        id="analyze",
                        instructions="Do analyze.",
                        mode="process",
                        depends_on=("find",),
                        per_item_instructions="Read {item}",
                    ),
                    Step(
                        id="report",
                        instructions="Do report.",
                        mode="aggregate",
                        depends_on=("analyze",),
                        output_schema=SCHEMA,
                    ),
                ),
            ),
        ),
    )
    assert len(provider.calls) == 1


async def test_several_create_task_calls_make_a_multi_task_plan():
    first = task("gather", [step("g1"), step("g2", depends_on=["g1"])])
    second = task("write", [step("w1")], depends_on=["gather"])
    plan = await planner(ScriptedProvider([reply(first, second)])).plan()
    assert [t.id for t in plan.tasks] == ["gather", "write"]
    assert plan.task("write").depends_on == ("gather",)
    assert plan.task("gather").step("g2").depends_on == ("g1",)
    assert plan.last_task.id == "write"


async def test_a_cycle_is_fed_back_and_fixed_on_the_second_attempt():
    cyclic = task("t", [step("a", depends_on=["b"]), step("b", depends_on=["a"])])
    bad = reply(cyclic)
    provider = ScriptedProvider([bad, reply(task("t", [step("a"), step("b", depends_on=["a"])]))])
    plan = await planner(provider).plan()
    assert plan.tasks[0].step("b").depends_on == ("a",)
    assert len(provider.calls) == 2
    messages = provider.calls[1].messages
    assert [m.role for m in messages] == ["system", "user", "assistant", "tool"]
    assert messages[2].tool_calls == bad.tool_calls
    assert messages[3].tool_call_id == bad.tool_calls[0].id
    assert "a -> b -> a" in messages[3].content
    assert "call `create_task` again for every task" in messages[3].content


BAD_REPLIES = [
    pytest.param(
        reply(task("t", [step("s1", depends_on=["nope"])])),
        ["step 's1' depends on unknown step 'nope'"],
        id="unknown-step-dependency",
    ),
    pytest.param(
        reply(task("a"), task("b", [step("s2")], depends_on=["zzz"])),
        ["task 'b' depends on unknown task 'zzz'"],
        id="unknown-task-dependency",
    ),
    pytest.param(
        reply(task("t", [step("s1"), step("s1")])),
        ["duplicate step id 's1'"],
        id="duplicate-step-ids",
    ),
    pytest.param(
        reply(task("t"), task("t", [step("s2")])),
        ["duplicate task id 't'"],
        id="duplicate-task-ids",
    ),
    pytest.param(
        reply(task("a"), task("b")),
        ["step id 's1' is used by task 'a' and task 'b'", "step:<id>"],
        id="step-id-reused-across-tasks",
    ),
    pytest.param(
        reply(task("t", [step("s1"), step("s2", mode="process", depends_on=["s1"])])),
        ["process step 's2' of task 't' must depend on a discover step"],
        id="process-without-discover",
    ),
    pytest.param(
        reply(task("t", [step("s1", output_schema='{"type": "object",')])),
        ["step 's1': output_schema is not valid JSON"],
        id="bad-output-schema-json",
    ),
    pytest.param(
        reply(task("t", [step("s1", output_schema={"type": 5})])),
        ["step 's1': output_schema is not a valid JSON Schema"],
        id="invalid-output-schema",
    ),
    pytest.param(
        reply(task("t", [step("s1", tools=["search", "browse"])])),
        ["step 's1' names unknown tool 'browse'", "search, write_file, memory_list"],
        id="unknown-tool-name",
    ),
    pytest.param(
        reply(task("t", [step(f"s{i}") for i in range(4)])),
        ["task 't' has 4 steps, more than the limit of 3 steps in a task"],
        id="too-many-steps-in-a-task",
    ),
    pytest.param(
        reply(task("a", [step("a1")]), task("b", [step(f"b{i}") for i in range(5)])),
        ["task 'b' has 5 steps, more than the limit of 3 steps in a task"],
        id="too-many-steps-in-the-second-task",
    ),
    pytest.param(
        reply({"id": "t", "steps": [step("s1")]}),
        ["missing required field `title`"],
        id="schema-violation",
    ),
    pytest.param(
        reply(task("a"), {"id": "b", "title": "B", "steps": []}),
        ["create_task call 2 of 2 (task 'b')", "`steps`"],
        id="schema-violation-names-the-call",
    ),
    pytest.param(
        Completion(
            tool_calls=(ToolCall(id="c1", name="create_task", arguments={INVALID_JSON_KEY: "{"}),)
        ),
        ["were not valid JSON"],
        id="invalid-json-arguments",
    ),
    pytest.param(
        Completion(tool_calls=(call("search", {"q": "orms"}),)),
        ["you called `search`, which is not available"],
        id="other-tool-instead-of-create-task",
    ),
]


@pytest.mark.parametrize(("bad", "fragments"), BAD_REPLIES)
async def test_a_rejected_plan_is_fed_back_to_the_model(bad: Completion, fragments: list[str]):
    provider = ScriptedProvider([bad, reply(task("fixed"))])
    plan = await planner(provider, max_steps=3).plan()
    assert plan.tasks[0].id == "fixed"
    feedback = provider.calls[1].messages[3:]
    assert [m.role for m in feedback] == ["tool"] * len(bad.tool_calls)
    assert [m.tool_call_id for m in feedback] == [c.id for c in bad.tool_calls]
    for fragment in fragments:
        assert fragment in feedback[0].content


async def test_max_steps_limits_each_task_not_the_whole_plan():
    """Spec 003: maxSteps is the "Maximum number of steps in a task"."""
    three_tasks = reply(
        task("a", [step("a1"), step("a2")]),
        task("b", [step("b1"), step("b2")], depends_on=["a"]),
        task("c", [step("c1"), step("c2")], depends_on=["b"]),
    )
    provider = ScriptedProvider([three_tasks])
    plan = await planner(provider, max_steps=2).plan()
    assert [len(t.steps) for t in plan.tasks] == [2, 2, 2]
    assert "At most 2 steps in each task" in provider.calls[0].messages[0].content


async def test_prose_instead_of_a_tool_call_is_answered_with_a_user_message():
    provider = ScriptedProvider(["Step 1: search. Step 2: write.", reply(task())])
    await planner(provider).plan()
    messages = provider.calls[1].messages
    assert [m.role for m in messages] == ["system", "user", "assistant", "user"]
    assert messages[2].content == "Step 1: search. Step 2: write."
    assert "no `create_task` call" in messages[3].content


async def test_three_failures_raise_planning_error():
    provider = ScriptedProvider(["prose", "more prose", "still prose", reply(task())])
    with pytest.raises(PlanningError, match="no valid plan after 3 attempts") as raised:
        await planner(provider).plan()
    assert raised.value.attempts == 3
    assert "no `create_task` call" in raised.value.last_error
    assert "no `create_task` call" in str(raised.value)
    assert len(provider.calls) == 3
    assert len(provider.calls[2].messages) == 2 + 2 * 2  # two rejected turns fed back


async def test_max_retries_bounds_the_attempts():
    provider = ScriptedProvider(["prose", reply(task())])
    with pytest.raises(PlanningError) as raised:
        await planner(provider, max_retries=1).plan()
    assert raised.value.attempts == 1
    assert len(provider.calls) == 1


async def test_the_prompt_lists_the_tools_and_the_user_message_the_objective():
    provider = ScriptedProvider([reply(task())])
    await planner(
        provider, max_steps=7, system_prompt="You plan for ACME.", inputs_keys=["topic"]
    ).plan()
    system, user = provider.calls[0].messages
    assert system.role == "system" and user.role == "user"
    assert system.content.startswith("You plan for ACME.")
    assert "- `search`: Search the web for pages.\n" in system.content
    assert "Returns titles and URLs" not in system.content
    assert "- `write_file`: Write a file to the workspace." in system.content
    for phrase in ("step:<step id>", "task:<task id>", "memory_read", "discover", "At most 7"):
        assert phrase in system.content
    assert "Do not answer in prose" in system.content
    assert OBJECTIVE in user.content
    assert "input:topic" in user.content
    assert OBJECTIVE not in system.content


async def test_without_tools_the_prompt_says_so():
    provider = ScriptedProvider([reply(task())])
    await planner(provider, tools=[]).plan()
    assert "- (none:" in provider.calls[0].messages[0].content


async def test_the_provider_is_offered_exactly_the_create_task_tool():
    provider = ScriptedProvider([reply(task())])
    await planner(provider, max_steps=4).plan()
    (offered,) = provider.calls[0].tools
    assert offered.name == "create_task"
    assert provider.calls[0].model == "m"
    schema: Any = offered.input_schema
    assert schema["additionalProperties"] is False
    steps = schema["properties"]["steps"]
    assert steps["minItems"] == 1 and steps["maxItems"] == 4
    assert steps["items"]["additionalProperties"] is False


async def test_plan_stream_reports_each_attempt():
    provider = ScriptedProvider(["prose", reply(task())])
    updates = [u async for u in planner(provider).plan_stream()]
    assert [(u.attempt, u.status) for u in updates] == [
        (1, "planning"),
        (1, "rejected"),
        (2, "planning"),
        (2, "planned"),
    ]
    assert updates[-1].plan is not None and updates[-1].plan.tasks[0].id == "research"


def test_parse_task_parses_an_output_schema_given_as_json_text():
    parsed = parse_task(task("t", [step("s1", output_schema='{"type": "string"}')]))
    assert parsed.steps[0].output_schema == {"type": "string"}


@pytest.mark.parametrize("tools", [["memory_read", "finish_step"], ["search"]])
def test_memory_tools_and_finish_step_are_always_allowed(tools: list[str]):
    parsed = parse_task(task("t", [step("s1", tools=tools)]), tool_names=["search"])
    assert parsed.steps[0].tools == tuple(tools)


def test_parse_plan_without_a_tool_list_accepts_any_tool_name():
    calls = [call("create_task", task("t", [step("s1", tools=["anything"])]))]
    assert parse_plan(calls, title="T").tasks[0].steps[0].tools == ("anything",)


async def test_create_task_tool_process_validates_the_task():
    tool = CreateTaskTool(tool_names=["search"])
    context = ProcessingContext()
    assert await tool.process(context, task()) == {"ok": True, "task_id": "research"}
    with pytest.raises(ToolInputError, match="unknown tool 'browse'"):
        await tool.process(context, task("t", [step("s1", tools=["browse"])]))
    with pytest.raises(ToolInputError, match="missing required field `steps`"):
        await tool.process(context, {"id": "t", "title": "T"})


def test_plan_of_wraps_a_pre_built_task():
    built = Task(id="t", title="Prebuilt", steps=(Step(id="s", instructions="Go."),))
    assert plan_of(built) == TaskPlan(title="Prebuilt", tasks=(built,))
    assert plan_of(built, title="Other").title == "Other"


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"objective": " "}, "objective"),
        ({"max_steps": 0}, "max_steps"),
        ({"max_retries": 0}, "max_retries"),
    ],
)
def test_planner_arguments_are_checked(kwargs: dict[str, Any], field: str):
    arguments: dict[str, Any] = {"objective": OBJECTIVE, **kwargs}
    with pytest.raises(InvalidInput) as raised:
        TaskPlanner(provider=ScriptedProvider(), model="m", **arguments)
    assert raised.value.field == field
