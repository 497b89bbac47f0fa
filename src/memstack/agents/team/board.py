"""TaskBoard: the shared list of tasks a team of agents claims and completes.

A task moves ``open -> claimed -> completed | failed``. It is claimable when it is open
and every task it depends on is completed. Only the assignee may complete or fail a
claimed task; when a task fails, every task that depends on it (directly or not) fails
too, so nothing waits forever on it. Each change is announced to ``on_event`` callbacks
after it is made; TeamExecutor mirrors ``task_completed`` into working memory that way.

Safe to use from several threads and asyncio tasks: every change holds one lock, and
callbacks run after it, outside the lock.
"""

from __future__ import annotations

import builtins
import logging
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Literal, get_args

from memstack._json import JSON, to_json
from memstack.errors import InvalidInput, NotFound

__all__ = [
    "BoardEvent",
    "BoardEventType",
    "BoardStatus",
    "BoardTask",
    "TaskBoard",
    "TaskSpec",
]

BoardStatus = Literal["open", "claimed", "completed", "failed"]
BoardEventType = Literal["task_added", "task_claimed", "task_completed", "task_failed"]
TASK_STATUSES: tuple[BoardStatus, ...] = get_args(BoardStatus)
EventCallback = Callable[["BoardEvent"], object]

_log = logging.getLogger("memstack.agents.team")


@dataclass(frozen=True, kw_only=True)
class TaskSpec:
    """A task to put on the board (what ``TeamExecutor(tasks=...)`` seeds it with)."""

    id: str
    title: str
    description: str | None = None
    depends_on: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class BoardTask:
    id: str
    title: str
    description: str | None = None
    depends_on: tuple[str, ...] = ()
    status: BoardStatus = "open"
    assignee: str | None = None
    result: JSON = None
    """The result the assignee completed the task with (JSON)."""
    error: str | None = None
    """Why the task failed."""
    added_by: str | None = None


@dataclass(frozen=True, kw_only=True)
class BoardEvent:
    type: BoardEventType
    task_id: str
    agent: str | None = None
    """Who made the change (``None`` when the caller did not say)."""


