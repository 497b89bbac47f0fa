"""The files ``memstack users add-turns`` and ``import`` read, and the calls they make.

A file is JSONL (one object a line, as ``memstack users export`` writes) or one JSON
document: a list of objects, or an object holding that list (``{"turns": [...]}`` as
``POST .../turns`` takes it, ``{"memories": [...]}`` as ``GET .../export`` answers). The
whole file is read and checked before anything is sent, so a malformed line stops the
command with its line number and nothing written. The objects then go out in parts the
server takes in one call (its item limit, and well under its body limit)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import IO, Final

import click

from memstack._json import JSON

__all__ = ["batches", "read_objects"]

MAX_ITEMS: Final = 1_000
"""Turns or memories a call: the server's limit for both."""
MAX_BYTES: Final = 512 * 1024
"""A call's JSON, well within the server's default 1 MiB body limit."""


def read_objects(source: IO[str], *, holder: str) -> list[dict[str, JSON]]:
    """Every object of the file, in order; a ``ClickException`` naming the file and the
    line of the first that is not one. ``holder``: the key a JSON document may hold them
    under (and the word for them)."""
    name = getattr(source, "name", "-")
    found = _objects(name, source.read(), holder)
    if not found:
        raise click.ClickException(f"{name}: holds no {holder}.")
    return found


def _objects(name: str, text: str, holder: str) -> list[dict[str, JSON]]:
    try:
        whole: object = json.loads(text)
    except json.JSONDecodeError as exc:
        if text.lstrip().startswith("["):
            raise _bad(name, exc.lineno, f"is not JSON ({exc.msg} at column {exc.colno})") from None
        return [_line_object(name, number, line) for number, line in _lines(text)]
    if isinstance(whole, dict) and isinstance(whole.get(holder), list):
        whole = whole[holder]
    found: list[dict[str, JSON]] = []
    for index, item in enumerate(whole if isinstance(whole, list) else [whole]):
        if not isinstance(item, dict):
            raise click.ClickException(f"{name}: item {index + 1} is not a JSON object.")
        found.append(item)
    return found


def _lines(text: str) -> Iterator[tuple[int, str]]:
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            yield number, line


def _line_object(name: str, number: int, line: str) -> dict[str, JSON]:
    try:
        data: object = json.loads(line)
    except json.JSONDecodeError as exc:
        raise _bad(name, number, f"is not JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(data, dict):
        raise _bad(name, number, "is not a JSON object; each line holds one")
    return data


def _bad(name: str, number: int, problem: str) -> click.ClickException:
    return click.ClickException(f"{name}: line {number} {problem}.")


def batches(items: list[dict[str, JSON]]) -> Iterator[tuple[int, list[dict[str, JSON]]]]:
    """``(index of its first item, items)`` of each call: at most ``MAX_ITEMS`` and,
    unless one item alone is larger, ``MAX_BYTES``."""
    start, size = 0, 0
    for index, item in enumerate(items):
        weight = len(json.dumps(item, ensure_ascii=False).encode())
        if index > start and (index - start == MAX_ITEMS or size + weight > MAX_BYTES):
            yield start, items[start:index]
            start, size = index, 0
        size += weight
    if start < len(items):
        yield start, items[start:]
