"""Argument checks and line handling for MemoryBank: one place each.

Lines end at ``\\r\\n``, ``\\n`` or ``\\r``; a final line break ends the last line and
does not start a new, empty one (``"a\\nb\\n"`` is two lines).
"""

from __future__ import annotations

import re
from collections import deque
from typing import Final

from memstack.errors import InvalidInput
from memstack.storage._validate import check_text

__all__ = [
    "MAX_CONTENT_BYTES",
    "MAX_KEY_BYTES",
    "check_key",
    "check_max_lines",
    "check_size",
    "check_text",
    "keep_last_lines",
    "lines",
    "matching_lines",
]

MAX_CONTENT_BYTES: Final = 1_000_000
"""Largest content one key may hold, in UTF-8 bytes (after ``max_lines`` truncation)."""
MAX_KEY_BYTES: Final = 1024
"""Longest key (agent name), in UTF-8 bytes; the record store's id limit."""

_LINE_BREAK: Final = re.compile(r"\r\n|\r|\n")


def check_key(value: object, field: str) -> str:
    """A key: a non-empty string of at most ``MAX_KEY_BYTES`` UTF-8 bytes."""
    text = check_text(value, field)
    if not text.strip():
        raise InvalidInput(
            f"{field} must be a non-empty string, such as an agent name.", field=field
        )
    if len(text.encode("utf-8")) > MAX_KEY_BYTES:
        raise InvalidInput(
            f"{field} is longer than {MAX_KEY_BYTES} UTF-8 bytes; use a shorter name.", field=field
        )
    return text


def check_max_lines(value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidInput(
            f"max_lines must be an int >= 1, or None for no limit; got {value!r}.",
            field="max_lines",
        )
    return value


def check_size(content: str) -> str:
    size = len(content.encode("utf-8"))
    if size > MAX_CONTENT_BYTES:
        raise InvalidInput(
            f"content is {size:,} bytes of UTF-8; the limit is {MAX_CONTENT_BYTES:,}. "
            "Store a shorter summary instead.",
            field="content",
        )
    return content


def keep_last_lines(text: str, max_lines: int | None) -> str:
    """``text`` from the start of its last ``max_lines`` lines; line breaks are kept as
    they were."""
    if max_lines is None:
        return text
    starts: deque[int] = deque([0], maxlen=max_lines)
    count = 1
    for match in _LINE_BREAK.finditer(text):
        if match.end() < len(text):
            starts.append(match.end())
            count += 1
    return text if count <= max_lines else text[starts[0] :]


def lines(text: str) -> list[str]:
    """The lines of ``text`` without their line breaks; ``[]`` for ``""``."""
    parts = _LINE_BREAK.split(text)
    if parts and parts[-1] == "":
        parts.pop()
    return parts


def matching_lines(text: str, query: str) -> str:
    """The lines containing ``query`` (ignoring case), joined by ``\\n``; ``""`` when none."""
    wanted = query.casefold()
    return "\n".join(line for line in lines(text) if wanted in line.casefold())
