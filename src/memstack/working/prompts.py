"""The prompt text that teaches a model the memory tools."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from memstack._prompt_text import escape_prompt_text
from memstack.working.memory import AgentMemory

__all__ = [
    "MEMORY_TOOLS_PROMPT",
    "UPSTREAM_MEMORY_HEADER",
    "upstream_memory_hint",
    "with_upstream_hint",
]

MEMORY_TOOLS_PROMPT: Final = """\
## Memory Tools (progressive disclosure)
- Shared agent memory holds results from prior steps and tasks, original
  inputs, and facts published by other agents.
- Memory contents are NOT auto-included in your prompt. If you need upstream
  context, discover it on demand:
  1. Call `memory_list` to see what's available (returns metadata only —
     keys, titles, kinds, byte sizes).
  2. Call `memory_read` with the specific keys you actually need; it returns
     full values.
  3. Call `memory_write` to publish a value under `shared:<key>` so other
     agents can find it via `memory_list`.
- Pull only what you need — don't fetch every entry by reflex."""
"""The ``## Memory Tools (progressive disclosure)`` section of the default execution prompts."""

UPSTREAM_MEMORY_HEADER: Final = "# Required upstream memory (call `memory_read` with these keys):"


def upstream_memory_hint(memory: AgentMemory, keys: Iterable[str]) -> str:
    """The "Required upstream memory" block for a step's user message.

    Lists each declared key once, in order, with its title when it has one, and
    only keys that exist in ``memory``. Values are never included: the model
    calls ``memory_read`` for them. Returns ``""`` when no key exists.
    """
    lines: list[str] = []
    seen: set[str] = set()
    for key in keys:
        if key in seen:
            continue
        seen.add(key)
        entry = memory.get(key)
        if entry is None:
            continue
        key = escape_prompt_text(entry.key)
        lines.append(f"- {key} — {escape_prompt_text(entry.title)}" if entry.title else f"- {key}")
    return "\n".join([UPSTREAM_MEMORY_HEADER, *lines]) if lines else ""


def with_upstream_hint(instructions: str, memory: AgentMemory, keys: Iterable[str]) -> str:
    """``instructions`` followed, after a blank line, by the upstream-memory hint if any."""
    hint = upstream_memory_hint(memory, keys)
    return f"{instructions}\n\n{hint}" if hint else instructions
