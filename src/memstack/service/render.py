"""The ``<memories>`` block injected before an agent runs, produced in this one place."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from memstack._prompt_text import escape_prompt_text
from memstack.service.types import Memory

__all__ = ["DEFAULT_BUDGET", "left_out_note", "render_memories", "xml_attr"]


DEFAULT_BUDGET: Final = 8_000
"""Characters of prompt context when the caller gives no budget: the ``<knowledge>``
block takes at most half of it. The ``<memories>`` block has no budget unless the caller
gives one: every memory is injected."""
_OPENING: Final = "<memories>"
_CLOSING: Final = "</memories>"


def render_memories(memories: Sequence[Memory], *, budget_chars: int | None = None) -> str:
    """``<memories>`` with one ``<memory key=".." scope="..">`` per memory, in order;
    ``""`` when there are none.

    Every memory, unless ``budget_chars`` is given: then the block stays within it,
    skipping the memories that would take it over, and says in a line of its own how many
    it left out (``left_out_note``), so the model knows it sees only part of them.

    Values and keys are escaped (``escape_prompt_text``), so a stored value cannot close
    the block, not even with look-alike brackets."""
    parts = [_part(memory) for memory in memories]
    if not parts:
        return ""
    if budget_chars is None or _size(parts) <= budget_chars:
        return "\n".join([_OPENING, *parts, _CLOSING])
    # Room for the note first (its longest form: every memory left out), then the parts.
    room = budget_chars - len(left_out_note(len(parts))) - 1
    if room < _size([]):
        return ""  # not even the note fits
    kept: list[str] = []
    used = _size([])
    for part in parts:
        if used + _taken(part) <= room:
            kept.append(part)
            used += _taken(part)
    return "\n".join([_OPENING, *kept, left_out_note(len(parts) - len(kept)), _CLOSING])


def left_out_note(count: int) -> str:
    """The line a budgeted ``<memories>`` block ends with when it left ``count`` out."""
    noun = "memory" if count == 1 else "memories"
    return f"[{count} more {noun} left out to fit the budget]"


def _part(memory: Memory) -> str:
    return (
        f"<memory key={xml_attr(memory.key)} scope={xml_attr(memory.scope)}>\n"
        f"{escape_prompt_text(memory.value)}\n</memory>"
    )


def _size(parts: Sequence[str]) -> int:
    """The length of the block holding ``parts`` (one newline after each line)."""
    return len(_OPENING) + len(_CLOSING) + sum(_taken(p) for p in parts) + 1


def _taken(part: str) -> int:
    """What one line adds to the block: itself and its newline."""
    return len(part) + 1


def xml_attr(value: str) -> str:
    """A double-quoted XML attribute value, escaped as prompt text."""
    return '"' + escape_prompt_text(value).replace('"', "&quot;") + '"'
