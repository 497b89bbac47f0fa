"""Splitting a knowledge document: into passages to embed, and into parts to store.

Both read the text where it lies, a paragraph or a word at a time, so splitting a 10 MB
document holds one passage at a time beside the text, never a second copy of it (a list
of its paragraphs or words would take several times its size).

Passages are a function of the text alone: the passage numbered ``i`` is the same in
every process, so an indexer that resumes a document after a restart skips the passages
already stored and carries on with the next one.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Final

__all__ = ["CHUNK_CHARS", "PART_CHARS", "count_passages", "iter_passages", "split_passages"]

CHUNK_CHARS: Final = 800
PART_CHARS: Final = 65_536
"""The most characters of a document one stored part holds (``split_parts``)."""
_PARAGRAPH: Final = re.compile(r"\n\s*\n")
_WORD: Final = re.compile(r"\S+")


def iter_passages(text: str, size: int = CHUNK_CHARS) -> Iterator[str]:
    """Paragraph-aligned passages of at most about ``size`` characters (long paragraphs
    are cut at word boundaries), one at a time."""
    current = ""
    for start, end in _paragraphs(text):
        for piece in _pieces(text, start, end, size):
            if current and len(current) + len(piece) + 2 > size:
                yield current
                current = piece
            else:
                current = f"{current}\n\n{piece}" if current else piece
    if current:
        yield current


def split_passages(text: str, size: int = CHUNK_CHARS) -> list[str]:
    """Every passage of ``text`` (``iter_passages``); a blank text is one passage."""
    return list(iter_passages(text, size)) or [text.strip()]


def count_passages(text: str) -> int:
    """How many passages ``split_passages`` makes of ``text``, without keeping them."""
    return max(1, sum(1 for _ in iter_passages(text)))


def split_parts(text: str, size: int = PART_CHARS) -> Iterator[str]:
    """``text`` in consecutive pieces of at most ``size`` characters, each ending after a
    whitespace character where there is one (so no word is cut in two); joined, they are
    ``text``."""
    start = 0
    while len(text) - start > size:
        end = start + size
        cut = max(text.rfind(space, start, end) for space in (" ", "\n", "\t"))
        end = cut + 1 if cut > start else end
        yield text[start:end]
        start = end
    yield text[start:]


def _paragraphs(text: str) -> Iterator[tuple[int, int]]:
    """The ``(start, end)`` of each run of ``text`` between blank lines."""
    start = 0
    for gap in _PARAGRAPH.finditer(text):
        yield start, gap.start()
        start = gap.end()
    yield start, len(text)


def _pieces(text: str, start: int, end: int, size: int) -> Iterator[str]:
    """The paragraph ``text[start:end]`` without its surrounding whitespace, whole when it
    fits in ``size``, else cut into lines of whole words (joined by single spaces)."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    if start == end:
        return
    if end - start <= size:
        yield text[start:end]
        return
    line = ""
    for match in _WORD.finditer(text, start, end):
        word = match.group()
        if line and len(line) + len(word) + 1 > size:
            yield line
            line = word
        else:
            line = f"{line} {word}" if line else word
    if line:
        yield line
