"""The agent runtime: tasks and steps, the step executor, and agents (spec 003)."""

from memstack.agents.finish_step import FINISH_STEP, FinishStepTool
from memstack.agents.messages import (
    Chunk,
    ProcessingMessage,
    StepResult,
    ToolCallUpdate,
    ToolResult,
)
from memstack.agents.plan import Step, StepMode, Task
from memstack.agents.simple import AgentExecutor, SimpleAgent
from memstack.agents.step_executor import StepExecutor, estimate_tokens

__all__ = [
    "FINISH_STEP",
    "AgentExecutor",
    "Chunk",
    "FinishStepTool",
    "ProcessingMessage",
    "SimpleAgent",
    "Step",
    "StepExecutor",
    "StepMode",
    "StepResult",
    "Task",
    "ToolCallUpdate",
    "ToolResult",
    "estimate_tokens",
]
