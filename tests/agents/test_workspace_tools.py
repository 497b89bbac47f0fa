import os
from pathlib import Path
from typing import Any

import pytest

from memstack.agents.builtin import (
    BUILTIN_TOOL_NAMES,
    WorkspaceListTool,
    WorkspaceReadTool,
    WorkspaceWriteTool,
    builtin_tools,
)
from memstack.agents.builtin.workspace import MAX_LIST_ENTRIES, MAX_READ_BYTES, MAX_WRITE_BYTES
from memstack.context import ProcessingContext
from memstack.errors import ConfigError, ToolInputError
from memstack.tools import Tool


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    directory = tmp_path / "outside"
    directory.mkdir()
    (directory / "secret.txt").write_text("top secret")
    return directory


async def call(tool: Tool, workspace: Path | None, params: dict[str, Any]) -> Any:
    return await tool.process(ProcessingContext(workspace=workspace), params)


def test_builtin_tools_are_fresh_instances_of_every_context_only_tool():
    tools = builtin_tools()
    assert tuple(t.name for t in tools) == BUILTIN_TOOL_NAMES
    assert BUILTIN_TOOL_NAMES[:4] == (
        "workspace_read",
        "workspace_write",
        "workspace_list",
        "calculator",
    )
    assert builtin_tools()[0] is not tools[0]
    for tool in tools:
        assert tool.to_provider_tool().name == tool.name


# -- write and read -------------------------------------------------------------------


async def test_write_creates_parents_and_read_returns_the_text(workspace: Path):
    written = await call(
        WorkspaceWriteTool(), workspace, {"path": "notes/day 1/summary.md", "content": "héllo"}
    )
    assert written == {"ok": True, "path": "notes/day 1/summary.md", "bytes": 6, "created": True}
    assert (workspace / "notes" / "day 1" / "summary.md").read_text("utf-8") == "héllo"
    read = await call(WorkspaceReadTool(), workspace, {"path": "./notes//day 1/summary.md"})
    assert read == {
        "path": "notes/day 1/summary.md",
        "content": "héllo",
        "bytes": 6,
        "offset": 0,
        "truncated": False,
    }


async def test_write_replaces_or_appends(workspace: Path):
    (workspace / "log.txt").write_text("one\n")
    appended = await call(
        WorkspaceWriteTool(), workspace, {"path": "log.txt", "content": "two\n", "append": True}
    )
    assert appended == {"ok": True, "path": "log.txt", "bytes": 8, "created": False}
    assert (workspace / "log.txt").read_text() == "one\ntwo\n"
    await call(WorkspaceWriteTool(), workspace, {"path": "log.txt", "content": "new"})
    assert (workspace / "log.txt").read_text() == "new"


async def test_append_to_a_missing_file_creates_it(workspace: Path):
    result = await call(
        WorkspaceWriteTool(), workspace, {"path": "a.txt", "content": "x", "append": True}
    )
    assert result["created"] is True
    assert (workspace / "a.txt").read_text() == "x"


async def test_write_keeps_the_mode_of_a_replaced_file(workspace: Path):
    target = workspace / "private.txt"
    target.write_text("old")
    target.chmod(0o600)
    await call(WorkspaceWriteTool(), workspace, {"path": "private.txt", "content": "new"})
    assert target.stat().st_mode & 0o777 == 0o600


async def test_a_failed_write_leaves_the_old_file_whole(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
):
    target = workspace / "report.md"
    target.write_text("the old report")

    def fail(*args: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OSError, match="No space left"):
        await call(WorkspaceWriteTool(), workspace, {"path": "report.md", "content": "new" * 1000})
    assert target.read_text() == "the old report"
    assert sorted(p.name for p in workspace.iterdir()) == ["report.md"]  # no temp file left


