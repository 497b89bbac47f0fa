"""workspace_read, workspace_write, workspace_list: file tools confined to the run's workspace.

Every path the model gives is relative to ``context.workspace``. A path is refused
(``ToolInputError``, so the model can correct it) when it is absolute, names a drive
or UNC share, contains ``..`` or a NUL byte, or resolves, through a symbolic link,
to a place outside the resolved workspace root. Text is UTF-8; binary files are
reported, not dumped. Writes are atomic: the content goes to a temporary file next
to the target, which then replaces the target (``os.replace``), so a failed write
never leaves a half-written file.

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
import secrets
import stat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import TYPE_CHECKING, Final, cast

from memstack._json import JSON, JSONObject
from memstack.errors import ConfigError, ToolInputError
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
MAX_PATH_CHARS: Final = 1024

_PATH_HINT: Final = 'Use a relative path inside the workspace, e.g. "notes/summary.md".'


@dataclass(frozen=True, kw_only=True)
class _Located:
    """A path the model gave: as shown back to it, and where it really is."""

    shown: str
    real: Path


def _error(tool: str, message: str, field: str = "path") -> ToolInputError:
    return ToolInputError(f"Invalid arguments for `{tool}`: {message}", tool=tool, fields=(field,))


def _root(context: ProcessingContext, tool: str) -> Path:
    if context.workspace is None:
        raise ConfigError(
            f"`{tool}` needs a workspace, and this run has none: "
            "pass ProcessingContext(workspace=Path(...))."
        )
    root = context.workspace.resolve()
    if not root.is_dir():
        raise ConfigError(
            f"`{tool}`: the workspace {str(root)!r} is not an existing directory; create it first."
        )
    return root


def _relative(path: str, tool: str) -> PurePosixPath:
    """``path`` as a clean relative path, or a ``ToolInputError`` saying why not."""
    if "\x00" in path:
        raise _error(tool, f"`path` contains a NUL byte. {_PATH_HINT}")
    if len(path) > MAX_PATH_CHARS:
        raise _error(tool, f"`path` is longer than {MAX_PATH_CHARS} characters. {_PATH_HINT}")
    text = path.replace("\\", "/")
    if text.startswith("/") or PureWindowsPath(path).drive:
        raise _error(tool, f"`path` {path!r} is absolute; {_PATH_HINT}")
    parts = [part for part in text.split("/") if part not in ("", ".")]
    if ".." in parts:
        raise _error(tool, f"`path` {path!r} contains '..'; {_PATH_HINT}")
    return PurePosixPath(*parts)


def _locate(root: Path, path: str, tool: str) -> _Located:
    relative = _relative(path, tool)
    try:
        real = (root / relative).resolve()
    except (OSError, RuntimeError) as exc:  # RuntimeError: a symlink loop
        why = exc.strerror if isinstance(exc, OSError) else None
        raise _error(
            tool, f"`path` {path!r} cannot be resolved ({why or 'a symbolic link loop'})."
        ) from None
    if not real.is_relative_to(root):
        raise _error(
            tool,
            f"`path` {path!r} leads outside the workspace through a symbolic link. {_PATH_HINT}",
        )
    return _Located(shown=relative.as_posix(), real=real)


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
        root = _root(context, self.name)
        target = _locate(root, cast(str, params["path"]), self.name)
        offset = _int(params, "offset", 0)
        limit = _int(params, "max_bytes", MAX_READ_BYTES)
        return await asyncio.to_thread(self._read, target, offset, limit)

    def _read(self, target: _Located, offset: int, limit: int) -> JSONObject:
        size = self._file_size(target)
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

    def _file_size(self, target: _Located) -> int:
        try:
            info = target.real.stat()
        except FileNotFoundError:
            raise _error(
                self.name,
                f"no file at `path` {target.shown!r}; call `workspace_list` to see what exists.",
            ) from None
        if stat.S_ISDIR(info.st_mode):
            raise _error(
                self.name,
                f"`path` {target.shown!r} is a directory; list it with `workspace_list`.",
            )
        if not stat.S_ISREG(info.st_mode):
            raise _error(self.name, f"`path` {target.shown!r} is not a regular file.")
        return info.st_size

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
        root = _root(context, self.name)
        target = _locate(root, cast(str, params["path"]), self.name)
        if target.real == root:
            raise _error(self.name, f"`path` must name a file, not the workspace. {_PATH_HINT}")
        content = cast(str, params["content"]).encode("utf-8")
        append = params.get("append") is True
        return await asyncio.to_thread(self._write, target, content, append)

    def _write(self, target: _Located, content: bytes, append: bool) -> JSONObject:
        existing = self._existing(target)
        kept = existing.st_size if append and existing is not None else 0
        if kept + len(content) > MAX_WRITE_BYTES:
            raise _error(
                self.name,
                f"the file would be {kept + len(content)} bytes; the limit is "
                f"{MAX_WRITE_BYTES}. Write less, or split the content across several files.",
                field="content",
            )
        if kept:
            content = target.real.read_bytes() + content
        self._make_parents(target)
        mode = stat.S_IMODE(existing.st_mode) if existing is not None else None
        _replace_atomically(target.real, content, mode)
        return {
            "ok": True,
            "path": target.shown,
            "bytes": len(content),
            "created": existing is None,
        }

    def _existing(self, target: _Located) -> os.stat_result | None:
        try:
            info = target.real.stat()
        except FileNotFoundError:
            return None
        except NotADirectoryError:
            raise self._not_a_directory(target) from None
        if stat.S_ISDIR(info.st_mode):
            raise _error(self.name, f"`path` {target.shown!r} is a directory; name a file in it.")
        if not stat.S_ISREG(info.st_mode):
            raise _error(self.name, f"`path` {target.shown!r} is not a regular file.")
        return info

    def _make_parents(self, target: _Located) -> None:
        try:
            target.real.parent.mkdir(parents=True, exist_ok=True)
        except (FileExistsError, NotADirectoryError):
            raise self._not_a_directory(target) from None

    def _not_a_directory(self, target: _Located) -> ToolInputError:
        return _error(
            self.name,
            f"a parent of `path` {target.shown!r} is a file, not a directory; choose another path.",
        )

    def user_message(self, params: Mapping[str, JSON]) -> str:
        verb = "Appending to" if params.get("append") is True else "Writing"
        return f"{verb} {params.get('path', '(no path)')}"


def _replace_atomically(path: Path, content: bytes, mode: int | None) -> None:
    """Write ``content`` to a new file beside ``path``, then move it over ``path``.

    A new file gets the usual permissions (0o666 less the umask); a replaced file
    keeps its own.
    """
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(content)
            file.flush()
            os.fsync(file.fileno())
        if mode is not None:
            os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


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
        root = _root(context, self.name)
        path = params.get("path")
        target = _locate(root, path if isinstance(path, str) else ".", self.name)
        pattern = params.get("pattern")
        recursive = params.get("recursive") is True
        return await asyncio.to_thread(
            self._list, target, pattern if isinstance(pattern, str) else None, recursive
        )

    def _list(self, target: _Located, pattern: str | None, recursive: bool) -> JSONObject:
        self._check_directory(target)
        shown = PurePosixPath(target.shown)
        entries: list[JSON] = []
        truncated = False
        for scanned, (relative, entry) in enumerate(_walk(target.real, shown, recursive)):
            if scanned >= MAX_LIST_SCANNED or len(entries) >= MAX_LIST_ENTRIES:
                truncated = True
                break
            if pattern is None or fnmatch.fnmatchcase(entry.name, pattern):
                entries.append(_describe(relative, entry))
        return {"path": target.shown, "entries": entries, "truncated": truncated}

    def _check_directory(self, target: _Located) -> None:
        if not target.real.exists():
            raise _error(
                self.name,
                f"no directory at `path` {target.shown!r}; list the workspace root to see "
                "what exists.",
            )
        if not target.real.is_dir():
            raise _error(
                self.name, f"`path` {target.shown!r} is a file; read it with `workspace_read`."
            )

    def user_message(self, params: Mapping[str, JSON]) -> str:
        return f"Listing {params.get('path') or 'the workspace'}"


def _walk(
    directory: Path, shown: PurePosixPath, recursive: bool
) -> Iterator[tuple[PurePosixPath, os.DirEntry[str]]]:
    """Entries of ``directory`` sorted by name, depth first; symbolic links are not followed.

    A subdirectory that cannot be read is listed but not entered.
    """
    with os.scandir(directory) as scan:
        entries = sorted(scan, key=lambda entry: entry.name)
    for entry in entries:
        relative = shown / entry.name
        yield relative, entry
        if (
            recursive
            and entry.is_dir(follow_symlinks=False)
            and os.access(entry.path, os.R_OK | os.X_OK)
        ):
            yield from _walk(Path(entry.path), relative, recursive)


def _describe(relative: PurePosixPath, entry: os.DirEntry[str]) -> JSONObject:
    if entry.is_symlink():
        return {"path": relative.as_posix(), "type": "symlink"}
    if entry.is_dir(follow_symlinks=False):
        return {"path": relative.as_posix(), "type": "dir"}
    if entry.is_file(follow_symlinks=False):
        size = entry.stat(follow_symlinks=False).st_size
        return {"path": relative.as_posix(), "type": "file", "bytes": size}
    return {"path": relative.as_posix(), "type": "other"}