class TaskBoard:
    """The team's tasks, in the order they were added."""

    def __init__(self) -> None:
        self._tasks: dict[str, BoardTask] = {}
        self._callbacks: builtins.list[EventCallback] = []
        self._lock = threading.RLock()

    # -- changes ---------------------------------------------------------------------

    def add(
        self,
        *,
        id: str,
        title: str,
        description: str | None = None,
        depends_on: Sequence[str] = (),
        added_by: str | None = None,
    ) -> BoardTask:
        """Add an open task. Its dependencies must already be on the board and not failed."""
        task = BoardTask(
            id=_text(id, "id"),
            title=_text(title, "title"),
            description=_optional_text(description, "description"),
            depends_on=_ids(depends_on),
            added_by=added_by,
        )
        with self._lock:
            self._check_new(task)
            self._tasks[task.id] = task
        self._emit([BoardEvent(type="task_added", task_id=task.id, agent=added_by)])
        return task

    def claim(self, task_id: str, agent: str) -> BoardTask:
        """Make ``agent`` the assignee of a claimable task."""
        _text(agent, "agent")
        with self._lock:
            task = self._require(task_id)
            if task.status != "open":
                raise InvalidInput(
                    f"task {task_id!r} is already {_status_of(task)}; claim a claimable task "
                    "instead.",
                    field="task_id",
                )
            waiting = [d for d in task.depends_on if self._tasks[d].status != "completed"]
            if waiting:
                raise InvalidInput(
                    f"task {task_id!r} waits on {_names(waiting)}, not completed yet; claim "
                    "it once they are, or claim a task that is claimable now.",
                    field="task_id",
                )
            task = self._store(replace(task, status="claimed", assignee=agent))
        self._emit([BoardEvent(type="task_claimed", task_id=task_id, agent=agent)])
        return task

    def complete(self, task_id: str, agent: str, result: object) -> BoardTask:
        """Complete a task ``agent`` claimed, with a JSON ``result``."""
        value = to_json(result, field="result")
        with self._lock:
            task = self._owned(task_id, agent, "complete")
            task = self._store(replace(task, status="completed", result=value))
        self._emit([BoardEvent(type="task_completed", task_id=task_id, agent=agent)])
        return task

    def fail(self, task_id: str, agent: str, error: str) -> BoardTask:
        """Fail a task ``agent`` claimed; every task depending on it fails too."""
        reason = _text(error, "error")
        with self._lock:
            task = self._owned(task_id, agent, "fail")
            task = self._store(replace(task, status="failed", error=reason))
            failed = [task, *self._fail_dependents(task_id)]
        self._emit([BoardEvent(type="task_failed", task_id=t.id, agent=agent) for t in failed])
        return task

    def fail_unfinished(self, reason: str, *, agent: str | None = None) -> builtins.list[BoardTask]:
        """Fail every open or claimed task (a run that stops with work left); return them."""
        _text(reason, "reason")
        with self._lock:
            failed = [
                self._store(replace(t, status="failed", error=f"{reason} (it was {_status_of(t)})"))
                for t in self._tasks.values()
                if t.status in ("open", "claimed")
            ]
        self._emit([BoardEvent(type="task_failed", task_id=t.id, agent=agent) for t in failed])
        return failed

    # -- reading ---------------------------------------------------------------------

    def get(self, task_id: str) -> BoardTask | None:
        with self._lock:
            return self._tasks.get(task_id)

    def claimable(self) -> builtins.list[BoardTask]:
        """Open tasks whose dependencies are all completed."""
        with self._lock:
            return [t for t in self._tasks.values() if self._is_claimable(t)]

    def is_done(self) -> bool:
        """True when every task is completed or failed (an empty board is done)."""
        with self._lock:
            return all(t.status in ("completed", "failed") for t in self._tasks.values())

    def list(self, status: BoardStatus | None = None) -> builtins.list[BoardTask]:
        """Every task, or those with ``status``, in the order they were added."""
        if status is not None and status not in TASK_STATUSES:
            raise InvalidInput(
                f"status must be one of {', '.join(TASK_STATUSES)}; got {status!r}.",
                field="status",
            )
        with self._lock:
            return [t for t in self._tasks.values() if status is None or t.status == status]

    # -- events ----------------------------------------------------------------------

    def on_event(self, callback: EventCallback) -> Callable[[], None]:
        """Call ``callback(event)`` after every change; returns a function that
        unsubscribes. A callback that raises is logged and stops neither the change
        nor the other callbacks."""
        if not callable(callback):
            raise InvalidInput("callback must be callable.", field="callback")
        with self._lock:
            self._callbacks.append(callback)

        def unsubscribe() -> None:
            with self._lock:
                if callback in self._callbacks:
                    self._callbacks.remove(callback)

        return unsubscribe

    # -- internals -------------------------------------------------------------------

    def _emit(self, events: Iterable[BoardEvent]) -> None:
        with self._lock:
            callbacks = builtins.list(self._callbacks)
        for event in events:
            for callback in callbacks:
                try:
                    callback(event)
                except Exception:
                    _log.exception("board callback %r failed on %s", callback, event)

    def _check_new(self, task: BoardTask) -> None:
        if task.id in self._tasks:
            raise InvalidInput(
                f"a task {task.id!r} is already on the board; give the new task another id.",
                field="id",
            )
        unknown = [d for d in task.depends_on if d not in self._tasks]
        if unknown:
            known = _names(self._tasks) if self._tasks else "none"
            raise InvalidInput(
                f"task {task.id!r} depends on unknown task {_names(unknown)}; add "
                f"dependencies first (tasks on the board: {known}).",
                field="depends_on",
            )
        failed = [d for d in task.depends_on if self._tasks[d].status == "failed"]
        if failed:
            raise InvalidInput(
                f"task {task.id!r} depends on failed task {_names(failed)}, so it could "
                "never be claimed; drop that dependency or add a task that redoes the work.",
                field="depends_on",
            )

    def _require(self, task_id: str) -> BoardTask:
        task = self._tasks.get(task_id)
        if task is None:
            known = _names(self._tasks) if self._tasks else "none"
            raise NotFound(
                f"there is no task {task_id!r} on the board; the tasks are: {known}.",
                field="task_id",
            )
        return task

    def _owned(self, task_id: str, agent: str, verb: str) -> BoardTask:
        task = self._require(task_id)
        if task.status == "open":
            raise InvalidInput(
                f"task {task_id!r} is open; claim it before you {verb} it.", field="task_id"
            )
        if task.status != "claimed":
            raise InvalidInput(
                f"task {task_id!r} is already {task.status}; it cannot {verb} again.",
                field="task_id",
            )
        if task.assignee != agent:
            raise InvalidInput(
                f"task {task_id!r} is claimed by {task.assignee!r}, not {agent!r}; only its "
                f"assignee may {verb} it.",
                field="agent",
            )
        return task

    def _fail_dependents(self, task_id: str) -> builtins.list[BoardTask]:
        failed: builtins.list[BoardTask] = []
        frontier = [task_id]
        while frontier:
            cause = frontier.pop(0)
            for task in builtins.list(self._tasks.values()):
                if task.status == "open" and cause in task.depends_on:
                    error = f"task {cause!r}, which it depends on, failed"
                    failed.append(self._store(replace(task, status="failed", error=error)))
                    frontier.append(task.id)
        return failed

    def _is_claimable(self, task: BoardTask) -> bool:
        return task.status == "open" and all(
            self._tasks[d].status == "completed" for d in task.depends_on
        )

    def _store(self, task: BoardTask) -> BoardTask:
        self._tasks[task.id] = task
        return task


def _status_of(task: BoardTask) -> str:
    return f"{task.status} by {task.assignee!r}" if task.assignee else task.status


def _names(ids: Iterable[str]) -> str:
    return ", ".join(repr(i) for i in ids)


def _text(value: object, field: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(f"{field} must be a non-empty string; got {value!r}.", field=field)
    return value


def _optional_text(value: object, field: str) -> str | None:
    if value is not None and not isinstance(value, str):
        raise InvalidInput(f"{field} must be a string or None; got {value!r}.", field=field)
    return value


def _ids(value: object) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise InvalidInput(
            f"depends_on must be a list of task ids; got {value!r}.", field="depends_on"
        )
    for item in value:
        _text(item, "depends_on")
    return tuple(dict.fromkeys(value))