@pytest.mark.parametrize(
    ("existing", "content", "append"),
    [
        (None, "x" * (MAX_WRITE_BYTES + 1), False),
        (None, "é" * (MAX_WRITE_BYTES // 2 + 1), False),  # the limit counts UTF-8 bytes
        ("x" * MAX_WRITE_BYTES, "y", True),
    ],
    ids=["too-long", "too-many-bytes", "append-past-limit"],
)
async def test_write_refuses_files_over_the_limit(
    workspace: Path, existing: str | None, content: str, append: bool
):
    target = workspace / "big.txt"
    if existing is not None:
        target.write_text(existing)
    with pytest.raises(ToolInputError, match="the limit is") as caught:
        await call(
            WorkspaceWriteTool(),
            workspace,
            {"path": "big.txt", "content": content, "append": append},
        )
    assert caught.value.fields == ("content",)
    assert (target.read_text() if existing is not None else None) == existing
    assert target.exists() == (existing is not None)


@pytest.mark.parametrize(
    ("setup", "path", "message"),
    [
        (lambda ws: None, ".", "must name a file"),
        (lambda ws: (ws / "docs").mkdir(), "docs", "is a directory"),
        (lambda ws: (ws / "file").write_text("x"), "file/inner.txt", "is a file, not a directory"),
        (lambda ws: (ws / "file").write_text("x"), "file/a/b.txt", "is a file, not a directory"),
    ],
)
async def test_write_refuses_paths_that_are_not_files(
    workspace: Path, setup: Any, path: str, message: str
):
    setup(workspace)
    with pytest.raises(ToolInputError, match=message) as caught:
        await call(WorkspaceWriteTool(), workspace, {"path": path, "content": "x"})
    assert caught.value.fields == ("path",)


async def test_read_pages_through_a_large_file(workspace: Path):
    (workspace / "big.txt").write_bytes(b"a" * (MAX_READ_BYTES + 10))
    first = await call(WorkspaceReadTool(), workspace, {"path": "big.txt"})
    assert len(first["content"]) == MAX_READ_BYTES
    assert first["truncated"] is True
    assert first["next_offset"] == MAX_READ_BYTES
    rest = await call(
        WorkspaceReadTool(), workspace, {"path": "big.txt", "offset": first["next_offset"]}
    )
    assert rest == {
        "path": "big.txt",
        "content": "a" * 10,
        "bytes": MAX_READ_BYTES + 10,
        "offset": MAX_READ_BYTES,
        "truncated": False,
    }


@pytest.mark.parametrize(
    ("params", "content", "offset", "next_offset"),
    [
        ({"max_bytes": 5}, "éé", 0, 4),  # a character cut at the end waits for the next page
        ({"offset": 1, "max_bytes": 4}, "é", 2, 4),  # an offset mid-character moves on
        ({"offset": 1}, "éééé", 2, None),
        ({"offset": 4}, "ééé", 4, None),
        ({"offset": 100}, "", 100, None),
    ],
)
async def test_read_never_splits_a_character(
    workspace: Path, params: dict[str, Any], content: str, offset: int, next_offset: int | None
):
    (workspace / "accents.txt").write_text("é" * 5, encoding="utf-8")
    result = await call(WorkspaceReadTool(), workspace, {"path": "accents.txt", **params})
    assert (result["content"], result["offset"], result.get("next_offset")) == (
        content,
        offset,
        next_offset,
    )


@pytest.mark.parametrize("data", [b"\x89PNG\r\n\x1a\n\x00\x00", b"\xff\xfe\xfa text"])
async def test_read_reports_binary_files_without_their_bytes(workspace: Path, data: bytes):
    (workspace / "image.png").write_bytes(data)
    result = await call(WorkspaceReadTool(), workspace, {"path": "image.png"})
    assert result == {"path": "image.png", "bytes": len(data), "binary": True, "content": None}


@pytest.mark.parametrize(
    ("params", "message", "field"),
    [
        ({"path": "missing.txt"}, "no file at `path`", "path"),
        ({"path": "docs"}, "is a directory", "path"),
        ({"path": "a.txt/b.txt"}, "no file at `path` 'a.txt/b.txt'", "path"),
        ({"path": "a.txt", "max_bytes": MAX_READ_BYTES + 1}, "max_bytes", "max_bytes"),
        ({"path": "a.txt", "offset": -1}, "offset", "offset"),
        ({"path": ""}, "path", "path"),
    ],
)
async def test_read_errors_tell_the_model_what_to_change(
    workspace: Path, params: dict[str, Any], message: str, field: str
):
    (workspace / "docs").mkdir()
    (workspace / "a.txt").write_text("x")
    with pytest.raises(ToolInputError, match=message) as caught:
        await call(WorkspaceReadTool(), workspace, params)
    assert caught.value.fields == (field,)


# -- confinement ----------------------------------------------------------------------

ESCAPES = [
    pytest.param("../outside/secret.txt", "contains '..'", id="dotdot"),
    pytest.param("notes/../../outside/secret.txt", "contains '..'", id="inner-dotdot"),
    pytest.param("..\\outside\\secret.txt", "contains '..'", id="backslash-dotdot"),
    pytest.param("/etc/passwd", "is absolute", id="absolute"),
    pytest.param("\\etc\\passwd", "is absolute", id="backslash-absolute"),
    pytest.param("C:\\Windows\\win.ini", "is absolute", id="drive"),
    pytest.param("C:secret.txt", "is absolute", id="drive-relative"),
    pytest.param("\\\\server\\share\\x.txt", "is absolute", id="unc"),
    pytest.param("a\x00b.txt", "NUL byte", id="nul"),
    pytest.param("x" * 2000, "path", id="too-long"),
]


def _params(tool: Tool, path: str) -> dict[str, Any]:
    return (
        {"path": path, "content": "pwned"}
        if isinstance(tool, WorkspaceWriteTool)
        else {"path": path}
    )


TOOLS = [WorkspaceReadTool, WorkspaceWriteTool, WorkspaceListTool]


@pytest.mark.parametrize("tool_class", TOOLS)
@pytest.mark.parametrize(("path", "message"), ESCAPES)
async def test_paths_cannot_leave_the_workspace(
    workspace: Path, outside: Path, tool_class: type[Tool], path: str, message: str
):
    tool = tool_class()
    with pytest.raises(ToolInputError, match=message) as caught:
        await call(tool, workspace, _params(tool, path))
    assert caught.value.fields == ("path",)
    assert (outside / "secret.txt").read_text() == "top secret"
    assert list(workspace.iterdir()) == []


@pytest.mark.parametrize("tool_class", TOOLS)
@pytest.mark.parametrize(
    "path", ["out/secret.txt", "out/new.txt", "out", "secret-link", "dangling", "loop"]
)
async def test_symbolic_links_cannot_lead_outside(
    workspace: Path, outside: Path, tool_class: type[Tool], path: str
):
    (workspace / "out").symlink_to(outside, target_is_directory=True)
    (workspace / "secret-link").symlink_to(outside / "secret.txt")
    (workspace / "dangling").symlink_to(outside / "not-yet.txt")
    (workspace / "loop").symlink_to(workspace / "loop")
    tool = tool_class()
    with pytest.raises(ToolInputError, match=r"outside the workspace|cannot be resolved"):
        await call(tool, workspace, _params(tool, path))
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]
    assert (outside / "secret.txt").read_text() == "top secret"


async def test_symbolic_links_inside_the_workspace_work(workspace: Path):
    (workspace / "docs").mkdir()
    (workspace / "docs" / "a.txt").write_text("inside")
    (workspace / "alias").symlink_to(workspace / "docs", target_is_directory=True)
    read = await call(WorkspaceReadTool(), workspace, {"path": "alias/a.txt"})
    assert read["content"] == "inside"
    assert read["path"] == "alias/a.txt"
    await call(WorkspaceWriteTool(), workspace, {"path": "alias/b.txt", "content": "via link"})
    assert (workspace / "docs" / "b.txt").read_text() == "via link"


async def test_a_workspace_reached_through_a_symlink_still_works(tmp_path: Path, workspace: Path):
    link = tmp_path / "ws-link"
    link.symlink_to(workspace, target_is_directory=True)
    await call(WorkspaceWriteTool(), link, {"path": "a.txt", "content": "ok"})
    assert (workspace / "a.txt").read_text() == "ok"


@pytest.mark.parametrize("tool_class", TOOLS)
async def test_a_context_without_a_workspace_is_a_config_error(
    tmp_path: Path, tool_class: type[Tool]
):
    tool = tool_class()
    with pytest.raises(ConfigError, match=r"pass ProcessingContext\(workspace="):
        await call(tool, None, _params(tool, "a.txt"))
    with pytest.raises(ConfigError, match="not an existing directory"):
        await call(tool, tmp_path / "missing", _params(tool, "a.txt"))


# -- list -----------------------------------------------------------------------------


@pytest.fixture
def tree(workspace: Path, outside: Path) -> Path:
    (workspace / "docs" / "deep").mkdir(parents=True)
    (workspace / "docs" / "a.md").write_text("aaa")
    (workspace / "docs" / "deep" / "b.md").write_text("b")
    (workspace / "data.csv").write_text("1,2\n")
    (workspace / "out").symlink_to(outside, target_is_directory=True)
    return workspace


@pytest.mark.parametrize(
    ("params", "entries"),
    [
        (
            {},
            [
                {"path": "data.csv", "type": "file", "bytes": 4},
                {"path": "docs", "type": "dir"},
                {"path": "out", "type": "symlink"},
            ],
        ),
        (
            {"path": "docs"},
            [
                {"path": "docs/a.md", "type": "file", "bytes": 3},
                {"path": "docs/deep", "type": "dir"},
            ],
        ),
        (
            {"recursive": True},
            [
                {"path": "data.csv", "type": "file", "bytes": 4},
                {"path": "docs", "type": "dir"},
                {"path": "docs/a.md", "type": "file", "bytes": 3},
                {"path": "docs/deep", "type": "dir"},
                {"path": "docs/deep/b.md", "type": "file", "bytes": 1},
                {"path": "out", "type": "symlink"},  # listed, never followed
            ],
        ),
        (
            {"pattern": "*.md", "recursive": True},
            [
                {"path": "docs/a.md", "type": "file", "bytes": 3},
                {"path": "docs/deep/b.md", "type": "file", "bytes": 1},
            ],
        ),
        ({"pattern": "*.md"}, []),
    ],
)
async def test_list_describes_entries_sorted_by_path(
    tree: Path, params: dict[str, Any], entries: list[dict[str, Any]]
):
    result = await call(WorkspaceListTool(), tree, params)
    assert result == {"path": params.get("path", "."), "entries": entries, "truncated": False}


async def test_listed_paths_can_be_read(tree: Path):
    listing = await call(WorkspaceListTool(), tree, {"recursive": True, "pattern": "b.md"})
    [entry] = listing["entries"]
    read = await call(WorkspaceReadTool(), tree, {"path": entry["path"]})
    assert read["content"] == "b"


async def test_list_stops_at_the_entry_limit(workspace: Path):
    for index in range(MAX_LIST_ENTRIES + 1):
        (workspace / f"f{index:04}.txt").touch()
    result = await call(WorkspaceListTool(), workspace, {})
    assert len(result["entries"]) == MAX_LIST_ENTRIES
    assert result["truncated"] is True
    (workspace / "f0000.txt").unlink()
    assert (await call(WorkspaceListTool(), workspace, {}))["truncated"] is False


@pytest.mark.parametrize(
    ("path", "message"),
    [("missing", "no directory at `path`"), ("data.csv", "is a file; read it")],
)
async def test_list_errors_tell_the_model_what_to_change(tree: Path, path: str, message: str):
    with pytest.raises(ToolInputError, match=message):
        await call(WorkspaceListTool(), tree, {"path": path})


@pytest.mark.parametrize(
    ("tool", "params", "line"),
    [
        (WorkspaceReadTool(), {"path": "a.txt"}, "Reading a.txt"),
        (WorkspaceWriteTool(), {"path": "a.txt", "content": ""}, "Writing a.txt"),
        (WorkspaceWriteTool(), {"path": "a.txt", "append": True}, "Appending to a.txt"),
        (WorkspaceListTool(), {}, "Listing the workspace"),
        (WorkspaceListTool(), {"path": "docs"}, "Listing docs"),
    ],
)
def test_user_messages(tool: Tool, params: dict[str, Any], line: str):
    assert tool.user_message(params) == line
