"""The team tools: each is bound to one member and works the shared board and bus.

``board_list`` shows tasks without their results: a completed task's result is read
through ``memory_read`` of ``task:<id>`` (progressive disclosure). A move the board
refuses (claiming a task that waits on another, completing a teammate's task) comes back
to the model as a ``ToolInputError`` saying what to do instead.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, TypeVar, cast

from memstack._json import JSON, JSONObject
from memstack.agents.team.board import TASK_STATUSES, BoardStatus, BoardTask, TaskBoard
from memstack.agents.team.bus import BROADCAST, MessageBus
from memstack.clock import iso_from_ms
from memstack.errors import InvalidInput, ToolInputError
from memstack.tools import Tool
from memstack.working import memory_keys

if TYPE_CHECKING:
    from memstack.context import ProcessingContext

__all__ = [
    "TEAM_TOOL_NAMES",
    "BoardAddTaskTool",
    "BoardClaimTool",
    "BoardCompleteTool",
    "BoardFailTool",
    "BoardListTool",
    "ReadMessagesTool",
    "SendMessageTool",
    "team_tools",
]

TEAM_TOOL_NAMES = (
    "board_list",
    "board_add_task",
    "board_claim",
    "board_complete",
    "board_fail",
    "send_message",
    "read_messages",
)

T = TypeVar("T")
_TASK_ID: JSONObject = {"type": "string", "minLength": 1, "description": "The task's id."}


class _TeamTool(Tool):
    """A tool bound to the team's board and bus, acting as ``member``."""

    hint = "Call `board_list` to see the board, then try again."

    def __init__(self, board: TaskBoard, bus: MessageBus, member: str) -> None:
        self.board, self.bus, self.member = board, bus, member

    def _attempt(self, action: Callable[[], T]) -> T:
        """Run a board or bus change; a refusal goes back to the model as what to do."""
        try:
            return action()
        except InvalidInput as exc:
            raise ToolInputError(
                f"`{self.name}` refused: {exc} {self.hint}",
                tool=self.name,
                fields=(exc.field,) if exc.field else (),
            ) from exc


class BoardListTool(_TeamTool):
    name = "board_list"
    description = (
        "List the team's tasks: id, title, status, assignee and dependencies (not results; "
        "read a completed task's result with `memory_read` of `task:<id>`). `claimable` "
        "lists the tasks you can claim now."
    )
    input_schema: JSONObject = {
        "type": "object",
        "properties": {
            "status": {
                "type": "string",
                "enum": list(TASK_STATUSES),
                "description": "Optional filter: only tasks with this status.",
            }
        },
        "additionalProperties": False,
    }

    async def process(self, context: ProcessingContext, params: Mapping[str, JSON]) -> JSON:
        status = cast("BoardStatus | None", params.get("status"))
        return {
            "tasks": [task_summary(t) for t in self.board.list(status)],
            "claimable": [t.id for t in self.board.claimable()],
        }


class BoardAddTaskTool(_TeamTool):
    name = "board_add_task"
    description = (
        "Add a task to the team's board. Give it a short unique id, a title, and in "
        "`depends_on` the ids of tasks (already on the board) that must be completed first."
    )
    input_schema: JSONObject = {
        "type": "object",
        "properties": {
            "id": {"type": "string", "minLength": 1, "description": "Short unique task id."},
            "title": {"type": "string", "minLength": 1, "description": "What to do."},
            "description": {"type": "string", "description": "Details for whoever claims it."},
            "depends_on": {
                "type": "array",
                "items": {"type": "string"},
                "description": "Ids of tasks that must be completed first.",
            },
        },
        "required": ["id", "title"],
        "additionalProperties": False,
    }

    async def process(self, context: ProcessingContext, params: Mapping[str, JSON]) -> JSON:
        task = self._attempt(
            lambda: self.board.add(
                id=cast(str, params["id"]),
                title=cast(str, params["title"]),
                description=cast("str | None", params.get("description")),
                depends_on=cast("list[str]", params.get("depends_on", [])),
                added_by=self.member,
            )
        )
        return {"ok": True, "task": task_summary(task)}


