"""ProcessingContext: what a tool or executor gets for one agent run."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from memstack.clock import Clock
from memstack.working.memory import AgentMemory

__all__ = ["ProcessingContext"]


@dataclass(kw_only=True)
class ProcessingContext:
    """The run's working memory and surroundings.

    Each context gets a new, empty ``AgentMemory`` unless one is passed in.
    """

    memory: AgentMemory = field(default_factory=AgentMemory)
    workspace: Path | None = None
    """Directory for the run's file artifacts, when it has one."""
    user_id: str | None = None
    """Whose run this is; scopes secrets and long-term memory."""

    @property
    def clock(self) -> Clock:
        """The run's clock (the one its memory stamps entries with)."""
        return self.memory.clock

    def copy(self) -> ProcessingContext:
        """A context for an isolated sub-run: same surroundings, its own empty memory.

        Memory is deliberately not shared: set entries from the parent
        on the copy when a sub-run should inherit them.
        """
        return replace(self, memory=AgentMemory(clock=self.clock))
