"""The typed messages an execution streams (``message.type == "chunk"`` ...)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from memstack._json import JSON, JSONObject

__all__ = [
    "Chunk",
    "ProcessingMessage",
    "StepResult",
    "TaskStatus",
    "TaskUpdate",
    "ToolCallUpdate",
    "ToolResult",
]


@dataclass(frozen=True, kw_only=True)
class Chunk:
    """Text the model produced, as it streams."""

    content: str
    step_id: str
    type: Literal["chunk"] = "chunk"


@dataclass(frozen=True, kw_only=True)
class ToolCallUpdate:
    """The model called a tool; ``message`` says what it is doing, for UIs."""

    step_id: str
    call_id: str
    name: str
    arguments: JSONObject
    message: str
    type: Literal["tool_call_update"] = "tool_call_update"


@dataclass(frozen=True, kw_only=True)
class ToolResult:
    step_id: str
    call_id: str
    name: str
    result: JSON
    error: str | None = None
    type: Literal["tool_result"] = "tool_result"


@dataclass(frozen=True, kw_only=True)
class StepResult:
    step_id: str
    result: JSON
    is_task_result: bool = False
    error: str | None = None
    type: Literal["step_result"] = "step_result"


TaskStatus = Literal["started", "completed", "failed", "skipped"]


@dataclass(frozen=True, kw_only=True)
class TaskUpdate:
    """A task of a plan started, completed, failed, or was skipped because a task it
    depends on failed; ``error`` says why when it did not complete."""

    task_id: str
    status: TaskStatus
    result: JSON = None
    error: str | None = None
    type: Literal["task_update"] = "task_update"


ProcessingMessage = Chunk | ToolCallUpdate | ToolResult | StepResult | TaskUpdate
