"""read_file, write_file, list_directory: file-system tools for the model, confined to a root.

The root is the directory given to the tool (``ReadFileTool(root=Path(...))``), or else
the run's workspace. Every path is checked by ``_confined``, the rules the workspace tools
use: relative, no ``..``, no NUL, and resolved (symbolic links followed) to a place inside
the resolved root, or refused. Reads take UTF-8 text by line ranges, ``MAX_READ_BYTES`` a
call, from files of at most ``MAX_FILE_BYTES``; writes are atomic and leave files of at
most ``MAX_WRITE_BYTES``. Like the workspace's files, these are a run's artifacts, not
memory: the secret filter guards what is stored as memory or knowledge, not files.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Final, cast

from memstack._json import JSON, JSONObject
from memstack.agents.builtin._confined import (
    MAX_PATH_CHARS,
    Located,
    Root,
    directory_root,
    locate,
    regular_file,
    tool_error,
    walk,
    workspace_root,
    write_confined,
)
from memstack.tools import Tool

if TYPE_CHECKING:
    from memstack.context import ProcessingContext

__all__ = [
    "MAX_FILE_BYTES",
    "MAX_LIST_ENTRIES",
    "MAX_READ_BYTES",
    "MAX_WRITE_BYTES",
    "ListDirectoryTool",
    "ReadFileTool",
    "WriteFileTool",
]

MAX_READ_BYTES: Final = 100_000
"""Most bytes of lines one ``read_file`` call returns; ``next_start_line`` reads on."""
MAX_FILE_BYTES: Final = 20_000_000
"""Largest file ``read_file`` reads (it counts the lines of the whole file)."""
MAX_WRITE_BYTES: Final = 1_000_000
"""Largest file ``write_file`` leaves behind (after an append, too)."""
MAX_LIST_ENTRIES: Final = 500
"""Most entries one ``list_directory`` call returns."""
MAX_LIST_SCANNED: Final = 20_000
"""Most directory entries one ``list_directory`` call looks at."""
_BINARY_PROBE: Final = 8192


class _RootedTool(Tool):
    """A tool confined to ``root``, or, without one, to the run's workspace."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = root

    def _root(self, context: ProcessingContext) -> Root:
        if self.root is not None:
            return directory_root(self.root, self.name, "root directory")
        instead = f", or construct the tool with {type(self).__name__}(root=Path(...))"
        return workspace_root(context, self.name, instead=instead)


def _path(description: str) -> JSONObject:
    return {
        "type": "string",
        "minLength": 1,
        "maxLength": MAX_PATH_CHARS,
        "description": description,
    }


# -- read_file ------------------------------------------------------------------------


@dataclass(kw_only=True)
class _Window:
    """The lines of a file from ``start`` to ``end``, as many as fit in ``limit`` bytes."""

    start: int
    end: int | None
    limit: int
    data: bytearray = field(default_factory=bytearray)
    last: int = 0
    """The last line in ``data`` (``start - 1`` while it is empty)."""
    total: int = 0
    full: bool = False
    """A line of the range did not fit."""
    cut: bool = False
    """The first line alone was over the limit: ``data`` holds its beginning."""

    def wants(self, number: int) -> bool:
        return number >= self.start and (self.end is None or number <= self.end)

    def take(self, number: int, line: bytes) -> None:
        if self.full:
            return
        if len(self.data) + len(line) <= self.limit:
            self.data += line
            self.last = number
            return
        self.full = True
        if not self.data:
            self.data += _whole_characters(line[: self.limit])
            self.last, self.cut = number, True


def _whole_characters(data: bytes) -> bytes:
    """``data`` without a UTF-8 character cut at its end."""
    return data.decode("utf-8", errors="ignore").encode("utf-8") if data else data


def _scan(path: Path, start: int, end: int | None, limit: int) -> tuple[_Window, bytes]:
    window = _Window(start=start, end=end, limit=limit, last=start - 1)
    with path.open("rb") as file:
        head = file.read(_BINARY_PROBE)
        file.seek(0)
        for number, line in enumerate(file, start=1):
            window.total = number
            if window.wants(number):
                window.take(number, line)
    return window, head


