"""TaskExecutor: walks one task's step DAG.

Caller inputs are seeded as ``input:<key>`` entries; steps run as soon as the steps they
depend on have finished, independent ones concurrently; the finish step (the task's last
step, or ``final_step_id``) writes ``task:<id>``; ``upstream_memory_keys`` go to every step
as hints; a ``process`` step fans out over its discover step's items. A step that fails is
reported in the stream and in memory (``step:<id>`` holds ``{"error": ...}``), the steps
that depend on it are skipped the same way, and independent branches still finish.
Which steps are done is read from each ``Step.completed`` (set by the step's executor),
never kept here: a step already completed when the run starts is not run again, and its
result is the one in memory.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence

from memstack._json import JSON, to_json
from memstack.agents.dag import next_moves
from memstack.agents.fan_out import DEFAULT_FAN_OUT_CONCURRENCY, DEFAULT_MAX_ITEMS, run_process_step
from memstack.agents.messages import ProcessingMessage, StepResult
from memstack.agents.plan import Step, Task
from memstack.agents.runner import StepRunner
from memstack.agents.streams import Finished, StreamPool
from memstack.context import ProcessingContext
from memstack.errors import MemstackError
from memstack.working import AgentMemory, memory_keys

__all__ = ["TaskExecutor", "seed_inputs"]


def seed_inputs(memory: AgentMemory, inputs: Mapping[str, object]) -> None:
    """Each caller input as an ``input:<key>`` entry titled with its key."""
    for key, value in inputs.items():
        memory.set(key=memory_keys.input(key), kind="input", value=value, title=key)


class TaskExecutor:
    def __init__(
        self,
        *,
        task: Task,
        context: ProcessingContext,
        runner: StepRunner,
        inputs: Mapping[str, object] | None = None,
        upstream_memory_keys: Sequence[str] = (),
        final_step_id: str | None = None,
        reasoning_final: bool = False,
        max_fan_out: int = DEFAULT_MAX_ITEMS,
        fan_out_concurrency: int = DEFAULT_FAN_OUT_CONCURRENCY,
    ) -> None:
        self.task, self.context, self.runner = task, context, runner
        self.inputs = {k: to_json(v, field=f"inputs[{k!r}]") for k, v in (inputs or {}).items()}
        self.upstream_memory_keys = tuple(upstream_memory_keys)
        self._order = [step.id for step in task.ordered_steps()]
        self._deps = {step.id: step.depends_on for step in task.steps}
        self.final_step_id = task.step(final_step_id).id if final_step_id else task.last_step.id
        self.reasoning_final = reasoning_final
        self.max_fan_out = max_fan_out
        self.fan_out_concurrency = fan_out_concurrency
        self.failed: dict[str, str] = {}
        """Step id to why it did not complete (failed, or skipped for a failed dependency)."""

    def is_finish_step(self, step: Step) -> bool:
        return step.id == self.final_step_id

    @property
    def completed(self) -> dict[str, JSON]:
        """The completed steps' results by step id, read from the steps' ``completed``
        flags and their ``step:<id>`` entries."""
        memory = self.context.memory
        return {
            s.id: memory.get_value(memory_keys.step(s.id)) for s in self.task.steps if s.completed
        }

    @property
    def result(self) -> JSON:
        """The finish step's result, ``None`` until it completes."""
        if not self.task.step(self.final_step_id).completed:
            return None
        return self.context.memory.get_value(memory_keys.step(self.final_step_id))

    @property
    def error(self) -> str | None:
        return self.failed.get(self.final_step_id)

    async def execute(self) -> AsyncIterator[ProcessingMessage]:
        seed_inputs(self.context.memory, self.inputs)
        pool: StreamPool[str, ProcessingMessage] = StreamPool()
        started: set[str] = set()
        try:
            for message in self._start_ready(pool, started):
                yield message
            async for item in pool.events():
                if isinstance(item, Finished):
                    for message in self._finished(item, pool, started):
                        yield message
                    continue
                if isinstance(item, StepResult) and item.step_id in started:
                    self._record(item)
                yield item
        finally:
            await pool.close()

    # -- scheduling ------------------------------------------------------------------------

    def _start_ready(
        self, pool: StreamPool[str, ProcessingMessage], started: set[str]
    ) -> Iterator[StepResult]:
        """Start every step whose dependencies completed; skip (and report) every step
        that depends on one that did not. A completed step is never started."""
        done = {s.id for s in self.task.steps if s.completed}
        start, skip = next_moves(
            self._order,
            self._deps,
            started=started | done,
            completed=done,
            failed=self.failed.keys(),
        )
        for step_id, cause in skip:
            started.add(step_id)
            yield self._fail(self.task.step(step_id), f"skipped: step {cause!r} did not complete")
        for step_id in start:
            started.add(step_id)
            pool.start(step_id, functools.partial(self._run_step, self.task.step(step_id)))

    def _finished(
        self,
        item: Finished[str],
        pool: StreamPool[str, ProcessingMessage],
        started: set[str],
    ) -> Iterator[StepResult]:
        if item.error is not None:
            if not isinstance(item.error, MemstackError):
                raise item.error  # a bug of ours: propagate, never report it as a result
            step = self.task.step(item.key)
            yield self._fail(step, f"{type(item.error).__name__}: {item.error}")
        elif not self.task.step(item.key).completed and item.key not in self.failed:
            yield self._fail(self.task.step(item.key), "the step ended without a result")
        yield from self._start_ready(pool, started)

    def _record(self, message: StepResult) -> None:
        """A failure is noted here; a success is already on the step (``completed``)."""
        if message.error is not None:
            self.failed[message.step_id] = message.error

    def _fail(self, step: Step, error: str) -> StepResult:
        self.failed[step.id] = error
        self.context.memory.set(
            key=memory_keys.step(step.id),
            kind="step_result",
            value={"error": error},
            source=step.id,
            title=f"{step.id} (failed)",
        )
        return StepResult(step_id=step.id, result={"error": error}, error=error)

    # -- one step ----------------------------------------------------------------------------

    def _run_step(self, step: Step) -> AsyncIterator[ProcessingMessage]:
        finish = self.is_finish_step(step)
        if step.mode == "process":
            return run_process_step(
                task=self.task,
                step=step,
                context=self.context,
                runner=self.runner,
                use_finish_task=finish,
                upstream_memory_keys=self.upstream_memory_keys,
                max_items=self.max_fan_out,
                concurrency=self.fan_out_concurrency,
            )
        executor = self.runner.executor(
            task=self.task,
            step=step,
            context=self.context,
            use_finish_task=finish,
            upstream_memory_keys=self.upstream_memory_keys,
            reasoning=step.mode == "aggregate" or (finish and self.reasoning_final),
        )
        return executor.execute()
