"""memstack tools (``ltm_recall``, ``ltm_remember``, ``store_memory``, ...) as the
OpenAI Agents SDK's ``FunctionTool``s.

Each call is validated against the tool's JSON Schema and run by the memstack tool itself;
arguments the model got wrong come back to it as the tool result (the ``ToolInputError``
message naming the fields), so it can call again. The tools run in the run's
``ProcessingContext`` when ``Runner.run(..., context=...)`` passes one, else in the one
given here.
"""

from __future__ import annotations

from collections.abc import Iterable

from agents import FunctionTool, RunContextWrapper
from agents import Tool as AgentTool
from agents.tool_context import ToolContext

from memstack._json import dumps
from memstack.adapters.tool_loop import call_tool
from memstack.context import ProcessingContext
from memstack.tools import Tool

__all__ = ["function_tool", "function_tools"]


def function_tools(
    tools: Iterable[Tool], *, context: ProcessingContext | None = None
) -> list[AgentTool]:
    """Each memstack tool as a ``FunctionTool`` for ``Agent(tools=...)``."""
    shared = context if context is not None else ProcessingContext()
    return [function_tool(tool, context=shared) for tool in tools]


def function_tool(tool: Tool, *, context: ProcessingContext | None = None) -> FunctionTool:
    definition = tool.to_provider_tool()
    fallback = context if context is not None else ProcessingContext()
    by_name = {definition.name: tool}

    async def invoke(run: ToolContext[object], arguments: str) -> str:
        result, _ = await call_tool(by_name, tool.name, arguments, _context_of(run, fallback))
        return dumps(result)

    return FunctionTool(
        name=definition.name,
        description=definition.description,
        params_json_schema=definition.input_schema,
        on_invoke_tool=invoke,
        strict_json_schema=False,  # memstack schemas have optional fields
    )


def _context_of(run: RunContextWrapper[object], fallback: ProcessingContext) -> ProcessingContext:
    return run.context if isinstance(run.context, ProcessingContext) else fallback
