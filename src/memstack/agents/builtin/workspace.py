"""workspace_read, workspace_write, workspace_list: file tools confined to the run's workspace.

Every path the model gives is relative to ``context.workspace`` and checked, and every
write made atomic, by ``_confined`` (the rules the file tools share). Text is UTF-8;
binary files are reported, not dumped.

A context without a workspace (or whose workspace is not a directory) is a wiring
mistake the model cannot fix: the tools raise ``ConfigError``, which the step
executor hands back to the model as the tool's failure, and which says what the
developer must pass.
"""

from __future__ import annotations

import asyncio
import codecs
import fnmatch
import os
from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Final, cast

from memstack._json import JSON, JSONObject
from memstack.agents.builtin._confined import (
    MAX_PATH_CHARS,
    Located,
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
    "MAX_LIST_ENTRIES",
    "MAX_READ_BYTES",
    "MAX_WRITE_BYTES",
    "WorkspaceListTool",
    "WorkspaceReadTool",
    "WorkspaceWriteTool",
]

MAX_READ_BYTES: Final = 1_000_000
"""Most bytes one ``workspace_read`` call returns; longer files are read in pages."""
MAX_WRITE_BYTES: Final = 1_000_000
"""Largest file ``workspace_write`` leaves behind (after an append, too)."""
MAX_LIST_ENTRIES: Final = 500
"""Most entries one ``workspace_list`` call returns."""
MAX_LIST_SCANNED: Final = 20_000
"""Most directory entries one ``workspace_list`` call looks at, matched or not."""


def _int(params: Mapping[str, JSON], key: str, default: int) -> int:
    value = params.get(key)
    return value if isinstance(value, int) else default


# -- workspace_read -----------------------------------------------------------------


class WorkspaceReadTool(Tool):
    name = "workspace_read"
    description = (
        "Read a UTF-8 text file from the workspace. `path` is relative to the workspace. "
        f"Returns at most {MAX_READ_BYTES} bytes per call; when `truncated` is true, call "
        "again with `offset` set to `next_offset` to read on. A binary file comes back with "
        "`binary: true` and no content."
    )
    input_schema: JSONObject = {
        "type": "object",
        "properties": {
            "path": {
                "type": "string",
                "minLength": 1,
                "maxLength": MAX_PATH_CHARS,
                "description": 'File path relative to the workspace, e.g. "notes/summary.md".',
            },
            "offset": {
                "type": "integer",
                "minimum": 0,
                "description": "Byte offset to start reading at (default 0).",
            },
            "max_bytes": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_READ_BYTES,
                "description": f"Most bytes to read (default and limit {MAX_READ_BYTES}).",
            },
        },
        "required": ["path"],
        "additionalProperties": False,
    }

    async def process(self, context: ProcessingContext, params: Mapping[str, JSON]) -> JSON:
        root = workspace_root(context, self.name)
        target = locate(root, cast(str, params["path"]), self.name)
        offset = _int(params, "offset", 0)
        limit = _int(params, "max_bytes", MAX_READ_BYTES)
        return await asyncio.to_thread(self._read, target, offset, limit)

    def _read(self, target: Located, offset: int, limit: int) -> JSONObject:
        size = regular_file(target, self.name, "workspace_list").st_size
        with target.real.open("rb") as file:
            file.seek(offset)
            data = file.read(limit)
        start = offset + _continuation_bytes(data) if offset else offset
        data = data[start - offset :]
        truncated = start + len(data) < size
        text, used = _decode(data, final=not truncated)
        if text is None:
            return {"path": target.shown, "bytes": size, "binary": True, "content": None}
        result: JSONObject = {
            "path": target.shown,
            "content": text,
            "bytes": size,
            "offset": start,
            "truncated": truncated,
        }
        if truncated:
            result["next_offset"] = start + used
        return result

    def user_message(self, params: Mapping[str, JSON]) -> str:
        return f"Reading {params.get('path', '(no path)')}"


def _continuation_bytes(data: bytes) -> int:
    """How many UTF-8 continuation bytes ``data`` starts with (an offset mid-character)."""
    count = 0
    while count < min(len(data), 3) and data[count] & 0xC0 == 0x80:
        count += 1
    return count


def _decode(data: bytes, *, final: bool) -> tuple[str | None, int]:
    """The text of ``data`` and the bytes it used, or ``(None, 0)`` for binary data.

    When more follows (``final`` false), a character cut at the end is left for the
    next page instead of being mangled.
    """
    if b"\x00" in data:
        return None, 0
    decoder = codecs.getincrementaldecoder("utf-8")()
    try:
        text = decoder.decode(data, final=final)
    except UnicodeDecodeError:
        return None, 0
    pending, _ = decoder.getstate()
    return text, len(data) - len(pending)


