"""read_file, write_file, list_directory (spec 003's file-system tools): confined to their
root on real directories, escapes by ``..``, absolute paths and symbolic links refused,
size limits on reads and writes, and errors that say what to change."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from memstack.agents.builtin import (
    BUILTIN_TOOL_NAMES,
    ListDirectoryTool,
    ReadFileTool,
    WriteFileTool,
)
from memstack.agents.builtin.files import (
    MAX_FILE_BYTES,
    MAX_LIST_ENTRIES,
    MAX_READ_BYTES,
    MAX_WRITE_BYTES,
)
from memstack.cli import main
from memstack.context import ProcessingContext
from memstack.errors import ConfigError, ToolInputError
from memstack.tools import Tool

TOOLS = (ReadFileTool, WriteFileTool, ListDirectoryTool)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    directory = tmp_path / "root"
    directory.mkdir()
    return directory


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    directory = tmp_path / "outside"
    directory.mkdir()
    (directory / "secret.txt").write_text("top secret\n")
    return directory


async def call(tool: Tool, params: dict[str, Any], workspace: Path | None = None) -> Any:
    return await tool.process(ProcessingContext(workspace=workspace), params)


def params_for(tool_class: type[Tool], path: str) -> dict[str, Any]:
    if tool_class is WriteFileTool:
        return {"path": path, "content": "pwned"}
    return {"path": path}


# -- write and read -------------------------------------------------------------------


async def test_write_then_read_under_the_root(root: Path):
    written = await call(WriteFileTool(root=root), {"path": "notes/a b.md", "content": "héllo\n"})
    assert written == {
        "success": True,
        "path": "notes/a b.md",
        "append": False,
        "created": True,
        "bytes": 7,
    }
    assert (root / "notes" / "a b.md").read_text() == "héllo\n"
    appended = await call(
        WriteFileTool(root=root), {"path": "./notes//a b.md", "content": "two\n", "append": True}
    )
    assert appended["created"] is False and appended["bytes"] == 11
    read = await call(ReadFileTool(root=root), {"path": "notes/a b.md"})
    assert read == {
        "success": True,
        "path": "notes/a b.md",
        "content": "héllo\ntwo\n",
        "bytes": 11,
        "truncated": False,
        "line_info": {"start_line": 1, "end_line": 2, "total_lines": 2},
    }


async def test_without_a_root_the_tools_use_the_run_workspace(root: Path):
    await call(WriteFileTool(), {"path": "w.txt", "content": "x"}, workspace=root)
    assert (root / "w.txt").read_text() == "x"
    read = await call(ReadFileTool(), {"path": "w.txt"}, workspace=root)
    assert read["content"] == "x"


async def test_a_root_reached_through_a_symbolic_link_works(root: Path, tmp_path: Path):
    (root / "f.txt").write_text("inside\n")
    alias = tmp_path / "alias"
    alias.symlink_to(root, target_is_directory=True)
    read = await call(ReadFileTool(root=alias), {"path": "f.txt"})
    assert read["content"] == "inside\n"


async def test_a_link_that_stays_inside_the_root_is_followed(root: Path):
    (root / "real.txt").write_text("real\n")
    (root / "link.txt").symlink_to(root / "real.txt")
    read = await call(ReadFileTool(root=root), {"path": "link.txt"})
    assert read["content"] == "real\n"


# -- reading by lines -----------------------------------------------------------------


@pytest.fixture
def lines(root: Path) -> Path:
    path = root / "lines.txt"
    path.write_text("".join(f"line {n}\n" for n in range(1, 11)))
    return path


@pytest.mark.parametrize(
    ("start", "end", "content", "info"),
    [
        (3, 4, "line 3\nline 4\n", (3, 4, 10)),
        (9, None, "line 9\nline 10\n", (9, 10, 10)),
        (None, 1, "line 1\n", (1, 1, 10)),
        (10, 99, "line 10\n", (10, 10, 10)),
    ],
)
async def test_read_by_line_range(
    root: Path,
    lines: Path,
    start: int | None,
    end: int | None,
    content: str,
    info: tuple[int, int, int],
):
    params: dict[str, Any] = {"path": "lines.txt"}
    if start is not None:
        params["start_line"] = start
    if end is not None:
        params["end_line"] = end
    read = await call(ReadFileTool(root=root), params)
    assert read["content"] == content
    line_info = read["line_info"]
    assert (line_info["start_line"], line_info["end_line"], line_info["total_lines"]) == info


async def test_a_large_file_is_read_in_pages_that_add_up_to_it(root: Path):
    text = "".join(f"{n:06d} {'ü' * 40}\n" for n in range(6000))  # about 500 kB
    (root / "big.txt").write_text(text)
    pages, start = [], 1
    while True:
        read = await call(ReadFileTool(root=root), {"path": "big.txt", "start_line": start})
        assert len(read["content"].encode()) <= MAX_READ_BYTES
        pages.append(read["content"])
        if not read["truncated"]:
            break
        start = read["next_start_line"]
    assert len(pages) > 1
    assert "".join(pages) == text


async def test_a_line_longer_than_a_page_comes_back_cut_at_a_whole_character(root: Path):
    (root / "one.txt").write_text("é" * MAX_READ_BYTES + "\nnext\n")
    read = await call(ReadFileTool(root=root), {"path": "one.txt"})
    assert read["truncated"] is True and read["line_cut"] == 1 and read["next_start_line"] == 2
    assert read["content"] == "é" * (MAX_READ_BYTES // 2)


async def test_an_empty_file_has_no_lines(root: Path):
    (root / "empty.txt").write_text("")
    read = await call(ReadFileTool(root=root), {"path": "empty.txt"})
    assert read["content"] == "" and read["line_info"]["total_lines"] == 0


@pytest.mark.parametrize(
    ("setup", "params", "field", "message"),
    [
        (None, {"path": "lines.txt", "start_line": 11}, "start_line", "past the end"),
        (None, {"path": "lines.txt", "start_line": 5, "end_line": 4}, "end_line", "is before"),
        (None, {"path": "lines.txt", "start_line": 0}, "start_line", "minimum"),
        (None, {"path": "nope.txt"}, "path", "call `list_directory` to see what exists"),
        ("dir", {"path": "sub"}, "path", "is a directory; list it with `list_directory`"),
        ("binary", {"path": "img.bin"}, "path", "is a binary file"),
        ("latin1", {"path": "old.txt"}, "path", "is a binary file"),
        ("nul", {"path": "nul.dat"}, "path", "is a binary file"),
        ("huge", {"path": "huge.log"}, "path", f"at most {MAX_FILE_BYTES} bytes"),
    ],
)
async def test_read_errors_name_the_field_and_the_fix(
    root: Path, lines: Path, setup: str | None, params: dict[str, Any], field: str, message: str
):
    if setup == "dir":
        (root / "sub").mkdir()
    elif setup == "binary":
        (root / "img.bin").write_bytes(b"\x89PNG\r\n\x00\x00")
    elif setup == "nul":
        (root / "nul.dat").write_bytes(b"valid utf-8\x00but binary\n")
    elif setup == "latin1":
        (root / "old.txt").write_bytes("café".encode("latin-1"))
    elif setup == "huge":
        with (root / "huge.log").open("wb") as file:
            file.truncate(MAX_FILE_BYTES + 1)  # sparse: no disk used
    with pytest.raises(ToolInputError, match=message) as caught:
        await call(ReadFileTool(root=root), params)
    assert caught.value.fields == (field,)


# -- writing --------------------------------------------------------------------------


async def test_writes_are_capped_and_a_refused_write_changes_nothing(root: Path):
    with pytest.raises(ToolInputError, match="the limit is") as caught:
        await call(
            WriteFileTool(root=root), {"path": "a.txt", "content": "x" * (MAX_WRITE_BYTES + 1)}
        )
    assert caught.value.fields == ("content",)
    assert not (root / "a.txt").exists()
    (root / "b.txt").write_text("x" * MAX_WRITE_BYTES)
    with pytest.raises(ToolInputError, match=f"would be {MAX_WRITE_BYTES + 1} bytes"):
        await call(WriteFileTool(root=root), {"path": "b.txt", "content": "y", "append": True})
    assert (root / "b.txt").read_text() == "x" * MAX_WRITE_BYTES
    assert sorted(p.name for p in root.iterdir()) == ["b.txt"]  # no temporary file left


@pytest.mark.parametrize(
    ("path", "message"),
    [
        (".", "must name a file, not the root directory"),
        ("plain.txt/child.txt", "is a file, not a directory"),
        ("folder", "is a directory; name a file in it"),
    ],
)
async def test_write_errors(root: Path, path: str, message: str):
    (root / "plain.txt").write_text("p")
    (root / "folder").mkdir()
    with pytest.raises(ToolInputError, match=message):
        await call(WriteFileTool(root=root), {"path": path, "content": "c"})


# -- listing --------------------------------------------------------------------------


async def test_list_directory_lists_names_sizes_and_kinds(root: Path, outside: Path):
    (root / "b.txt").write_text("12345")
    (root / "a").mkdir()
    (root / "a" / "inner.md").write_text("hi")
    (root / "escape").symlink_to(outside, target_is_directory=True)
    flat = await call(ListDirectoryTool(root=root), {"path": "."})
    link_size = os.lstat(root / "escape").st_size  # the link itself, not what it points at
    assert flat == {
        "path": ".",
        "entries": [
            {"name": "a", "is_directory": True, "size": 0},
            {"name": "b.txt", "is_directory": False, "size": 5},
            {"name": "escape", "is_directory": False, "is_symlink": True, "size": link_size},
        ],
        "truncated": False,
    }
    deep = await call(ListDirectoryTool(root=root), {"path": ".", "recursive": True})
    names = [entry["name"] for entry in deep["entries"]]
    assert names == ["a", "a/inner.md", "b.txt", "escape"]  # the link is not followed
    inner = await call(ListDirectoryTool(root=root), {"path": "a"})
    assert inner["path"] == "a" and [e["name"] for e in inner["entries"]] == ["inner.md"]


async def test_list_directory_stops_at_the_entry_limit(root: Path):
    for n in range(MAX_LIST_ENTRIES + 1):
        (root / f"f{n:04d}").write_text("")
    listed = await call(ListDirectoryTool(root=root), {"path": "."})
    assert len(listed["entries"]) == MAX_LIST_ENTRIES and listed["truncated"] is True


@pytest.mark.parametrize(
    ("path", "message"),
    [("f.txt", "is a file; read it with `read_file`"), ("no", "does not exist")],
)
async def test_list_directory_errors(root: Path, path: str, message: str):
    (root / "f.txt").write_text("x")
    with pytest.raises(ToolInputError, match=message):
        await call(ListDirectoryTool(root=root), {"path": path})


# -- confinement ----------------------------------------------------------------------

ESCAPES = [
    ("../outside/secret.txt", "contains '..'"),
    ("a/../../outside", "contains '..'"),
    ("..\\outside\\secret.txt", "contains '..'"),
    ("/etc/passwd", "is absolute"),
    ("C:\\Windows\\win.ini", "is absolute"),
    ("\\\\server\\share\\x", "is absolute"),
    ("bad\x00name", "NUL byte"),
    ("file_link", "leads outside the root directory through a symbolic link"),
    ("dir_link/secret.txt", "leads outside the root directory through a symbolic link"),
    ("dir_link/new.txt", "leads outside the root directory through a symbolic link"),
]


@pytest.mark.parametrize("tool_class", TOOLS)
@pytest.mark.parametrize(("path", "message"), ESCAPES)
async def test_no_tool_leaves_its_root(
    root: Path, outside: Path, tool_class: type[Tool], path: str, message: str
):
    (root / "file_link").symlink_to(outside / "secret.txt")
    (root / "dir_link").symlink_to(outside, target_is_directory=True)
    tool = tool_class(root=root)  # type: ignore[call-arg]
    with pytest.raises(ToolInputError, match=message) as caught:
        await call(tool, params_for(tool_class, path))
    assert caught.value.fields == ("path",)
    assert 'Use a relative path inside the root directory, e.g. "notes/summary.md".' in str(
        caught.value
    )
    assert (outside / "secret.txt").read_text() == "top secret\n"
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]


async def test_a_symbolic_link_loop_is_refused(root: Path):
    (root / "loop").symlink_to(root / "loop")
    with pytest.raises(ToolInputError, match=r"cannot be resolved|outside the root"):
        await call(ReadFileTool(root=root), {"path": "loop"})


async def test_the_workspace_fallback_is_confined_too(root: Path, outside: Path):
    (root / "link").symlink_to(outside / "secret.txt")
    with pytest.raises(ToolInputError, match="leads outside the workspace"):
        await call(ReadFileTool(), {"path": "link"}, workspace=root)


async def test_no_root_and_no_workspace_is_a_wiring_error(tmp_path: Path):
    with pytest.raises(ConfigError, match=r"ReadFileTool\(root=Path\(\.\.\.\)\)"):
        await call(ReadFileTool(), {"path": "x"})
    with pytest.raises(ConfigError, match=r"root directory .* is not an existing directory"):
        await call(ListDirectoryTool(root=tmp_path / "missing"), {"path": "."})


# -- given to an agent by name --------------------------------------------------------


def test_the_file_tools_are_built_in_and_the_cli_offers_them(tmp_path: Path):
    assert {"read_file", "write_file", "list_directory"} <= set(BUILTIN_TOOL_NAMES)
    result = CliRunner().invoke(
        main,
        [
            "agent",
            "run",
            "Say hi",
            "--model",
            "scripted:echo",
            "--tools",
            "files,math,read_file",
            "--workspace",
            str(tmp_path),
        ],
        env={},
    )
    assert result.exit_code == 0, result.output
    assert "echo: Say hi" in result.stdout


def test_user_messages():
    assert ReadFileTool().user_message({"path": "a.md"}) == "Reading a.md"
    assert WriteFileTool().user_message({"path": "a.md", "content": ""}) == "Writing to file a.md"
    assert ListDirectoryTool().user_message({"path": "."}) == "Listing directory: ."
