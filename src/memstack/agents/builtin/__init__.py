"""The built-in tools an agent can be given: workspace files and a calculator."""

from __future__ import annotations

from typing import Final

from memstack.agents.builtin.calculator import CalculatorTool, evaluate
from memstack.agents.builtin.workspace import (
    WorkspaceListTool,
    WorkspaceReadTool,
    WorkspaceWriteTool,
)
from memstack.tools import Tool

__all__ = [
    "BUILTIN_TOOL_NAMES",
    "CalculatorTool",
    "WorkspaceListTool",
    "WorkspaceReadTool",
    "WorkspaceWriteTool",
    "builtin_tools",
    "evaluate",
]

BUILTIN_TOOL_NAMES: Final = ("workspace_read", "workspace_write", "workspace_list", "calculator")


def builtin_tools() -> list[Tool]:
    """New instances of every built-in tool, in ``BUILTIN_TOOL_NAMES`` order."""
    return [WorkspaceReadTool(), WorkspaceWriteTool(), WorkspaceListTool(), CalculatorTool()]
