"""AgentStepExecutor: one agent step run as a node of a workflow graph.

The bridge between a workflow runner and the agent system: it writes each non-null edge
input of the node into working memory as ``input:<node.id>.<key>`` (kind ``input``,
source the node id, title ``<node.id>.<key>``), then runs a ``StepExecutor``, which
writes the result under ``step:<node.id>``. Later agent steps of the same graph, sharing
the ``ProcessingContext``, find earlier nodes' inputs and outputs through ``memory_list``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass

from memstack._json import JSON, JSONObject
from memstack.agents.messages import ProcessingMessage
from memstack.agents.plan import Step, Task
from memstack.agents.step_executor import (
    DEFAULT_MAX_ITERATIONS,
    DEFAULT_MAX_TOKEN_LIMIT,
    StepExecutor,
)
from memstack.context import ProcessingContext
from memstack.errors import InvalidInput
from memstack.providers.base import ChatModel
from memstack.tools import Tool
from memstack.working import memory_keys

__all__ = ["AgentStepExecutor", "WorkflowNode"]


@dataclass(frozen=True, kw_only=True)
class WorkflowNode:
    """An agent-step node of a workflow graph: its id, what the agent must do, and
    optionally the tools it may use and the JSON Schema of its result."""

    id: str
    instructions: str
    tools: tuple[str, ...] | None = None
    output_schema: JSONObject | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id.strip():
            raise InvalidInput("a workflow node needs a non-empty string id.", field="id")
        if not isinstance(self.instructions, str) or not self.instructions.strip():
            raise InvalidInput(
                f"node {self.id!r}: instructions must say what the agent step should do.",
                field="instructions",
            )


class AgentStepExecutor:
    """Runs ``node`` once per ``process(inputs)`` call; ``result`` holds its answer."""

    def __init__(
        self,
        *,
        node: WorkflowNode,
        context: ProcessingContext,
        provider: ChatModel,
        model: str,
        tools: Sequence[Tool] = (),
        system_prompt: str = "",
        max_iterations: int = DEFAULT_MAX_ITERATIONS,
        max_token_limit: int = DEFAULT_MAX_TOKEN_LIMIT,
    ) -> None:
        self.node, self.context = node, context
        self.provider, self.model = provider, model
        self.tools = tuple(tools)
        self.system_prompt = system_prompt
        self.max_iterations = max_iterations
        self.max_token_limit = max_token_limit
        self.result: JSON = None
        self.error: str | None = None

    async def process(self, inputs: Mapping[str, JSON]) -> AsyncIterator[ProcessingMessage]:
        """Surface the edge inputs into memory, then run the step, yielding its messages."""
        input_keys = self._remember_inputs(inputs)
        step = Step(
            id=self.node.id,
            instructions=self.node.instructions,
            tools=self.node.tools,
            output_schema=self.node.output_schema,
        )
        executor = StepExecutor(
            task=Task(id=self.node.id, title=self.node.id, steps=(step,)),
            step=step,
            context=self.context,
            provider=self.provider,
            model=self.model,
            tools=self.tools,
            system_prompt=self.system_prompt,
            max_iterations=self.max_iterations,
            max_token_limit=self.max_token_limit,
            upstream_memory_keys=input_keys,
        )
        async for message in executor.execute():
            yield message
        self.result, self.error = executor.result, executor.error

    def _remember_inputs(self, inputs: Mapping[str, JSON]) -> list[str]:
        keys: list[str] = []
        for key, value in inputs.items():
            if value is None:
                continue
            name = f"{self.node.id}.{key}"
            self.context.memory.set(
                key=memory_keys.input(name),
                kind="input",
                value=value,
                source=self.node.id,
                title=name,
            )
            keys.append(memory_keys.input(name))
        return keys
