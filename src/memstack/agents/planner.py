"""TaskPlanner: the objective in, a validated TaskPlan out.

The planner offers the model one tool, ``create_task``, and reads the calls of its reply:
one call per task. The arguments are checked against the tool's schema, turned into
``Task``/``Step`` values (which check themselves: duplicate ids, unknown dependencies,
cycles, fan-out), and assembled into a ``TaskPlan``. A rejected plan goes back to the
model with the error as the result of each call, and the model tries again, up to
``max_retries`` attempts in all; then ``PlanningError``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Literal, cast

from memstack._json import JSON, JSONObject
from memstack.agents._text import one_line
from memstack.agents.finish_step import FINISH_STEP
from memstack.agents.plan import Step, StepMode, Task, TaskPlan
from memstack.agents.planner_prompts import (
    build_planning_prompt,
    build_planning_user_message,
    retry_feedback,
)
from memstack.errors import InvalidInput, PlanningError, ToolInputError
from memstack.providers.base import INVALID_JSON_KEY, ChatModel, Completion, Message, ToolCall
from memstack.tools import Tool
from memstack.working import MEMORY_TOOL_NAMES

if TYPE_CHECKING:
    from memstack.context import ProcessingContext

__all__ = [
    "CREATE_TASK",
    "DEFAULT_MAX_RETRIES",
    "DEFAULT_MAX_STEPS",
    "CreateTaskTool",
    "PlanningError",
    "PlanningUpdate",
    "TaskPlanner",
    "check_plan",
    "parse_plan",
    "parse_task",
    "plan_of",
]

CREATE_TASK: Final = "create_task"
DEFAULT_MAX_STEPS: Final = 10
DEFAULT_MAX_RETRIES: Final = 3
_ALWAYS_AVAILABLE: Final = (*MEMORY_TOOL_NAMES, FINISH_STEP)


# -- the create_task tool -----------------------------------------------------------------


def _id_list(description: str) -> JSONObject:
    return {
        "type": "array",
        "items": {"type": "string", "minLength": 1},
        "description": description,
    }


def _step_schema() -> JSONObject:
    return {
        "type": "object",
        "properties": {
            "id": {"type": "string", "minLength": 1, "description": "Unique step id."},
            "instructions": {
                "type": "string",
                "minLength": 1,
                "description": "What the step must do, self-contained.",
            },
            "depends_on": _id_list("Ids of steps of this task whose results it needs."),
            "tools": _id_list("Restrict the step to these tool names; omit for all tools."),
            "output_schema": {
                "type": ["object", "string"],
                "description": "JSON Schema of the step's result (an object or its JSON text).",
            },
            "mode": {
                "type": "string",
                "enum": ["discover", "process", "aggregate"],
                "description": "Fan-out mode; omit for an ordinary step.",
            },
            "per_item_instructions": {
                "type": "string",
                "description": "For process steps: instructions per item; {item} is replaced.",
            },
        },
        "required": ["id", "instructions"],
        "additionalProperties": False,
    }


def _task_schema(max_steps: int | None) -> JSONObject:
    steps: JSONObject = {
        "type": "array",
        "items": _step_schema(),
        "minItems": 1,
        "description": "The task's steps; the last one produces the task's result.",
    }
    if max_steps is not None:
        steps["maxItems"] = max_steps
    return {
        "type": "object",
        "properties": {
            "id": {"type": "string", "minLength": 1, "description": "Unique task id."},
            "title": {"type": "string", "minLength": 1},
            "description": {"type": "string"},
            "depends_on": _id_list("Ids of earlier tasks whose results this task needs."),
            "steps": steps,
        },
        "required": ["id", "title", "steps"],
        "additionalProperties": False,
    }


class CreateTaskTool(Tool):
    """``create_task``: one call creates one task of the plan. The planner reads the calls
    rather than running them; ``process`` validates a task and returns ``{"ok": true}``."""

    name = CREATE_TASK
    description = (
        "Create one task of the plan: an id, a title and its steps (a DAG). Call it once per "
        "task; a task's depends_on names earlier tasks."
    )

    def __init__(
        self,
        *,
        max_steps: int | None = DEFAULT_MAX_STEPS,
        tool_names: Iterable[str] | None = None,
    ) -> None:
        self.max_steps = max_steps
        self.tool_names = None if tool_names is None else tuple(tool_names)
        self.input_schema: JSONObject = _task_schema(max_steps)

    async def process(self, context: ProcessingContext, params: Mapping[str, JSON]) -> JSON:
        try:
            task = parse_task(params, tool_names=self.tool_names)
        except InvalidInput as exc:
            raise ToolInputError(str(exc), tool=self.name) from exc
        return {"ok": True, "task_id": task.id}


_SCHEMA_CHECK: Final = CreateTaskTool(max_steps=None)
"""Validates one task's arguments; ``check_plan`` checks the step limit of each task."""