class BoardClaimTool(_TeamTool):
    name = "board_claim"
    description = (
        "Claim a claimable task (open, every dependency completed) so you can work on it. "
        "The reply names the memory keys of its dependencies' results."
    )
    input_schema: JSONObject = {
        "type": "object",
        "properties": {"task_id": _TASK_ID},
        "required": ["task_id"],
        "additionalProperties": False,
    }

    async def process(self, context: ProcessingContext, params: Mapping[str, JSON]) -> JSON:
        task = self._attempt(lambda: self.board.claim(cast(str, params["task_id"]), self.member))
        upstream: list[JSON] = [memory_keys.task(d) for d in task.depends_on]
        return {"ok": True, "task": task_summary(task), "upstream_memory_keys": upstream}


class BoardCompleteTool(_TeamTool):
    name = "board_complete"
    description = (
        "Complete a task you claimed, with its result. The result is shared with the team "
        "in memory as `task:<id>`."
    )
    input_schema: JSONObject = {
        "type": "object",
        "properties": {
            "task_id": _TASK_ID,
            "result": {"description": "The task's result: any JSON value."},
        },
        "required": ["task_id", "result"],
        "additionalProperties": False,
    }
    hint = "Complete only a task you claimed; `board_list` shows the board."

    async def process(self, context: ProcessingContext, params: Mapping[str, JSON]) -> JSON:
        task_id = cast(str, params["task_id"])
        self._attempt(lambda: self.board.complete(task_id, self.member, params["result"]))
        return {"ok": True, "task_id": task_id, "memory_key": memory_keys.task(task_id)}


class BoardFailTool(_TeamTool):
    name = "board_fail"
    description = "Give up on a task you claimed, saying why. Tasks that depend on it fail too."
    input_schema: JSONObject = {
        "type": "object",
        "properties": {
            "task_id": _TASK_ID,
            "error": {"type": "string", "minLength": 1, "description": "Why it failed."},
        },
        "required": ["task_id", "error"],
        "additionalProperties": False,
    }
    hint = "Fail only a task you claimed; `board_list` shows the board."

    async def process(self, context: ProcessingContext, params: Mapping[str, JSON]) -> JSON:
        task_id = cast(str, params["task_id"])
        before = {t.id for t in self.board.list("failed")}
        self._attempt(lambda: self.board.fail(task_id, self.member, cast(str, params["error"])))
        failed: list[JSON] = [t.id for t in self.board.list("failed") if t.id not in before]
        return {"ok": True, "task_id": task_id, "failed": failed}


class SendMessageTool(_TeamTool):
    name = "send_message"
    description = (
        f'Send a message to a teammate by name, or to "{BROADCAST}" for everyone. They '
        "read it with `read_messages`."
    )
    input_schema: JSONObject = {
        "type": "object",
        "properties": {
            "to": {"type": "string", "minLength": 1, "description": 'A teammate or "*".'},
            "content": {"type": "string", "minLength": 1, "description": "The message."},
        },
        "required": ["to", "content"],
        "additionalProperties": False,
    }
    hint = "Send to a teammate named in your instructions."

    async def process(self, context: ProcessingContext, params: Mapping[str, JSON]) -> JSON:
        to, content = cast(str, params["to"]), cast(str, params["content"])
        self._attempt(lambda: self.bus.send(sender=self.member, to=to, content=content))
        return {"ok": True, "to": to}


class ReadMessagesTool(_TeamTool):
    name = "read_messages"
    description = "Read your unread messages from teammates (each is returned once)."
    input_schema: JSONObject = {
        "type": "object",
        "properties": {},
        "additionalProperties": False,
    }

    async def process(self, context: ProcessingContext, params: Mapping[str, JSON]) -> JSON:
        messages: list[JSON] = [
            {"from": m.sender, "to": m.to, "content": m.content, "sentAt": iso_from_ms(m.sent_at)}
            for m in self._attempt(lambda: self.bus.inbox(self.member))
        ]
        return {"messages": messages}


def task_summary(task: BoardTask) -> JSONObject:
    """A task as the team tools show it: everything but its result."""
    summary: JSONObject = {
        "id": task.id,
        "title": task.title,
        "status": task.status,
        "assignee": task.assignee,
        "depends_on": list(task.depends_on),
    }
    if task.description:
        summary["description"] = task.description
    if task.error:
        summary["error"] = task.error
    return summary


def team_tools(board: TaskBoard, bus: MessageBus, member: str) -> list[Tool]:
    """New instances of every team tool, acting as ``member``."""
    kinds: tuple[type[_TeamTool], ...] = (
        BoardListTool,
        BoardAddTaskTool,
        BoardClaimTool,
        BoardCompleteTool,
        BoardFailTool,
        SendMessageTool,
        ReadMessagesTool,
    )
    return [kind(board, bus, member) for kind in kinds]
