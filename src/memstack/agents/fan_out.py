"""Fan-out: a ``process`` step runs one sub-step per item
its ``discover`` step listed, concurrently with a bound, and its result is the list of
per-item results, written under ``step:<process id>``. The process step is completed
once the results are gathered, unless every item failed."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import AsyncIterator, Sequence
from typing import Final

from memstack._json import JSON, dumps
from memstack.agents.messages import ProcessingMessage, StepResult
from memstack.agents.plan import Step, Task
from memstack.agents.runner import StepRunner
from memstack.agents.streams import Finished, StreamPool
from memstack.context import ProcessingContext
from memstack.errors import InvalidInput, MemstackError
from memstack.working import memory_keys

__all__ = [
    "DEFAULT_FAN_OUT_CONCURRENCY",
    "DEFAULT_MAX_ITEMS",
    "discovered_items",
    "run_process_step",
]

DEFAULT_MAX_ITEMS: Final = 100
DEFAULT_FAN_OUT_CONCURRENCY: Final = 4


def discovered_items(value: JSON, discover_id: str) -> list[JSON]:
    """The items a discover step produced: its result as a JSON array, or the one array
    field of an object result."""
    if isinstance(value, list):
        return value
    if isinstance(value, dict):
        arrays = [v for v in value.values() if isinstance(v, list)]
        if len(arrays) == 1:
            return arrays[0]
    raise InvalidInput(
        f"discover step {discover_id!r} returned {dumps(value)[:200]}, not a list of items; "
        "its result must be a JSON array, or an object with exactly one array field.",
        field="mode",
    )


def item_instructions(step: Step, item: JSON) -> str:
    template = step.per_item_instructions or step.instructions
    text = item if isinstance(item, str) else dumps(item)
    if "{item}" in template:
        return template.replace("{item}", text)
    return f"{template}\n\nItem:\n{text}"


async def run_process_step(
    *,
    task: Task,
    step: Step,
    context: ProcessingContext,
    runner: StepRunner,
    use_finish_task: bool,
    upstream_memory_keys: Sequence[str] = (),
    max_items: int = DEFAULT_MAX_ITEMS,
    concurrency: int = DEFAULT_FAN_OUT_CONCURRENCY,
) -> AsyncIterator[ProcessingMessage]:
    step.completed = False
    discover_id = next(d for d in step.depends_on if task.step(d).mode == "discover")
    items = discovered_items(context.memory.get_value(memory_keys.step(discover_id)), discover_id)
    if len(items) > max_items:
        raise InvalidInput(
            f"discover step {discover_id!r} listed {len(items)} items, more than the "
            f"{max_items} a process step fans out over; narrow the discover step or raise "
            "max_fan_out.",
            field="max_fan_out",
        )
    subs = [
        Step(
            id=f"{step.id}.{i}",
            instructions=item_instructions(step, item),
            tools=step.tools,
            output_schema=step.output_schema,
        )
        for i, item in enumerate(items)
    ]
    gate = asyncio.Semaphore(concurrency)

    async def one(sub: Step) -> AsyncIterator[ProcessingMessage]:
        async with gate:
            executor = runner.executor(
                task=task, step=sub, context=context, upstream_memory_keys=upstream_memory_keys
            )
            async for message in executor.execute():
                yield message

    results: dict[str, JSON] = {}
    pool: StreamPool[str, ProcessingMessage] = StreamPool()
    for sub in subs:
        pool.start(sub.id, functools.partial(one, sub))
    try:
        async for item in pool.events():
            if isinstance(item, Finished):
                if item.error is not None and not isinstance(item.error, MemstackError):
                    raise item.error
                if item.error is not None:
                    results[item.key] = {"error": f"{type(item.error).__name__}: {item.error}"}
                continue
            if isinstance(item, StepResult) and item.step_id in {s.id for s in subs}:
                results[item.step_id] = item.result
            yield item
    finally:
        await pool.close()
    yield _aggregate(task, step, context, [results.get(s.id) for s in subs], use_finish_task)


def _aggregate(
    task: Task, step: Step, context: ProcessingContext, values: list[JSON], finish: bool
) -> StepResult:
    context.memory.set(
        key=memory_keys.step(step.id),
        kind="step_result",
        value=values,
        source=step.id,
        title=f"{step.id}: {len(values)} per-item results",
    )
    if finish:
        context.memory.set(
            key=memory_keys.task(task.id),
            kind="task_result",
            value=values,
            source=task.id,
            title=task.title,
            description=task.description,
        )
    failed = values and all(isinstance(v, dict) and "error" in v for v in values)
    error = f"every item of process step {step.id!r} failed" if failed else None
    step.completed = error is None
    return StepResult(step_id=step.id, result=values, is_task_result=finish, error=error)
