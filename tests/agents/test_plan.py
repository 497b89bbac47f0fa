"""Plans refuse to exist when invalid, and the errors name the ids at fault."""

from __future__ import annotations

from dataclasses import FrozenInstanceError, replace
from typing import Any

import pytest

from memstack import InvalidInput
from memstack.agents.plan import Step, Task, TaskPlan


def s(id: str, *deps: str, **kw: Any) -> Step:
    return Step(id=id, instructions=f"do {id}", depends_on=deps, **kw)


def t(id: str, *steps: Step, deps: tuple[str, ...] = ()) -> Task:
    return Task(id=id, title=id.upper(), steps=steps, depends_on=deps)


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: t("x", s("a"), s("a")), "duplicate step id 'a'"),
        (lambda: t("x", s("a", "ghost")), "step 'a' depends on unknown step 'ghost'"),
        (lambda: t("x", s("a", "a")), "step 'a' depends on itself"),
        (lambda: t("x", s("a", "b"), s("b", "a"), s("c")), "a cycle: a -> b -> a"),
        (lambda: t("x", s("a"), s("b", "a"), s("c", "a", mode="process")), "process step 'c'"),
        (lambda: t("x", s("a"), s("b", "c"), s("c")), "the last step 'c' gives the result"),
        (lambda: t("x"), "needs at least one step"),
        (lambda: s("a", mode="sideways"), "mode must be one of discover, process, aggregate"),
        (lambda: s("a", per_item_instructions="{item}"), "only apply to a process step"),
        (lambda: s("a", output_schema={"type": "banana"}), "not a valid JSON Schema"),
        (lambda: s("a", output_schema=["object"]), "must be a JSON Schema object"),
        (lambda: Step(id="", instructions="x"), "non-empty string id"),
        (lambda: Step(id="a", instructions="  "), "needs instructions"),
        (lambda: Step(id="a", instructions="x", depends_on="b"), "must be a list of ids"),  # type: ignore[arg-type]
        (lambda: TaskPlan(title="p", tasks=(t("a", s("a1")), t("a", s("a2")))), "task id 'a'"),
        (
            lambda: TaskPlan(title="p", tasks=(t("a", s("x")), t("b", s("x")))),
            "step id 'x' is used by task 'a' and task 'b'",
        ),
        (
            lambda: TaskPlan(title="p", tasks=(t("a", s("a1"), deps=("b",)), t("b", s("b1")))),
            "the last task 'b' gives the result, but task 'a' depends on it",
        ),
        (
            lambda: TaskPlan(
                title="p",
                tasks=(t("a", s("a1"), deps=("c",)), t("c", s("c1"), deps=("a",)), t("z", s("z1"))),
            ),
            "tasks form a cycle: a -> c -> a",
        ),
        (lambda: TaskPlan(title="p", tasks=()), "at least one task"),
        (lambda: s("a", completed="yes"), "completed must be true or false"),
    ],
)
def test_invalid_plans_are_refused(build, message):
    with pytest.raises(InvalidInput, match=None) as excinfo:
        build()
    assert message in str(excinfo.value)


def test_lists_become_tuples_and_order_respects_dependencies():
    task = Task(id="x", title="X", steps=[s("c0"), s("b", "a"), s("a"), s("z", "b")])  # type: ignore[arg-type]
    assert isinstance(task.steps, tuple)
    assert [step.id for step in task.ordered_steps()] == ["c0", "a", "b", "z"]
    assert task.last_step.id == "z"
    step = Step(id="q", instructions="x", depends_on=["p"], tools=["calculator"])  # type: ignore[arg-type]
    assert step.depends_on == ("p",) and step.tools == ("calculator",)


def test_a_step_is_frozen_except_for_completed():
    """Spec 003's ``Step.completed``: false when built, the one field that changes later;
    a step's definition (and so its equality and hash) stays what it was built with."""
    step = s("a", output_schema=None)
    assert step.completed is False
    before = hash(step)
    step.completed = True
    assert step.completed is True and hash(step) == before and step == s("a")
    with pytest.raises(FrozenInstanceError):
        step.instructions = "something else"
    with pytest.raises(InvalidInput) as excinfo:
        step.completed = 1  # type: ignore[assignment]
    assert excinfo.value.field == "completed" and step.completed is True
    assert replace(step, id="b").completed is True  # a copy keeps the flag it was given
