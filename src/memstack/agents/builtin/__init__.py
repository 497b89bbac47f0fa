"""The built-in tools an agent can be given: workspace files, the file system under a root,
the calculator and the math tools, and the vector tools on the knowledge base."""

from __future__ import annotations

from typing import Final

from memstack.agents.builtin.calculator import CalculatorTool, evaluate
from memstack.agents.builtin.files import ListDirectoryTool, ReadFileTool, WriteFileTool
from memstack.agents.builtin.math_tools import GeometryTool, StatisticsTool, TrigonometryTool
from memstack.agents.builtin.units import ConversionTool
from memstack.agents.builtin.vector_tools import (
    VECTOR_TOOL_NAMES,
    VecHybridSearchTool,
    VecIndexTool,
    VecTextSearchTool,
    vector_tools,
)
from memstack.agents.builtin.workspace import (
    WorkspaceListTool,
    WorkspaceReadTool,
    WorkspaceWriteTool,
)
from memstack.tools import Tool

__all__ = [
    "BUILTIN_TOOL_NAMES",
    "VECTOR_TOOL_NAMES",
    "CalculatorTool",
    "ConversionTool",
    "GeometryTool",
    "ListDirectoryTool",
    "ReadFileTool",
    "StatisticsTool",
    "TrigonometryTool",
    "VecHybridSearchTool",
    "VecIndexTool",
    "VecTextSearchTool",
    "WorkspaceListTool",
    "WorkspaceReadTool",
    "WorkspaceWriteTool",
    "WriteFileTool",
    "builtin_tools",
    "evaluate",
    "vector_tools",
]

BUILTIN_TOOL_NAMES: Final = (
    "workspace_read",
    "workspace_write",
    "workspace_list",
    "calculator",
    "statistics",
    "geometry",
    "trigonometry",
    "unit_conversion",
    "read_file",
    "write_file",
    "list_directory",
)
"""The tools that need nothing but the run's context; the vector tools need a knowledge
base: ``vector_tools(knowledge, principal)``."""


def builtin_tools() -> list[Tool]:
    """New instances of every built-in tool, in ``BUILTIN_TOOL_NAMES`` order. The file
    tools are confined to the run's workspace; construct them with ``root=`` for another
    directory."""
    return [
        WorkspaceReadTool(),
        WorkspaceWriteTool(),
        WorkspaceListTool(),
        CalculatorTool(),
        StatisticsTool(),
        GeometryTool(),
        TrigonometryTool(),
        ConversionTool(),
        ReadFileTool(),
        WriteFileTool(),
        ListDirectoryTool(),
    ]
