"""ParallelTaskExecutor: runs a plan's tasks as a DAG.

It owns no result map: everything lives in ``context.memory``. Inputs are seeded once as
``input:<key>``; each task runs when the tasks it depends on have completed, with their
``task:<id>`` keys as upstream hints; after a task, ``task:<id>`` is written if the finish
step did not write it, from the last step's value (idempotent). A task that fails is
reported (``TaskUpdate`` and ``task:<id>`` holding ``{"error": ...}``), its dependents are
skipped the same way, and independent tasks still run.
"""

from __future__ import annotations

import asyncio
import builtins
import functools
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Final

from memstack._json import JSON, to_json
from memstack.agents.dag import next_moves, topological_order
from memstack.agents.messages import ProcessingMessage, TaskStatus, TaskUpdate
from memstack.agents.plan import Task, TaskPlan
from memstack.agents.runner import StepRunner
from memstack.agents.streams import Finished, StreamPool
from memstack.agents.task_executor import TaskExecutor, seed_inputs
from memstack.context import ProcessingContext
from memstack.errors import MemstackError
from memstack.working import MemoryEntry, memory_keys

__all__ = ["DEFAULT_MAX_CONCURRENT_TASKS", "ParallelTaskExecutor"]

DEFAULT_MAX_CONCURRENT_TASKS: Final = 4


class ParallelTaskExecutor:
    def __init__(
        self,
        *,
        plan: TaskPlan,
        context: ProcessingContext,
        runner: StepRunner,
        inputs: Mapping[str, object] | None = None,
        max_concurrent_tasks: int = DEFAULT_MAX_CONCURRENT_TASKS,
    ) -> None:
        self.plan, self.context, self.runner = plan, context, runner
        self.inputs = {k: to_json(v, field=f"inputs[{k!r}]") for k, v in (inputs or {}).items()}
        self._gate = asyncio.Semaphore(max_concurrent_tasks)
        self._deps = {task.id: task.depends_on for task in plan.tasks}
        self._order = topological_order([task.id for task in plan.tasks], self._deps)
        self.completed: set[str] = set()
        self.failed: dict[str, str] = {}

    async def execute(self) -> AsyncIterator[ProcessingMessage]:
        seed_inputs(self.context.memory, self.inputs)
        pool: StreamPool[str, ProcessingMessage] = StreamPool()
        started: set[str] = set()
        try:
            for message in self._start_ready(pool, started):
                yield message
            async for item in pool.events():
                if not isinstance(item, Finished):
                    yield item
                    continue
                if item.error is not None and not isinstance(item.error, MemstackError):
                    raise item.error
                if item.error is not None:
                    error = f"{type(item.error).__name__}: {item.error}"
                    yield self._fail(self.plan.task(item.key), error)
                for message in self._start_ready(pool, started):
                    yield message
        finally:
            await pool.close()

    # -- results (all read from memory) ------------------------------------------------------

    def get_final_result(self) -> JSON:
        return self.context.memory.get_value(memory_keys.task(self.plan.last_task.id))

    def get_all_results(self) -> builtins.list[MemoryEntry]:
        return self.context.memory.list(kind="task_result")

    def get_task_result(self, task_id: str) -> JSON:
        return self.context.memory.get_value(memory_keys.task(task_id))

    # -- scheduling --------------------------------------------------------------------------

    def _start_ready(
        self, pool: StreamPool[str, ProcessingMessage], started: set[str]
    ) -> Iterator[ProcessingMessage]:
        start, skip = next_moves(
            self._order,
            self._deps,
            started=started,
            completed=self.completed,
            failed=self.failed.keys(),
        )
        for task_id, cause in skip:
            started.add(task_id)
            error = f"skipped: task {cause!r} did not complete"
            yield self._fail(self.plan.task(task_id), error, "skipped")
        for task_id in start:
            started.add(task_id)
            pool.start(task_id, functools.partial(self._run_task, self.plan.task(task_id)))

    async def _run_task(self, task: Task) -> AsyncIterator[ProcessingMessage]:
        async with self._gate:
            yield TaskUpdate(task_id=task.id, status="started")
            executor = TaskExecutor(
                task=task,
                context=self.context,
                runner=self.runner,
                upstream_memory_keys=[memory_keys.task(d) for d in task.depends_on],
                reasoning_final=task.id == self.plan.last_task.id,
            )
            async for message in executor.execute():
                yield message
            if executor.error is not None:
                yield self._fail(task, executor.error)
                return
            yield self._complete(task, executor)

    def _complete(self, task: Task, executor: TaskExecutor) -> TaskUpdate:
        """The idempotent ``task:<id>`` write, falling back to the last step's value."""
        memory = self.context.memory
        key = memory_keys.task(task.id)
        if not memory.has(key):
            memory.set(
                key=key,
                kind="task_result",
                value=memory.get_value(memory_keys.step(task.last_step.id)),
                source=task.id,
                title=task.title,
                description=task.description,
            )
        self.completed.add(task.id)
        return TaskUpdate(task_id=task.id, status="completed", result=memory.get_value(key))

    def _fail(self, task: Task, error: str, status: TaskStatus = "failed") -> TaskUpdate:
        self.failed[task.id] = error
        self.context.memory.set(
            key=memory_keys.task(task.id),
            kind="task_result",
            value={"error": error},
            source=task.id,
            title=f"{task.title} (failed)",
            description=task.description,
        )
        return TaskUpdate(task_id=task.id, status=status, error=error)