# -- parsing ------------------------------------------------------------------------------


def parse_task(arguments: Mapping[str, JSON], *, tool_names: Iterable[str] | None = None) -> Task:
    """A ``Task`` from ``create_task`` arguments.

    Raises ``ToolInputError`` for arguments that are not valid JSON or break the tool's
    schema, and ``InvalidInput`` for an invalid task: a bad ``output_schema`` (naming the
    step and field), a tool name not in ``tool_names`` (when given; the memory tools and
    ``finish_step`` are always allowed), or what ``Task`` and ``Step`` refuse.
    """
    if INVALID_JSON_KEY in arguments:
        raise ToolInputError(
            f"the arguments of `{CREATE_TASK}` were not valid JSON; call it again with a JSON "
            "object that matches its schema.",
            tool=CREATE_TASK,
        )
    args = _SCHEMA_CHECK.validate_arguments(arguments)
    allowed = None if tool_names is None else (*tool_names, *_ALWAYS_AVAILABLE)
    raw_steps = cast(list[JSONObject], args["steps"])
    description = args.get("description")
    return Task(
        id=cast(str, args["id"]),
        title=cast(str, args["title"]),
        description=cast(str, description) if description else None,
        depends_on=tuple(cast(list[str], args.get("depends_on", []))),
        steps=tuple(_parse_step(raw, allowed) for raw in raw_steps),
    )


def _parse_step(raw: JSONObject, allowed: Sequence[str] | None) -> Step:
    step_id = cast(str, raw["id"])
    tools = raw.get("tools")
    step = Step(
        id=step_id,
        instructions=cast(str, raw["instructions"]),
        depends_on=tuple(cast(list[str], raw.get("depends_on", []))),
        tools=None if tools is None else tuple(cast(list[str], tools)),
        output_schema=_output_schema(step_id, raw.get("output_schema")),
        mode=cast(StepMode | None, raw.get("mode")),
        per_item_instructions=cast(str | None, raw.get("per_item_instructions")),
    )
    if allowed is not None and step.tools is not None:
        unknown = [t for t in step.tools if t not in allowed]
        if unknown:
            raise InvalidInput(
                f"step {step_id!r} names unknown tool {', '.join(map(repr, unknown))}; "
                f"the available tools are: {', '.join(allowed)}.",
                field="tools",
            )
    return step


