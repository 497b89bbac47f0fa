"""Memory that outlives a run, wired into agents.

- Long-term memory: an agent given a ``LongTermMemory`` gets ``ltm_recall`` /
  ``ltm_remember``; with ``auto_persist_memory`` its objective and final result are mined
  for memories after the run (off by default, as the spec says).
- The memory service: an agent given a ``MemoryServiceBinding`` gets its
  ``<memories>`` block (and the operator's ``<knowledge>`` matching the objective) at the
  top of the system prompt before each execution, and the ``store_memory`` tool bound to
  its agent id.
"""

from __future__ import annotations

from dataclasses import dataclass

from memstack._json import JSON, dumps
from memstack.longterm.memory import LongTermMemory
from memstack.longterm.tools import long_term_memory_tools
from memstack.longterm.types import RememberOutcome
from memstack.providers.base import Message
from memstack.service.knowledge import KnowledgeBase
from memstack.service.memories import MemoryService
from memstack.service.principal import Principal
from memstack.service.tools import StoreMemoryTool
from memstack.tools import Tool

__all__ = ["DurableMemory", "MemoryServiceBinding"]


@dataclass(frozen=True, kw_only=True)
class MemoryServiceBinding:
    """Which memories of the service an agent reads and writes: the tenant (principal),
    its agent id, and the session (workflow run) for session-scoped memories."""

    store: MemoryService
    principal: Principal
    agent_id: str
    session_id: str | None = None
    knowledge: KnowledgeBase | None = None
    budget_chars: int | None = None
    """Characters the prompt blocks may take; None: every memory."""


@dataclass(frozen=True, kw_only=True)
class DurableMemory:
    long_term: LongTermMemory | None = None
    auto_persist: bool = False
    store: MemoryServiceBinding | None = None

    def tools(self) -> list[Tool]:
        tools: list[Tool] = []
        if self.long_term is not None:
            tools.extend(long_term_memory_tools(self.long_term))
        if self.store is not None:
            s = self.store
            tools.append(
                StoreMemoryTool(s.store, s.principal, agent_id=s.agent_id, session_id=s.session_id)
            )
        return tools

    async def preamble(self, objective: str) -> str:
        """The ``<memories>`` (and ``<knowledge>``) blocks for the system prompt; ``""``
        without a store."""
        if self.store is None:
            return ""
        s = self.store
        found = await s.store.prompt_context(
            s.principal,
            agent_id=s.agent_id,
            session_id=s.session_id,
            query=objective,
            budget=s.budget_chars,
            knowledge=s.knowledge,
        )
        return found.prompt

    async def system_prompt(self, objective: str, *preambles: str) -> str:
        """The caller's preamble for a run: the memory blocks first, then ``preambles``."""
        parts = (await self.preamble(objective), *preambles)
        return "\n\n".join(p for p in parts if p.strip())

    async def persist(self, objective: str, result: JSON) -> list[RememberOutcome]:
        """With ``auto_persist``: mine the objective and the final result for memories."""
        if self.long_term is None or not self.auto_persist:
            return []
        answer = result if isinstance(result, str) else dumps(result)
        return await self.long_term.remember_conversation(
            [Message(role="user", content=objective), Message(role="assistant", content=answer)]
        )
