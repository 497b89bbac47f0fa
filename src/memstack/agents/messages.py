"""The typed messages an execution streams (spec 003: ``message.type == "chunk"`` ...)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from memstack._json import JSON, JSONObject

__all__ = [
    "Chunk",
    "ProcessingMessage",
    "StepResult",
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


ProcessingMessage = Chunk | ToolCallUpdate | ToolResult | StepResult
