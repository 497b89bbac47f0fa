"""The team tools: happy paths, and refusals the model can act on."""

from typing import Any

import pytest

from memstack import ProcessingContext, ToolInputError
from memstack.agents.team import MessageBus, TaskBoard, team_tools
from memstack.agents.team.tools import TEAM_TOOL_NAMES
from memstack.tools import Tool


def team() -> tuple[TaskBoard, MessageBus, dict[str, Tool], dict[str, Tool]]:
    board, bus = TaskBoard(), MessageBus(["ada", "bob"])
    board.add(id="research", title="Research", description="Find sources.")
    board.add(id="report", title="Report", depends_on=["research"])
    ada = {t.name: t for t in team_tools(board, bus, "ada")}
    bob = {t.name: t for t in team_tools(board, bus, "bob")}
    return board, bus, ada, bob


async def run(tool: Tool, args: dict[str, Any]) -> Any:
    return await tool.process(ProcessingContext(), args)


def test_team_tools_are_every_tool_bound_to_the_member():
    _, _, ada, _ = team()
    assert list(ada) == list(TEAM_TOOL_NAMES)
    for tool in ada.values():
        tool.to_provider_tool()  # a valid definition


async def test_board_list_shows_tasks_without_results():
    board, _, ada, _ = team()
    board.claim("research", "ada")
    board.complete("research", "ada", {"secret": "value"})
    listed = await run(ada["board_list"], {})
    assert listed["claimable"] == ["report"]
    assert listed["tasks"][0] == {
        "id": "research",
        "title": "Research",
        "status": "completed",
        "assignee": "ada",
        "depends_on": [],
        "description": "Find sources.",
    }
    assert "secret" not in str(listed)
    only_open = await run(ada["board_list"], {"status": "open"})
    assert [t["id"] for t in only_open["tasks"]] == ["report"]


async def test_board_add_task_records_who_added_it():
    board, _, ada, _ = team()
    added = await run(
        ada["board_add_task"],
        {"id": "edit", "title": "Edit", "description": "Polish.", "depends_on": ["report"]},
    )
    assert added["ok"] is True and added["task"]["depends_on"] == ["report"]
    task = board.get("edit")
    assert task is not None and task.added_by == "ada"


async def test_board_claim_names_the_upstream_memory_keys():
    _, _, ada, bob = team()
    await run(ada["board_claim"], {"task_id": "research"})
    await run(ada["board_complete"], {"task_id": "research", "result": [1, 2]})
    claimed = await run(bob["board_claim"], {"task_id": "report"})
    assert claimed["task"]["assignee"] == "bob"
    assert claimed["upstream_memory_keys"] == ["task:research"]


async def test_board_complete_and_fail():
    board, _, ada, _ = team()
    await run(ada["board_claim"], {"task_id": "research"})
    done = await run(ada["board_complete"], {"task_id": "research", "result": {"a": 1}})
    assert done == {"ok": True, "task_id": "research", "memory_key": "task:research"}
    await run(ada["board_claim"], {"task_id": "report"})
    failed = await run(ada["board_fail"], {"task_id": "report", "error": "no time"})
    assert failed == {"ok": True, "task_id": "report", "failed": ["report"]}
    task = board.get("report")
    assert task is not None and task.error == "no time"


async def test_board_fail_reports_the_dependents_that_failed_with_it():
    _, _, ada, _ = team()
    await run(ada["board_claim"], {"task_id": "research"})
    failed = await run(ada["board_fail"], {"task_id": "research", "error": "blocked"})
    assert failed["failed"] == ["research", "report"]


async def test_messages_round_trip():
    _, _, ada, bob = team()
    assert await run(ada["send_message"], {"to": "bob", "content": "go"}) == {
        "ok": True,
        "to": "bob",
    }
    await run(ada["send_message"], {"to": "*", "content": "all"})
    read = await run(bob["read_messages"], {})
    assert [(m["from"], m["to"], m["content"]) for m in read["messages"]] == [
        ("ada", "bob", "go"),
        ("ada", "*", "all"),
    ]
    assert read["messages"][0]["sentAt"].endswith("Z")
    assert await run(bob["read_messages"], {}) == {"messages": []}


REFUSALS: list[tuple[str, str, dict[str, Any], str]] = [
    ("ada", "board_claim", {"task_id": "report"}, "waits on 'research'"),
    ("ada", "board_claim", {"task_id": "ghost"}, "no task 'ghost'"),
    ("bob", "board_claim", {"task_id": "research"}, "already claimed by 'ada'"),
    ("bob", "board_complete", {"task_id": "research", "result": 1}, "only its assignee"),
    ("ada", "board_complete", {"task_id": "report", "result": 1}, "claim it before"),
    ("bob", "board_fail", {"task_id": "research", "error": "x"}, "only its assignee"),
    ("ada", "board_add_task", {"id": "research", "title": "Again"}, "already on the board"),
    ("ada", "board_add_task", {"id": "x", "title": "X", "depends_on": ["ghost"]}, "'ghost'"),
    ("ada", "send_message", {"to": "zed", "content": "hi"}, "'zed' is not a member"),
    ("ada", "board_list", {"status": "done"}, "must be one of"),
    ("ada", "board_claim", {}, "missing required field `task_id`"),
]


@pytest.mark.parametrize(
    ("member", "name", "args", "message"), REFUSALS, ids=[f"{r[1]}-{r[3]}" for r in REFUSALS]
)
async def test_refusals_are_tool_input_errors_that_say_what_to_do(
    member: str, name: str, args: dict[str, Any], message: str
):
    board, _, ada, bob = team()
    board.claim("research", "ada")
    tools = ada if member == "ada" else bob
    with pytest.raises(ToolInputError, match=message) as caught:
        await run(tools[name], args)
    assert caught.value.tool == name
    assert "refused" in str(caught.value) or "Invalid arguments" in str(caught.value)