def _output_schema(step_id: str, value: JSON) -> JSONObject | None:
    """``output_schema`` given as JSON text is parsed; ``Step`` checks the schema."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise InvalidInput(
                f"step {step_id!r}: output_schema is not valid JSON ({exc.msg} at line "
                f"{exc.lineno}, column {exc.colno}); give a JSON Schema object.",
                field="output_schema",
            ) from exc
    return cast(JSONObject, value)  # Step refuses anything but a valid schema object


def parse_plan(
    calls: Sequence[ToolCall],
    *,
    title: str,
    tool_names: Iterable[str] | None = None,
    max_steps: int | None = None,
) -> TaskPlan:
    """A ``TaskPlan`` from the ``create_task`` calls of one reply, one task per call.

    Raises ``InvalidInput`` when there is no ``create_task`` call, when the tasks do not
    form a DAG, when two tasks reuse a step id (step results share the ``step:<id>``
    namespace), or when a task has more than ``max_steps`` steps; and whatever
    ``parse_task`` raises, prefixed with the call at fault when there are several.
    """
    creates = [c for c in calls if c.name == CREATE_TASK]
    if not creates:
        raise InvalidInput(_no_call_message(calls), field="tool_calls")
    names = None if tool_names is None else tuple(tool_names)
    tasks = [_parse_call(call, i, len(creates), names) for i, call in enumerate(creates, 1)]
    plan = TaskPlan(title=title, tasks=tuple(tasks))
    check_plan(plan, max_steps=max_steps)
    return plan


def _parse_call(call: ToolCall, index: int, total: int, names: Sequence[str] | None) -> Task:
    try:
        return parse_task(call.arguments, tool_names=names)
    except (InvalidInput, ToolInputError) as exc:
        if total == 1:
            raise
        where = f"create_task call {index} of {total}"
        task_id = call.arguments.get("id")
        if isinstance(task_id, str):
            where += f" (task {task_id!r})"
        if isinstance(exc, ToolInputError):
            raise ToolInputError(f"{where}: {exc}", tool=exc.tool, fields=exc.fields) from exc
        raise InvalidInput(f"{where}: {exc}", field=exc.field) from exc


def _no_call_message(calls: Sequence[ToolCall]) -> str:
    others = ", ".join(f"`{c.name}`" for c in calls)
    if others:
        return (
            f"you called {others}, which is not available; the only tool is `{CREATE_TASK}`. "
            f"Call `{CREATE_TASK}` once per task of the plan."
        )
    return (
        f"the reply had no `{CREATE_TASK}` call; a plan is given only by calling "
        f"`{CREATE_TASK}` once per task, not in prose."
    )


def check_plan(
    plan: TaskPlan, *, max_steps: int | None = None, tool_names: Iterable[str] | None = None
) -> None:
    """Raise ``InvalidInput`` when a task has more than ``max_steps`` steps (the limit is
    per task, ``maxSteps``) or a step names a tool not in ``tool_names`` (when
    given; the memory tools and ``finish_step`` are always available)."""
    for task in plan.tasks:
        if max_steps is not None and len(task.steps) > max_steps:
            raise InvalidInput(
                f"task {task.id!r} has {len(task.steps)} steps, more than the limit of "
                f"{max_steps} steps in a task; merge related steps, drop optional ones, or "
                "split the task in two.",
                field="steps",
            )
    if tool_names is None:
        return
    allowed = (*tool_names, *_ALWAYS_AVAILABLE)
    for task in plan.tasks:
        for step in task.steps:
            unknown = [t for t in step.tools or () if t not in allowed]
            if unknown:
                raise InvalidInput(
                    f"task {task.id!r}, step {step.id!r} names unknown tool "
                    f"{', '.join(map(repr, unknown))}; the available tools are: "
                    f"{', '.join(allowed)}.",
                    field="tools",
                )


def plan_of(task: Task, *, title: str | None = None) -> TaskPlan:
    """A one-task plan, for a pre-built task that skips planning."""
    return TaskPlan(title=title or task.title, tasks=(task,))


# -- the planner --------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class PlanningUpdate:
    """Progress of planning, for streaming UIs: an attempt starts, is rejected (with the
    error the model is told), or produces the plan."""

    attempt: int
    status: Literal["planning", "rejected", "planned"]
    message: str
    plan: TaskPlan | None = None
    type: Literal["planning_update"] = "planning_update"


class TaskPlanner:
    """Asks the model to call ``create_task`` for the objective, and retries with the
    validation error until the plan is valid or ``max_retries`` attempts are spent."""

    def __init__(
        self,
        *,
        provider: ChatModel,
        model: str,
        objective: str,
        tools: Sequence[Tool] = (),
        max_steps: int = DEFAULT_MAX_STEPS,
        max_retries: int = DEFAULT_MAX_RETRIES,
        system_prompt: str = "",
        inputs_keys: Sequence[str] = (),
    ) -> None:
        if not isinstance(objective, str) or not objective.strip():
            raise InvalidInput("objective must be a non-empty string.", field="objective")
        if max_steps < 1:
            raise InvalidInput("max_steps must be at least 1.", field="max_steps")
        if max_retries < 1:
            raise InvalidInput("max_retries must be at least 1.", field="max_retries")
        self.provider, self.model, self.objective = provider, model, objective
        self.tools = tuple(tools)
        self.max_steps, self.max_retries = max_steps, max_retries
        self.system_prompt = system_prompt
        self.inputs_keys = tuple(inputs_keys)
        self.tool_names = tuple(dict.fromkeys(t.name for t in self.tools))
        self.create_task_tool = CreateTaskTool(max_steps=max_steps, tool_names=self.tool_names)

    def system_message(self) -> str:
        """The planning prompt: the caller's preamble, the contract, the tools, the limit."""
        described = {t.name: t.description for t in reversed(self.tools)}
        return build_planning_prompt(
            tools=[(name, described[name]) for name in self.tool_names],
            max_steps=self.max_steps,
            caller_prompt=self.system_prompt,
        )

    def user_message(self) -> str:
        return build_planning_user_message(self.objective, self.inputs_keys)

    def parse(self, calls: Sequence[ToolCall]) -> TaskPlan:
        """The plan in one reply's tool calls, validated as the planner validates it."""
        return parse_plan(
            calls,
            title=one_line(self.objective),
            tool_names=self.tool_names,
            max_steps=self.max_steps,
        )

    async def plan(self) -> TaskPlan:
        """A valid plan, or ``PlanningError`` after ``max_retries`` rejected attempts."""
        plan: TaskPlan | None = None
        async for update in self.plan_stream():
            plan = update.plan or plan
        assert plan is not None  # plan_stream ends with the plan or raises
        return plan

    async def plan_stream(self) -> AsyncIterator[PlanningUpdate]:
        """``plan`` as progress updates; the last carries the plan."""
        messages = [
            Message(role="system", content=self.system_message()),
            Message(role="user", content=self.user_message()),
        ]
        tools = [self.create_task_tool.to_provider_tool()]
        error = ""
        for attempt in range(1, self.max_retries + 1):
            yield PlanningUpdate(
                attempt=attempt,
                status="planning",
                message=f"Planning, attempt {attempt} of {self.max_retries}",
            )
            completion = await self.provider.generate(messages, model=self.model, tools=tools)
            try:
                plan = self.parse(completion.tool_calls)
            except (InvalidInput, ToolInputError) as exc:
                error = str(exc)
                messages.extend(_feedback(completion, error))
                yield PlanningUpdate(attempt=attempt, status="rejected", message=error)
                continue
            summary = f"Planned {len(plan.tasks)} task(s): {', '.join(t.id for t in plan.tasks)}"
            yield PlanningUpdate(attempt=attempt, status="planned", message=summary, plan=plan)
            return
        raise PlanningError(
            f"no valid plan after {self.max_retries} attempts; the last error was: {error} "
            "Make the objective more specific, raise max_retries, or pass a pre-built task.",
            attempts=self.max_retries,
            last_error=error,
        )


def _feedback(completion: Completion, error: str) -> list[Message]:
    """The rejected reply and the error: a tool message answering each call, or a user
    message when the reply had no call."""
    text = retry_feedback(error)
    out = [Message(role="assistant", content=completion.content, tool_calls=completion.tool_calls)]
    if not completion.tool_calls:
        return [*out, Message(role="user", content=text)]
    out.extend(
        Message(role="tool", tool_call_id=call.id, name=call.name, content=text)
        for call in completion.tool_calls
    )
    return out
