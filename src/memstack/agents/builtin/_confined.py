"""Files confined to one directory: the path checks and the writes the workspace tools and
the file tools share, so the rules that keep a model inside its directory exist once.

A path the model gives is refused (``ToolInputError``, so the model can correct it) when
it is absolute, names a drive or UNC share, contains ``..`` or a NUL byte, or resolves,
through a symbolic link, to a place outside the resolved root. Writes are atomic: the
content goes to a temporary file next to the target, which then replaces the target
(``os.replace``), so a failed write never leaves a half-written file.
"""

from __future__ import annotations

import os
import secrets
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import TYPE_CHECKING, Final

from memstack.agents.builtin import _errors
from memstack.errors import ConfigError, ToolInputError

if TYPE_CHECKING:
    from memstack.context import ProcessingContext

__all__ = [
    "MAX_PATH_CHARS",
    "Located",
    "Root",
    "Written",
    "directory_root",
    "locate",
    "regular_file",
    "tool_error",
    "walk",
    "workspace_root",
    "write_confined",
]

MAX_PATH_CHARS: Final = 1024


@dataclass(frozen=True, kw_only=True)
class Root:
    """The resolved directory a tool may not leave, and what the model is told it is."""

    path: Path
    label: str
    """``workspace`` or ``root directory``: the word the messages use."""

    @property
    def hint(self) -> str:
        return f'Use a relative path inside the {self.label}, e.g. "notes/summary.md".'


@dataclass(frozen=True, kw_only=True)
class Located:
    """A path the model gave: as shown back to it, and where it really is."""

    shown: str
    real: Path


def tool_error(tool: str, message: str, field: str = "path") -> ToolInputError:
    """A refusal of the path argument (or ``field``) of ``tool``."""
    return _errors.tool_error(tool, field, message)


def directory_root(directory: Path, tool: str, label: str) -> Root:
    """``directory`` resolved, or a ``ConfigError`` for the developer when it is not one."""
    path = directory.resolve()
    if not path.is_dir():
        raise ConfigError(
            f"`{tool}`: the {label} {str(path)!r} is not an existing directory; create it first."
        )
    return Root(path=path, label=label)


def workspace_root(context: ProcessingContext, tool: str, *, instead: str = "") -> Root:
    """The run's workspace as the root; ``instead`` names another way to give one."""
    if context.workspace is None:
        raise ConfigError(
            f"`{tool}` needs a workspace, and this run has none: "
            f"pass ProcessingContext(workspace=Path(...)){instead}."
        )
    return directory_root(context.workspace, tool, "workspace")


def _relative(root: Root, path: str, tool: str) -> PurePosixPath:
    """``path`` as a clean relative path, or a ``ToolInputError`` saying why not."""
    if "\x00" in path:
        raise tool_error(tool, f"`path` contains a NUL byte. {root.hint}")
    if len(path) > MAX_PATH_CHARS:
        raise tool_error(tool, f"`path` is longer than {MAX_PATH_CHARS} characters. {root.hint}")
    text = path.replace("\\", "/")
    if text.startswith("/") or PureWindowsPath(path).drive:
        raise tool_error(tool, f"`path` {path!r} is absolute; {root.hint}")
    parts = [part for part in text.split("/") if part not in ("", ".")]
    if ".." in parts:
        raise tool_error(tool, f"`path` {path!r} contains '..'; {root.hint}")
    return PurePosixPath(*parts)


def locate(root: Root, path: str, tool: str) -> Located:
    """Where ``path`` leads, every symbolic link resolved, checked to be inside ``root``."""
    relative = _relative(root, path, tool)
    try:
        real = (root.path / relative).resolve()
    except (OSError, RuntimeError) as exc:  # RuntimeError: a symlink loop
        why = exc.strerror if isinstance(exc, OSError) else None
        raise tool_error(
            tool, f"`path` {path!r} cannot be resolved ({why or 'a symbolic link loop'})."
        ) from None
    if not real.is_relative_to(root.path):
        raise tool_error(
            tool,
            f"`path` {path!r} leads outside the {root.label} through a symbolic link. {root.hint}",
        )
    return Located(shown=relative.as_posix(), real=real)


def regular_file(target: Located, tool: str, lister: str) -> os.stat_result:
    """``target``'s status when it is a regular file, else a ``ToolInputError`` saying
    what it is; ``lister`` names the tool that shows what exists."""
    try:
        info = target.real.stat()
    except (FileNotFoundError, NotADirectoryError):
        raise tool_error(
            tool, f"no file at `path` {target.shown!r}; call `{lister}` to see what exists."
        ) from None
    if stat.S_ISDIR(info.st_mode):
        raise tool_error(tool, f"`path` {target.shown!r} is a directory; list it with `{lister}`.")
    if not stat.S_ISREG(info.st_mode):
        raise tool_error(tool, f"`path` {target.shown!r} is not a regular file.")
    return info


# -- writing ------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Written:
    bytes: int
    """The file's size after the write."""
    created: bool


def write_confined(
    root: Root, target: Located, content: bytes, *, append: bool, limit: int, tool: str
) -> Written:
    """Write (or append) ``content`` to ``target`` atomically, creating its parents; the
    file may end up at most ``limit`` bytes."""
    if target.real == root.path:
        raise tool_error(tool, f"`path` must name a file, not the {root.label}. {root.hint}")
    existing = _existing(target, tool)
    kept = existing.st_size if append and existing is not None else 0
    if kept + len(content) > limit:
        raise tool_error(
            tool,
            f"the file would be {kept + len(content)} bytes; the limit is "
            f"{limit}. Write less, or split the content across several files.",
            field="content",
        )
    if kept:
        content = target.real.read_bytes() + content
    try:
        target.real.parent.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise _not_a_directory(target, tool) from None
    mode = stat.S_IMODE(existing.st_mode) if existing is not None else None
    _replace_atomically(target.real, content, mode)
    return Written(bytes=len(content), created=existing is None)


def _existing(target: Located, tool: str) -> os.stat_result | None:
    try:
        info = target.real.stat()
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        raise _not_a_directory(target, tool) from None
    if stat.S_ISDIR(info.st_mode):
        raise tool_error(tool, f"`path` {target.shown!r} is a directory; name a file in it.")
    if not stat.S_ISREG(info.st_mode):
        raise tool_error(tool, f"`path` {target.shown!r} is not a regular file.")
    return info


def _not_a_directory(target: Located, tool: str) -> ToolInputError:
    return tool_error(
        tool,
        f"a parent of `path` {target.shown!r} is a file, not a directory; choose another path.",
    )


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


# -- listing ------------------------------------------------------------------------


def walk(
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
            yield from walk(Path(entry.path), relative, recursive)
