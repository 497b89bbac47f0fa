"""TeamExecutor: several agents working one objective over a shared TaskBoard and
MessageBus.

On start it subscribes to the board and mirrors every ``task_completed`` into working
memory as ``task:<id>``, so teammates read each other's results with ``memory_read``.
With no tasks given, the first member (the lead) gets a planning turn to put tasks on
the board. Then it runs rounds: in each, every member with work (a claimable task on
the board, a task it claimed, or unread messages) runs one step, concurrently, and their
messages are streamed as they come. It stops when the board is done, nobody has work,
or ``max_rounds`` is reached; tasks left unfinished are failed on the board. Every board
change is streamed as a ``TaskUpdate`` (claimed: ``started``; ``completed``; ``failed``;
``skipped`` when a task it depends on failed); failed tasks are not mirrored into memory.
A member's step that raises is reported as a ``StepResult`` with ``error`` (and
``step:<id>`` holding it) while the other members go on.
"""

from __future__ import annotations

import functools
from collections import deque
from collections.abc import (
    AsyncGenerator,
    AsyncIterator,
    Callable,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from contextlib import aclosing
from typing import Any, TypeAlias

from memstack._json import JSON
from memstack.agents.messages import ProcessingMessage, StepResult, TaskStatus, TaskUpdate
from memstack.agents.plan import Step, Task
from memstack.agents.step_executor import DEFAULT_MAX_ITERATIONS, StepExecutor
from memstack.agents.streams import Finished, StreamPool
from memstack.agents.team.board import BoardEvent, BoardTask, TaskBoard, TaskSpec
from memstack.agents.team.bus import MessageBus
from memstack.agents.team.members import TeamMember
from memstack.agents.team.prompts import (
    planning_instructions,
    round_instructions,
    team_system_prompt,
)
from memstack.agents.team.tools import team_tools
from memstack.context import ProcessingContext
from memstack.errors import InvalidInput, MemstackError
from memstack.providers.base import ChatModel
from memstack.tools import Tool
from memstack.working import AgentMemory, memory_keys, memory_tools

__all__ = [
    "DEFAULT_MAX_ROUNDS",
    "TaskSeed",
    "TeamExecutor",
    "mirror_completions",
    "step_id",
    "task_update",
]

DEFAULT_MAX_ROUNDS = 8
TaskSeed: TypeAlias = TaskSpec | BoardTask | Mapping[str, Any]
"""A task to seed the board with: a ``TaskSpec``, a ``BoardTask`` or a dict of the same
fields (``id``, ``title``, ``description``, ``depends_on``)."""
Turn: TypeAlias = tuple[str, Callable[[], AsyncIterator[ProcessingMessage]]]
_SEED_FIELDS = frozenset({"id", "title", "description", "depends_on"})


class TeamExecutor:
    def __init__(
        self,
        *,
        objective: str,
        members: Sequence[TeamMember],
        provider: ChatModel,
        model: str,
        tools: Sequence[Tool] = (),
        tasks: Iterable[TaskSeed] = (),
        board: TaskBoard | None = None,
        bus: MessageBus | None = None,
        max_rounds: int = DEFAULT_MAX_ROUNDS,
        max_step_iterations: int = DEFAULT_MAX_ITERATIONS,
        system_prompt: str = "",
    ) -> None:
        if not isinstance(objective, str) or not objective.strip():
            raise InvalidInput("objective must be a non-empty string.", field="objective")
        _check_limits(max_rounds, max_step_iterations)
        self.objective = objective
        self.members = _checked_members(members)
        self.provider, self.model = provider, model
        self.tools = tuple(tools)
        self.board = board if board is not None else TaskBoard()
        self.bus = bus if bus is not None else MessageBus()
        self.max_rounds, self.max_step_iterations = max_rounds, max_step_iterations
        self.system_prompt = system_prompt
        self.rounds_run = 0
        self._updates: deque[TaskUpdate] = deque()
        for member in self.members:
            self.bus.register(member.name)
        for seed in tasks:
            _seed(self.board, seed)

    async def execute(self, context: ProcessingContext) -> AsyncIterator[ProcessingMessage]:
        unsubscribers = [
            self.board.on_event(mirror_completions(self.board, context.memory)),
            self.board.on_event(self._record),
        ]
        try:
            for turns in self._phases(context):
                async with aclosing(self._run(context, turns)) as stream:
                    async for message in stream:
                        yield message
            self._stop()
            for update in self._drain():
                yield update
        finally:
            for unsubscribe in unsubscribers:
                unsubscribe()

    def get_results(self) -> dict[str, JSON]:
        """``{task_id: result}`` of the completed tasks."""
        return {t.id: t.result for t in self.board.list("completed")}

    def failed_tasks(self) -> list[BoardTask]:
        return self.board.list("failed")

    # -- turns -----------------------------------------------------------------------

    def _phases(self, context: ProcessingContext) -> Iterator[list[Turn]]:
        """The lead's planning turn when the board is empty, then one list of turns per
        round, each worked out when the previous one has run."""
        if not self.board.list():
            yield [self._planning_turn(context)]
        for round_no in range(1, self.max_rounds + 1):
            busy = [] if self.board.is_done() else [m for m in self.members if self._busy(m)]
            if not busy:
                return
            self.rounds_run = round_no
            yield [
                (step_id(m, round_no), functools.partial(self._member_turn, context, m, round_no))
                for m in busy
            ]

    async def _run(
        self, context: ProcessingContext, turns: Sequence[Turn]
    ) -> AsyncGenerator[ProcessingMessage, None]:
        """The turns' messages as they come, with the board's updates; a turn that
        fails (a provider error, a setup error) is reported, a bug propagates, and
        closing early cancels the turns still running."""
        pool: StreamPool[str, ProcessingMessage] = StreamPool()
        for key, turn in turns:
            pool.start(key, turn)
        try:
            async for event in pool.events():
                if not isinstance(event, Finished):
                    yield event
                elif event.error is not None:
                    if not isinstance(event.error, MemstackError):
                        raise event.error  # a bug of ours: propagate, never report it
                    yield _report_crash(context.memory, event.key, event.error)
                for update in self._drain():
                    yield update
        finally:
            await pool.close()

    def _planning_turn(self, context: ProcessingContext) -> Turn:
        lead = self.members[0]
        step = Step(
            id=f"{lead.name}_plan",
            instructions=planning_instructions(
                objective=self.objective, member=lead, team=self.members
            ),
            tools=("board_add_task", "board_list"),
        )
        return step.id, lambda: self._step_executor(context, lead, step, ()).execute()

    async def _member_turn(
        self, context: ProcessingContext, member: TeamMember, round_no: int
    ) -> AsyncIterator[ProcessingMessage]:
        claimable = self.board.claimable()
        claimed = self._claimed_by(member)
        step = Step(
            id=step_id(member, round_no),
            instructions=round_instructions(
                objective=self.objective,
                member=member,
                round_no=round_no,
                max_rounds=self.max_rounds,
                claimable=claimable,
                claimed=claimed,
                unread=self.bus.unread_count(member.name),
            ),
        )
        upstream = [memory_keys.task(d) for t in [*claimed, *claimable] for d in t.depends_on]
        executor = self._step_executor(context, member, step, upstream)
        async for message in executor.execute():
            yield message

    def _step_executor(
        self,
        context: ProcessingContext,
        member: TeamMember,
        step: Step,
        upstream: Sequence[str],
    ) -> StepExecutor:
        task = Task(id=f"team_{member.name}", title=f"{member.name}: {member.role}", steps=(step,))
        return StepExecutor(
            task=task,
            step=step,
            context=context,
            provider=self.provider,
            model=self.model,
            tools=self._tools_for(member),
            system_prompt=team_system_prompt(
                objective=self.objective,
                member=member,
                team=self.members,
                preamble=self.system_prompt,
            ),
            max_iterations=self.max_step_iterations,
            upstream_memory_keys=upstream,
        )

    def _tools_for(self, member: TeamMember) -> list[Tool]:
        """The member's own tools, the shared ones, the team tools bound to it, and the
        memory tools (the first tool of a name wins)."""
        return [
            *member.tools,
            *self.tools,
            *team_tools(self.board, self.bus, member.name),
            *memory_tools(source=member.name),
        ]

    # -- bookkeeping -----------------------------------------------------------------

    def _busy(self, member: TeamMember) -> bool:
        return bool(
            self.board.claimable() or self._claimed_by(member) or self.bus.unread_count(member.name)
        )

    def _claimed_by(self, member: TeamMember) -> list[BoardTask]:
        return [t for t in self.board.list("claimed") if t.assignee == member.name]

    def _record(self, event: BoardEvent) -> None:
        """Board callback: queue the change as a ``TaskUpdate`` for the stream."""
        task = self.board.get(event.task_id)
        if task is not None and event.type != "task_added":
            self._updates.append(task_update(self.board, task, event))

    def _drain(self) -> list[TaskUpdate]:
        drained: list[TaskUpdate] = []
        while self._updates:
            drained.append(self._updates.popleft())
        return drained

    def _stop(self) -> None:
        """Fail what is left on the board when the run stops before it is done."""
        if not self.board.is_done():
            self.board.fail_unfinished(
                f"the team stopped after {self.rounds_run} round(s) "
                f"(max_rounds={self.max_rounds}) before it was finished"
            )


def step_id(member: TeamMember, round_no: int) -> str:
    """The id of a member's step in a round: unique per member and round."""
    return f"{member.name}_r{round_no}"


def mirror_completions(board: TaskBoard, memory: AgentMemory) -> Callable[[BoardEvent], None]:
    """A board callback that writes each completed task into memory as ``task:<id>``."""

    def on_event(event: BoardEvent) -> None:
        if event.type != "task_completed":
            return
        task = board.get(event.task_id)
        if task is None:
            return
        memory.set(
            key=memory_keys.task(task.id),
            kind="task_result",
            value=task.result,
            source=task.id,
            title=task.title,
            description=task.description,
        )

    return on_event


def task_update(board: TaskBoard, task: BoardTask, event: BoardEvent) -> TaskUpdate:
    """A board change as the stream reports it: a claim is ``started``; a task that
    failed, unclaimed, because a task it depends on failed is ``skipped``."""
    if event.type == "task_claimed":
        return TaskUpdate(task_id=task.id, status="started")
    if event.type == "task_completed":
        return TaskUpdate(task_id=task.id, status="completed", result=task.result)
    failed_deps = [d for d in task.depends_on if (dep := board.get(d)) and dep.status == "failed"]
    status: TaskStatus = "skipped" if task.assignee is None and failed_deps else "failed"
    return TaskUpdate(task_id=task.id, status=status, error=task.error)


def _report_crash(memory: AgentMemory, failed_step: str, exc: BaseException) -> StepResult:
    """A step that raised: reported in the stream and in memory, as a step that ran out
    of iterations is."""
    error = f"step {failed_step!r} failed: {type(exc).__name__}: {exc}"
    memory.set(
        key=memory_keys.step(failed_step),
        kind="step_result",
        value={"error": error},
        source=failed_step,
    )
    return StepResult(step_id=failed_step, result={"error": error}, error=error)


def _seed(board: TaskBoard, seed: TaskSeed) -> None:
    if isinstance(seed, TaskSpec | BoardTask):
        board.add(
            id=seed.id, title=seed.title, description=seed.description, depends_on=seed.depends_on
        )
        return
    if not isinstance(seed, Mapping):
        raise InvalidInput(
            f"a task must be a TaskSpec, a BoardTask or a dict; got {type(seed).__name__}.",
            field="tasks",
        )
    unknown = sorted(set(seed) - _SEED_FIELDS)
    if unknown:
        raise InvalidInput(
            f"unknown task field {', '.join(map(repr, unknown))}; a task has "
            f"{', '.join(sorted(_SEED_FIELDS))}.",
            field="tasks",
        )
    board.add(**seed)


def _checked_members(members: Sequence[TeamMember]) -> tuple[TeamMember, ...]:
    team = tuple(members)
    if not team or not all(isinstance(m, TeamMember) for m in team):
        raise InvalidInput("a team needs at least one member, each a TeamMember.", field="members")
    names = [m.name for m in team]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise InvalidInput(
            f"duplicate member name {', '.join(map(repr, duplicates))}; give each its own.",
            field="members",
        )
    return team


def _check_limits(max_rounds: int, max_step_iterations: int) -> None:
    if max_rounds < 1:
        raise InvalidInput("max_rounds must be at least 1.", field="max_rounds")
    if max_step_iterations < 1:
        raise InvalidInput("max_step_iterations must be at least 1.", field="max_step_iterations")
