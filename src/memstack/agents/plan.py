"""Tasks, steps and plans: what an agent executes.

A ``Task`` is a DAG of ``Step``s and a ``TaskPlan`` a DAG of ``Task``s. Both are checked
when they are built (duplicate ids, unknown dependencies, cycles, a fan-out ``process``
step without its ``discover`` step), so an invalid plan cannot reach an executor; the
errors name the ids at fault, and the planner feeds them back to the model.
"""

from __future__ import annotations

from dataclasses import FrozenInstanceError, dataclass, field
from typing import Literal, get_args

from jsonschema import exceptions as js_exceptions
from jsonschema import validators as js_validators

from memstack._json import JSONObject
from memstack.agents.dag import check_dag, topological_order
from memstack.errors import InvalidInput

__all__ = ["Step", "StepMode", "Task", "TaskPlan"]

StepMode = Literal["discover", "process", "aggregate"]
_MODES: tuple[str, ...] = get_args(StepMode)


def _names(value: object, field_name: str, owner: str) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, list | tuple):
        raise InvalidInput(f"{owner}: {field_name} must be a list of ids.", field=field_name)
    if not all(isinstance(v, str) and v for v in value):
        raise InvalidInput(
            f"{owner}: every entry of {field_name} must be a non-empty string.", field=field_name
        )
    return tuple(value)


def _require_id(value: object, kind: str) -> None:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(f"a {kind} needs a non-empty string id.", field="id")


def _check_schema(schema: object, owner: str) -> None:
    """``output_schema`` must be a JSON Schema object, so ``finish_step`` can use it."""
    if not isinstance(schema, dict):
        raise InvalidInput(
            f"{owner}: output_schema must be a JSON Schema object.", field="output_schema"
        )
    try:
        js_validators.validator_for(schema).check_schema(schema)
    except js_exceptions.SchemaError as exc:
        raise InvalidInput(
            f"{owner}: output_schema is not a valid JSON Schema: {exc.message}.",
            field="output_schema",
        ) from exc


def _check_sink(kind: str, last: str, deps: dict[str, tuple[str, ...]], owner: str) -> None:
    """The last one gives the result, so nothing may wait for it."""
    waiting = [node for node, needs in deps.items() if last in needs]
    if waiting:
        raise InvalidInput(
            f"{owner}: the last {kind} {last!r} gives the result, but {kind} "
            f"{', '.join(map(repr, waiting))} depends on it; put the final {kind} last.",
            field="steps" if kind == "step" else "tasks",
        )


@dataclass(kw_only=True, unsafe_hash=True)
class Step:
    """One step of a task. Its definition is fixed once built; only ``completed`` changes,
    and the hash leaves ``completed`` out, so hashing a step stays stable while it runs."""

    id: str
    instructions: str
    depends_on: tuple[str, ...] = ()
    """Ids of steps of the same task that must finish first (a DAG)."""
    tools: tuple[str, ...] | None = None
    """Restrict the step to these tool names (the memory tools always stay, and
    ``finish_step`` on a step with an output schema)."""
    output_schema: JSONObject | None = None
    """JSON Schema the step's result must satisfy."""
    mode: StepMode | None = None
    """Fan-out: ``discover`` lists items, ``process`` runs one sub-step per item of the
    discover step it depends on, ``aggregate`` combines the per-item results."""
    per_item_instructions: str | None = None
    """For ``process`` steps: the sub-step instructions; ``{item}`` is replaced by the item."""
    completed: bool = field(default=False, compare=False)
    """Whether the step finished with a result: the executor running it sets it false when
    the step starts and true when it finishes (``finish_step``, a plain answer of an
    unstructured step, or a process step's per-item results gathered). The one record of a
    step's completion: a task executor runs only the steps not completed, so a task whose
    steps are all completed has nothing left to run."""

    def __setattr__(self, name: str, value: object) -> None:
        """Frozen like the other domain values, except for ``completed``."""
        if name in self.__dict__ and name != "completed":
            raise FrozenInstanceError(f"cannot assign to field {name!r}")
        if name == "completed" and not isinstance(value, bool):
            raise InvalidInput(
                f"step {self.id!r}: completed must be true or false.", field="completed"
            )
        super().__setattr__(name, value)

    def __post_init__(self) -> None:
        _require_id(self.id, "step")
        if not isinstance(self.instructions, str) or not self.instructions.strip():
            raise InvalidInput(f"step {self.id!r} needs instructions.", field="instructions")
        owner = f"step {self.id!r}"
        object.__setattr__(self, "depends_on", _names(self.depends_on, "depends_on", owner))
        if self.tools is not None:
            object.__setattr__(self, "tools", _names(self.tools, "tools", owner))
        if self.output_schema is not None:
            _check_schema(self.output_schema, owner)
        if self.per_item_instructions is not None and self.mode != "process":
            raise InvalidInput(
                f"{owner}: per_item_instructions only apply to a process step; set "
                'mode="process" or drop them.',
                field="per_item_instructions",
            )
        if self.mode is not None and self.mode not in _MODES:
            raise InvalidInput(
                f"{owner}: mode must be one of {', '.join(_MODES)}, not {self.mode!r}.",
                field="mode",
            )


