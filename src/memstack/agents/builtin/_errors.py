"""The one shape of a built-in tool's refusal of its arguments: what the model gave wrong,
naming the field, in the words every memstack tool uses ("Invalid arguments for ...")."""

from __future__ import annotations

from memstack.errors import ToolInputError

__all__ = ["tool_error"]


def tool_error(tool: str, field: str, problem: str) -> ToolInputError:
    """``problem`` with ``field`` of ``tool``'s arguments, for the model to correct."""
    return ToolInputError(f"Invalid arguments for `{tool}`: {problem}", tool=tool, fields=(field,))
