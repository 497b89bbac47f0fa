"""Tasks and steps (spec 003 "Planning Phase"): what an agent executes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from memstack._json import JSONObject
from memstack.errors import InvalidInput

__all__ = ["Step", "StepMode", "Task"]

StepMode = Literal["discover", "process", "aggregate"]


@dataclass(frozen=True, kw_only=True)
class Step:
    id: str
    instructions: str
    depends_on: tuple[str, ...] = ()
    """Ids of steps of the same task that must finish first (a DAG)."""
    tools: tuple[str, ...] | None = None
    """Restrict the step to these tool names (memory tools and finish_step always stay)."""
    output_schema: JSONObject | None = None
    """JSON Schema the step's result must satisfy."""
    mode: StepMode | None = None
    per_item_instructions: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id.strip():
            raise InvalidInput("a step needs a non-empty id.", field="id")
        if not isinstance(self.instructions, str) or not self.instructions.strip():
            raise InvalidInput(f"step {self.id!r} needs instructions.", field="instructions")


@dataclass(frozen=True, kw_only=True)
class Task:
    id: str
    title: str
    description: str | None = None
    steps: tuple[Step, ...] = field(default_factory=tuple)
    depends_on: tuple[str, ...] = ()
    """Ids of tasks of the plan that must finish first."""

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id.strip():
            raise InvalidInput("a task needs a non-empty id.", field="id")

    @property
    def last_step(self) -> Step | None:
        return self.steps[-1] if self.steps else None