@dataclass(frozen=True, kw_only=True)
class Task:
    id: str
    title: str
    description: str | None = None
    steps: tuple[Step, ...] = field(default_factory=tuple)
    depends_on: tuple[str, ...] = ()
    """Ids of tasks of the plan that must finish first."""

    def __post_init__(self) -> None:
        _require_id(self.id, "task")
        owner = f"task {self.id!r}"
        if not isinstance(self.title, str) or not self.title.strip():
            raise InvalidInput(f"{owner} needs a title.", field="title")
        if isinstance(self.steps, list):
            object.__setattr__(self, "steps", tuple(self.steps))
        if not self.steps or not all(isinstance(s, Step) for s in self.steps):
            raise InvalidInput(f"{owner} needs at least one step, each a Step.", field="steps")
        object.__setattr__(self, "depends_on", _names(self.depends_on, "depends_on", owner))
        ids = [s.id for s in self.steps]
        check_dag("step", ids, {s.id: s.depends_on for s in self.steps}, field="steps")
        _check_sink("step", self.steps[-1].id, {s.id: s.depends_on for s in self.steps}, owner)
        self._check_fan_out()

    def _check_fan_out(self) -> None:
        modes = {s.id: s.mode for s in self.steps}
        for step in self.steps:
            if step.mode == "process" and not any(modes[d] == "discover" for d in step.depends_on):
                raise InvalidInput(
                    f"process step {step.id!r} of task {self.id!r} must depend on a discover "
                    "step, whose list of items it fans out over.",
                    field="steps",
                )

    @property
    def last_step(self) -> Step:
        """The finish step: its result is the task's result."""
        return self.steps[-1]

    def step(self, step_id: str) -> Step:
        for candidate in self.steps:
            if candidate.id == step_id:
                return candidate
        raise InvalidInput(f"task {self.id!r} has no step {step_id!r}.", field="step_id")

    def ordered_steps(self) -> list[Step]:
        """The steps with each after its dependencies."""
        order = topological_order(
            [s.id for s in self.steps], {s.id: s.depends_on for s in self.steps}
        )
        return [self.step(i) for i in order]


@dataclass(frozen=True, kw_only=True)
class TaskPlan:
    """Several tasks as a DAG (``Task.depends_on``); the last task's result is the plan's."""

    title: str
    tasks: tuple[Task, ...]

    def __post_init__(self) -> None:
        if isinstance(self.tasks, list):
            object.__setattr__(self, "tasks", tuple(self.tasks))
        if not self.tasks or not all(isinstance(t, Task) for t in self.tasks):
            raise InvalidInput("a plan needs at least one task, each a Task.", field="tasks")
        ids = [t.id for t in self.tasks]
        check_dag("task", ids, {t.id: t.depends_on for t in self.tasks}, field="tasks")
        _check_sink("task", ids[-1], {t.id: t.depends_on for t in self.tasks}, "the plan")
        owners: dict[str, str] = {}
        for task in self.tasks:
            for step in task.steps:
                if step.id in owners:
                    raise InvalidInput(
                        f"step id {step.id!r} is used by task {owners[step.id]!r} and task "
                        f"{task.id!r}; step results share step:<id> keys, so make it unique.",
                        field="tasks",
                    )
                owners[step.id] = task.id

    @property
    def last_task(self) -> Task:
        return self.tasks[-1]

    def task(self, task_id: str) -> Task:
        for candidate in self.tasks:
            if candidate.id == task_id:
                return candidate
        raise InvalidInput(f"the plan has no task {task_id!r}.", field="task_id")
