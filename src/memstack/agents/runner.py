"""StepRunner: the settings every step of a run shares, and the one place that builds a
StepExecutor from them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from memstack.agents.plan import Step, Task
from memstack.agents.step_executor import (
    DEFAULT_MAX_ITERATIONS,
    DEFAULT_MAX_TOKEN_LIMIT,
    StepExecutor,
)
from memstack.context import ProcessingContext
from memstack.providers.base import ChatModel
from memstack.tools import Tool

__all__ = ["StepRunner"]


@dataclass(frozen=True, kw_only=True)
class StepRunner:
    provider: ChatModel
    model: str
    reasoning_model: str | None = None
    """Model for reasoning-heavy steps (aggregate steps and a plan's final step)."""
    tools: Sequence[Tool] = field(default_factory=tuple)
    system_prompt: str = ""
    skills_section: str = ""
    max_iterations: int = DEFAULT_MAX_ITERATIONS
    max_token_limit: int = DEFAULT_MAX_TOKEN_LIMIT

    def executor(
        self,
        *,
        task: Task,
        step: Step,
        context: ProcessingContext,
        use_finish_task: bool = False,
        upstream_memory_keys: Sequence[str] = (),
        reasoning: bool = False,
    ) -> StepExecutor:
        return StepExecutor(
            task=task,
            step=step,
            context=context,
            provider=self.provider,
            model=(self.reasoning_model or self.model) if reasoning else self.model,
            tools=self.tools,
            system_prompt=self.system_prompt,
            skills_section=self.skills_section,
            max_iterations=self.max_iterations,
            max_token_limit=self.max_token_limit,
            use_finish_task=use_finish_task,
            upstream_memory_keys=upstream_memory_keys,
        )
