"""SimpleAgent (one step, output schema, no planning) and AgentExecutor (value extraction)."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import Final

from memstack._json import JSON, JSONObject
from memstack.agents.durable import DurableMemory, MemoryServiceBinding
from memstack.agents.messages import ProcessingMessage
from memstack.agents.plan import Step, Task
from memstack.agents.skills import skills_for_run
from memstack.agents.step_executor import (
    DEFAULT_MAX_ITERATIONS,
    DEFAULT_MAX_TOKEN_LIMIT,
    StepExecutor,
)
from memstack.bank import (
    BANK_PROMPT,
    BankReadTool,
    BankWriteTool,
    MemoryBank,
    bank_tools_with_working_memory,
)
from memstack.context import ProcessingContext
from memstack.errors import InvalidInput
from memstack.longterm.memory import LongTermMemory
from memstack.providers.base import ChatModel
from memstack.tools import Tool
from memstack.working import memory_keys

__all__ = ["AgentExecutor", "SimpleAgent"]

_SLUG: Final = re.compile(r"[^A-Za-z0-9_-]+")


class SimpleAgent:
    """One step with the objective as its instructions; its result is the agent's result."""

    def __init__(
        self,
        *,
        name: str,
        objective: str,
        provider: ChatModel,
        model: str,
        tools: Sequence[Tool] = (),
        output_schema: JSONObject | None = None,
        system_prompt: str = "",
        max_iterations: int = DEFAULT_MAX_ITERATIONS,
        max_token_limit: int = DEFAULT_MAX_TOKEN_LIMIT,
        skills: Sequence[str] | None = None,
        skill_dirs: Sequence[Path | str] = (),
        long_term_memory: LongTermMemory | None = None,
        auto_persist_memory: bool = False,
        memory_store: MemoryServiceBinding | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        if not isinstance(name, str) or not name.strip():
            raise InvalidInput("name must be a non-empty string.", field="name")
        if not isinstance(objective, str) or not objective.strip():
            raise InvalidInput("objective must be a non-empty string.", field="objective")
        self.name, self.objective = name, objective
        self.provider, self.model = provider, model
        self.tools: list[Tool] = list(tools)
        self.output_schema = output_schema
        self.system_prompt = system_prompt
        self.skills = skills
        self.skill_dirs = [Path(d) for d in skill_dirs]
        self.durable = DurableMemory(
            long_term=long_term_memory, auto_persist=auto_persist_memory, store=memory_store
        )
        self.env = env
        self.max_iterations = max_iterations
        self.max_token_limit = max_token_limit
        self.memory_bank: MemoryBank | None = None
        """The MemoryBank attached with ``memory(bank)``, if any."""
        self._result: JSON = None
        self._executor: StepExecutor | None = None

    def memory(self, bank: MemoryBank) -> SimpleAgent:
        """Attach a MemoryBank (``memory(bank)``): its tools, keyed to this
        agent's name, join the agent's tools, except where the user already gave a tool of
        the same name; the bank is kept as ``memory_bank``."""
        if not isinstance(bank, MemoryBank):
            raise InvalidInput(
                f"memory() takes a MemoryBank, not {type(bank).__name__}.", field="bank"
            )
        names = {t.name for t in self.tools}
        source = self.task().steps[0].id  # as the step's own working-memory tools record
        shared = bank_tools_with_working_memory(bank, self.name, source=source)
        self.tools.extend(t for t in shared if t.name not in names)
        self.memory_bank = bank
        return self

    def task(self) -> Task:
        slug = _SLUG.sub("_", self.name).strip("_") or "agent"
        step = Step(
            id=f"{slug}_step", instructions=self.objective, output_schema=self.output_schema
        )
        return Task(id=slug, title=self.name, description=self.objective, steps=(step,))

    async def execute(self, context: ProcessingContext) -> AsyncIterator[ProcessingMessage]:
        task = self.task()
        bank_note = BANK_PROMPT if self._bank_attached() else ""
        system_prompt = await self.durable.system_prompt(
            self.objective, self.system_prompt, bank_note
        )
        executor = StepExecutor(
            task=task,
            step=task.steps[0],
            context=context,
            provider=self.provider,
            model=self.model,
            tools=[*self.tools, *self.durable.tools()],
            system_prompt=system_prompt,
            skills_section=skills_for_run(
                self.objective, skills=self.skills, skill_dirs=self.skill_dirs, env=self.env
            ),
            max_iterations=self.max_iterations,
            max_token_limit=self.max_token_limit,
            use_finish_task=True,
            upstream_memory_keys=self._upstream_keys(context),
        )
        self._executor = executor
        async for message in executor.execute():
            yield message
        self._result = executor.result
        if executor.error is None:
            await self.durable.persist(self.objective, self._result)

    def _upstream_keys(self, context: ProcessingContext) -> Sequence[str]:
        return ()

    def _bank_attached(self) -> bool:
        """Whether a bank's ``memory_read`` / ``memory_write`` serve the agent (beside
        working memory's, under the same names)."""
        return any(isinstance(t, BankReadTool) for t in self.tools) and any(
            isinstance(t, BankWriteTool) for t in self.tools
        )

    def get_results(self) -> JSON:
        """The step's result (``{"error": ...}`` when it did not finish)."""
        return self._result


class AgentExecutor(SimpleAgent):
    """Lightweight value extraction: the inputs go into working memory as ``input:<key>``
    and are named in the step's message; the result follows ``output_schema``."""

    def __init__(
        self,
        *,
        name: str = "extractor",
        objective: str,
        provider: ChatModel,
        model: str,
        output_schema: JSONObject,
        inputs: Mapping[str, object] | None = None,
        tools: Sequence[Tool] = (),
        system_prompt: str = "",
        max_iterations: int = DEFAULT_MAX_ITERATIONS,
    ) -> None:
        super().__init__(
            name=name,
            objective=objective,
            provider=provider,
            model=model,
            tools=tools,
            output_schema=output_schema,
            system_prompt=system_prompt,
            max_iterations=max_iterations,
        )
        self.inputs = dict(inputs or {})

    def _upstream_keys(self, context: ProcessingContext) -> Sequence[str]:
        keys = []
        for key, value in self.inputs.items():
            if value is None:
                continue
            context.memory.set(
                key=memory_keys.input(key), kind="input", value=value, source=self.name, title=key
            )
            keys.append(memory_keys.input(key))
        return keys