# -- workspace_write ----------------------------------------------------------------


class WorkspaceWriteTool(Tool):
    name = "workspace_write"
    description = (
        "Write a UTF-8 text file in the workspace, creating parent directories as needed. "
        "Replaces the file unless `append` is true. "
        f"A file may hold at most {MAX_WRITE_BYTES} bytes."
    )
    input_schema: JSONObject = {
        "type": "object",
        "properties": {
            "path": {
                "type": "string",
                "minLength": 1,
                "maxLength": MAX_PATH_CHARS,
                "description": 'File path relative to the workspace, e.g. "report.md".',
            },
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
        root = workspace_root(context, self.name)
        target = locate(root, cast(str, params["path"]), self.name)
        content = cast(str, params["content"]).encode("utf-8")
        append = params.get("append") is True
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
            "ok": True,
            "path": target.shown,
            "bytes": written.bytes,
            "created": written.created,
        }

    def user_message(self, params: Mapping[str, JSON]) -> str:
        verb = "Appending to" if params.get("append") is True else "Writing"
        return f"{verb} {params.get('path', '(no path)')}"


# -- workspace_list -----------------------------------------------------------------


class WorkspaceListTool(Tool):
    name = "workspace_list"
    description = (
        "List files and directories in the workspace. `path` is a directory relative to the "
        "workspace (default: the workspace itself). `pattern` keeps entries whose name matches "
        'a glob such as "*.md"; `recursive` also lists subdirectories. Returns at most '
        f"{MAX_LIST_ENTRIES} entries; `truncated` tells when there were more."
    )
    input_schema: JSONObject = {
        "type": "object",
        "properties": {
            "path": {
                "type": "string",
                "maxLength": MAX_PATH_CHARS,
                "description": 'Directory relative to the workspace (default ".").',
            },
            "pattern": {
                "type": "string",
                "minLength": 1,
                "maxLength": 200,
                "description": 'Glob matched against entry names, e.g. "*.csv".',
            },
            "recursive": {
                "type": "boolean",
                "description": "Also list the contents of subdirectories (default false).",
            },
        },
        "additionalProperties": False,
    }

    async def process(self, context: ProcessingContext, params: Mapping[str, JSON]) -> JSON:
        root = workspace_root(context, self.name)
        path = params.get("path")
        target = locate(root, path if isinstance(path, str) else ".", self.name)
        pattern = params.get("pattern")
        recursive = params.get("recursive") is True
        return await asyncio.to_thread(
            self._list, target, pattern if isinstance(pattern, str) else None, recursive
        )

    def _list(self, target: Located, pattern: str | None, recursive: bool) -> JSONObject:
        self._check_directory(target)
        shown = PurePosixPath(target.shown)
        entries: list[JSON] = []
        truncated = False
        for scanned, (relative, entry) in enumerate(walk(target.real, shown, recursive)):
            if scanned >= MAX_LIST_SCANNED or len(entries) >= MAX_LIST_ENTRIES:
                truncated = True
                break
            if pattern is None or fnmatch.fnmatchcase(entry.name, pattern):
                entries.append(_describe(relative, entry))
        return {"path": target.shown, "entries": entries, "truncated": truncated}

    def _check_directory(self, target: Located) -> None:
        if not target.real.exists():
            raise tool_error(
                self.name,
                f"no directory at `path` {target.shown!r}; list the workspace root to see "
                "what exists.",
            )
        if not target.real.is_dir():
            raise tool_error(
                self.name, f"`path` {target.shown!r} is a file; read it with `workspace_read`."
            )

    def user_message(self, params: Mapping[str, JSON]) -> str:
        return f"Listing {params.get('path') or 'the workspace'}"


def _describe(relative: PurePosixPath, entry: os.DirEntry[str]) -> JSONObject:
    if entry.is_symlink():
        return {"path": relative.as_posix(), "type": "symlink"}
    if entry.is_dir(follow_symlinks=False):
        return {"path": relative.as_posix(), "type": "dir"}
    if entry.is_file(follow_symlinks=False):
        size = entry.stat(follow_symlinks=False).st_size
        return {"path": relative.as_posix(), "type": "file", "bytes": size}
    return {"path": relative.as_posix(), "type": "other"}
