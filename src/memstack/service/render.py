"""The ``<memories>`` block injected before an agent runs, produced in this one place."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from memstack._prompt_text import escape_prompt_text
from memstack.service.types import Memory

__all__ = ["DEFAULT_BUDGET", "render_memories", "xml_attr"]


DEFAULT_BUDGET: Final = 8_000
"""Characters a prompt block may take when the caller does not say (every door)."""


def render_memories(memories: Sequence[Memory], *, budget_chars: int = DEFAULT_BUDGET) -> str:
    """``<memories>`` with one ``<memory key=".." scope="..">`` per memory, in order,
    skipping any that would take the block over ``budget_chars``; ``""`` when none fit.

    Values and keys are escaped (``escape_prompt_text``), so a stored value cannot close
    the block, not even with look-alike brackets."""
    opening, closing = "<memories>", "</memories>"
    parts: list[str] = []
    used = len(opening) + len(closing) + 2
    for memory in memories:
        part = (
            f"<memory key={xml_attr(memory.key)} scope={xml_attr(memory.scope)}>\n"
            f"{escape_prompt_text(memory.value)}\n</memory>"
        )
        if used + len(part) + 1 > budget_chars:
            continue
        parts.append(part)
        used += len(part) + 1
    if not parts:
        return ""
    return "\n".join([opening, *parts, closing])


def xml_attr(value: str) -> str:
    """A double-quoted XML attribute value, escaped as prompt text."""
    return '"' + escape_prompt_text(value).replace('"', "&quot;") + '"'
