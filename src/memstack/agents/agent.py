"""Agent: full planning.

Skills are resolved, the objective is planned into tasks of steps by ``TaskPlanner`` (or
a pre-built ``task`` skips planning), and ``ParallelTaskExecutor`` runs the plan; every
result flows through ``context.memory``. The final result is the last task's,
validated against ``output_schema`` by its final step's ``finish_step``.
"""

from __future__ import annotations

import tempfile
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Final

from memstack._json import JSON, JSONObject
from memstack.agents.durable import DurableMemory, MemoryServiceBinding
from memstack.agents.messages import ProcessingMessage
from memstack.agents.parallel import ParallelTaskExecutor
from memstack.agents.plan import Task, TaskPlan
from memstack.agents.planner import PlanningUpdate, TaskPlanner, check_plan, plan_of
from memstack.agents.runner import StepRunner
from memstack.agents.skills import skills_for_run
from memstack.agents.step_executor import DEFAULT_MAX_TOKEN_LIMIT
from memstack.context import ProcessingContext
from memstack.errors import InvalidInput
from memstack.longterm.memory import LongTermMemory
from memstack.providers.base import ChatModel
from memstack.tools import Tool

__all__ = ["Agent", "AgentMessage"]

AgentMessage = ProcessingMessage | PlanningUpdate
DEFAULT_MAX_STEPS: Final = 10
DEFAULT_MAX_STEP_ITERATIONS: Final = 5


def _text(value: object, field: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(f"{field} must be a non-empty string.", field=field)
    return value


class Agent:
    """Plans the objective into a DAG of tasks and runs it. Options and defaults are
    the agent's configuration, with Python names."""

    def __init__(
        self,
        *,
        name: str,
        objective: str,
        provider: ChatModel,
        model: str,
        planning_model: str | None = None,
        reasoning_model: str | None = None,
        tools: Sequence[Tool] = (),
        system_prompt: str = "",
        max_token_limit: int = DEFAULT_MAX_TOKEN_LIMIT,
        max_steps: int = DEFAULT_MAX_STEPS,
        max_step_iterations: int = DEFAULT_MAX_STEP_ITERATIONS,
        output_schema: JSONObject | None = None,
        workspace: Path | str | None = None,
        skills: Sequence[str] | None = None,
        skill_dirs: Sequence[Path | str] = (),
        task: Task | TaskPlan | None = None,
        inputs: Mapping[str, object] | None = None,
        long_term_memory: LongTermMemory | None = None,
        auto_persist_memory: bool = False,
        memory_store: MemoryServiceBinding | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.name = _text(name, "name")
        self.objective = _text(objective, "objective")
        self.model = _text(model, "model")
        self.provider = provider
        self.planning_model = planning_model or model
        self.reasoning_model = reasoning_model or model
        self.tools = list(tools)
        self.system_prompt = system_prompt
        self.max_token_limit = max_token_limit
        self.max_steps = max_steps
        self.max_step_iterations = max_step_iterations
        self.output_schema = output_schema
        self.workspace = Path(workspace) if workspace is not None else None
        self.skills = skills
        self.skill_dirs = [Path(d) for d in skill_dirs]
        if task is not None and not isinstance(task, Task | TaskPlan):
            raise InvalidInput("task must be a Task or a TaskPlan.", field="task")
        self.task = task
        self.inputs = dict(inputs or {})
        self.durable = DurableMemory(
            long_term=long_term_memory, auto_persist=auto_persist_memory, store=memory_store
        )
        self.env = env
        if task is not None:
            self._check_given(task)
        self.plan: TaskPlan | None = None
        """The plan executed (set once planning is done)."""
        self.executor: ParallelTaskExecutor | None = None
        self._result: JSON = None

    async def execute(self, context: ProcessingContext) -> AsyncIterator[AgentMessage]:
        if context.workspace is None:
            context.workspace = self.workspace or Path(tempfile.mkdtemp(prefix="memstack-"))
        context.workspace.mkdir(parents=True, exist_ok=True)
        skills = skills_for_run(
            self.objective, skills=self.skills, skill_dirs=self.skill_dirs, env=self.env
        )
        system_prompt = await self.durable.system_prompt(self.objective, self.system_prompt)
        tools = [*self.tools, *self.durable.tools()]
        plan = self._given_plan()
        if plan is None:
            async for update in self._planner(tools).plan_stream():
                yield update
                plan = update.plan or plan
        assert plan is not None
        self.plan = plan = self._with_output_schema(plan)
        runner = StepRunner(
            provider=self.provider,
            model=self.model,
            reasoning_model=self.reasoning_model,
            tools=tools,
            system_prompt=system_prompt,
            skills_section=skills,
            max_iterations=self.max_step_iterations,
            max_token_limit=self.max_token_limit,
        )
        self.executor = ParallelTaskExecutor(
            plan=plan, context=context, runner=runner, inputs=self.inputs
        )
        async for message in self.executor.execute():
            yield message
        self._result = self.executor.get_final_result()
        if self.plan.last_task.id not in self.executor.failed:
            await self.durable.persist(self.objective, self._result)

    def get_results(self) -> JSON:
        """The last task's result (``{"error": ...}`` when it did not complete)."""
        return self._result

    def _check_given(self, task: Task | TaskPlan) -> None:
        """A pre-built task or plan obeys what a planned one does: ``max_steps`` per
        task, and only tools this agent has."""
        plan = plan_of(task) if isinstance(task, Task) else task
        names = [t.name for t in [*self.tools, *self.durable.tools()]]
        try:
            check_plan(plan, max_steps=self.max_steps, tool_names=names)
        except InvalidInput as exc:
            raise InvalidInput(f"the pre-built task cannot run: {exc}", field="task") from exc

    def _given_plan(self) -> TaskPlan | None:
        if isinstance(self.task, Task):
            return plan_of(self.task)
        return self.task

    def _planner(self, tools: Sequence[Tool]) -> TaskPlanner:
        return TaskPlanner(
            provider=self.provider,
            model=self.planning_model,
            objective=self.objective,
            tools=tools,
            max_steps=self.max_steps,
            system_prompt=self.system_prompt,
            inputs_keys=tuple(self.inputs),
        )

    def _with_output_schema(self, plan: TaskPlan) -> TaskPlan:
        """The agent's ``output_schema`` on the final step of the final task."""
        if self.output_schema is None:
            return plan
        last = plan.last_task
        step = replace(last.last_step, output_schema=self.output_schema)
        task = replace(last, steps=(*last.steps[:-1], step))
        return replace(plan, tasks=(*plan.tasks[:-1], task))