class ReadFileTool(_RootedTool):
    name = "read_file"
    description = (
        "Read a UTF-8 text file under the root directory, whole or by lines (`start_line`, "
        f"`end_line`, 1-based, inclusive). Returns at most {MAX_READ_BYTES} bytes of lines "
        "per call: when `truncated` is true, call again with `start_line` set to "
        "`next_start_line`. Binary files are refused."
    )

    input_schema: JSONObject = {
        "type": "object",
        "properties": {
            "path": _path('File to read, relative to the root directory, e.g. "notes/todo.md".'),
            "start_line": {
                "type": "integer",
                "minimum": 1,
                "description": "First line to read (1-based, default 1).",
            },
            "end_line": {
                "type": "integer",
                "minimum": 1,
                "description": "Last line to read, inclusive (default: the last line).",
            },
        },
        "required": ["path"],
        "additionalProperties": False,
    }

    async def process(self, context: ProcessingContext, params: Mapping[str, JSON]) -> JSON:
        target = locate(self._root(context), cast(str, params["path"]), self.name)
        start = cast(int, params.get("start_line", 1))
        end = cast("int | None", params.get("end_line"))
        if end is not None and end < start:
            raise tool_error(
                self.name, f"`end_line` {end} is before `start_line` {start}.", "end_line"
            )
        return await asyncio.to_thread(self._read, target, start, end)

    def _read(self, target: Located, start: int, end: int | None) -> JSONObject:
        size = self._file_size(target)
        window, head = _scan(target.real, start, end, MAX_READ_BYTES)
        if start > max(window.total, 1):
            raise tool_error(
                self.name,
                f"`start_line` {start} is past the end: {target.shown!r} has {window.total} lines.",
                "start_line",
            )
        text = _text(bytes(window.data), head)
        if text is None:
            raise tool_error(
                self.name, f"{target.shown!r} is a binary file; read_file reads UTF-8 text."
            )
        result: JSONObject = {
            "success": True,
            "path": target.shown,
            "content": text,
            "bytes": size,
            "truncated": window.full,
            "line_info": {
                "start_line": start,
                "end_line": window.last,
                "total_lines": window.total,
            },
        }
        if window.full:
            result["next_start_line"] = window.last + 1
        if window.cut:
            result["line_cut"] = window.last
        return result

    def _file_size(self, target: Located) -> int:
        info = regular_file(target, self.name, "list_directory")
        if info.st_size > MAX_FILE_BYTES:
            raise tool_error(
                self.name,
                f"{target.shown!r} is {info.st_size} bytes; read_file reads files of at most "
                f"{MAX_FILE_BYTES} bytes.",
            )
        return info.st_size

    def user_message(self, params: Mapping[str, JSON]) -> str:
        return f"Reading {params.get('path', '(no path)')}"


def _text(data: bytes, head: bytes) -> str | None:
    """``data`` as text, or None when the file looks binary (a NUL, or not UTF-8)."""
    if b"\x00" in head or b"\x00" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


# -- write_file -----------------------------------------------------------------------


class WriteFileTool(_RootedTool):
    name = "write_file"
    description = (
        "Write a UTF-8 text file under the root directory, creating parent directories as "
        "needed. Replaces the file unless `append` is true. A file may hold at most "
        f"{MAX_WRITE_BYTES} bytes."
    )

    input_schema: JSONObject = {
        "type": "object",
        "properties": {
            "path": _path('File to write, relative to the root directory, e.g. "report.md".'),
            "content": {"type": "string", "description": "The text to write."},
            "append": {
                "type": "boolean",
                "description": "Add to the end of the file instead of replacing it "
                "(default false).",
            },
        },
        "required": ["path", "content"],
        "additionalProperties": False,
    }

    async def process(self, context: ProcessingContext, params: Mapping[str, JSON]) -> JSON:
        root = self._root(context)
        target = locate(root, cast(str, params["path"]), self.name)
        append = params.get("append") is True
        content = cast(str, params["content"]).encode("utf-8")
        written = await asyncio.to_thread(
            write_confined,
            root,
            target,
            content,
            append=append,
            limit=MAX_WRITE_BYTES,
            tool=self.name,
        )
        return {
            "success": True,
            "path": target.shown,
            "append": append,
            "created": written.created,
            "bytes": written.bytes,
        }

    def user_message(self, params: Mapping[str, JSON]) -> str:
        verb = "Appending to" if params.get("append") is True else "Writing to"
        return f"{verb} file {params.get('path', '(no path)')}"


# -- list_directory -------------------------------------------------------------------


class ListDirectoryTool(_RootedTool):
    name = "list_directory"
    description = (
        "List the files and subdirectories of a directory under the root directory "
        '("." for the root itself); `recursive` lists subdirectories too. Returns at most '
        f"{MAX_LIST_ENTRIES} entries; `truncated` tells when there were more."
    )

    input_schema: JSONObject = {
        "type": "object",
        "properties": {
            "path": _path('Directory to list, relative to the root directory ("." for the root).'),
            "recursive": {
                "type": "boolean",
                "description": "Also list the contents of subdirectories (default false).",
            },
        },
        "required": ["path"],
        "additionalProperties": False,
    }

    async def process(self, context: ProcessingContext, params: Mapping[str, JSON]) -> JSON:
        target = locate(self._root(context), cast(str, params["path"]), self.name)
        recursive = params.get("recursive") is True
        return await asyncio.to_thread(self._list, target, recursive)

    def _list(self, target: Located, recursive: bool) -> JSONObject:
        if not target.real.is_dir():
            exists = target.real.exists()
            problem = "is a file; read it with `read_file`" if exists else "does not exist"
            raise tool_error(self.name, f"`path` {target.shown!r} {problem}.")
        entries: list[JSON] = []
        truncated = False
        for scanned, (relative, entry) in enumerate(walk(target.real, PurePosixPath(), recursive)):
            if scanned >= MAX_LIST_SCANNED or len(entries) >= MAX_LIST_ENTRIES:
                truncated = True
                break
            entries.append(_entry(relative, entry))
        return {"path": target.shown, "entries": entries, "truncated": truncated}

    def user_message(self, params: Mapping[str, JSON]) -> str:
        return f"Listing directory: {params.get('path', '.')}"


def _entry(relative: PurePosixPath, entry: os.DirEntry[str]) -> JSONObject:
    """An entry: its name under the listed directory, its size, whether it is a directory."""
    is_dir = entry.is_dir(follow_symlinks=False)
    described: JSONObject = {"name": relative.as_posix(), "is_directory": is_dir}
    if entry.is_symlink():
        described["is_symlink"] = True
    described["size"] = 0 if is_dir else entry.stat(follow_symlinks=False).st_size
    return described
