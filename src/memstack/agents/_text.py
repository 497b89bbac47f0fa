"""Short text for titles and summaries."""

from __future__ import annotations

from typing import Final

__all__ = ["TITLE_CHARS", "clip", "one_line"]

TITLE_CHARS: Final = 80


def clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, ending in ``...`` when cut."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def one_line(text: str, limit: int = TITLE_CHARS) -> str:
    """``text`` with its whitespace folded to single spaces, clipped: a title."""
    return clip(" ".join(text.split()), limit)
