"""What to inject before an agent runs: the ``<memories>`` and ``<knowledge>`` blocks,
assembled here once for every transport (REST ``/api/context``, MCP ``get_context``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from memstack.errors import InvalidInput
from memstack.store.knowledge import KnowledgeBase, render_knowledge
from memstack.store.principal import Principal
from memstack.store.render import render_memories
from memstack.store.service import MemoryStore
from memstack.store.types import Memory

__all__ = ["MAX_BUDGET", "MIN_BUDGET", "PromptContext", "prompt_context"]

MIN_BUDGET: Final = 200
MAX_BUDGET: Final = 200_000
KNOWLEDGE_HITS: Final = 5


@dataclass(frozen=True, kw_only=True)
class PromptContext:
    memories: list[Memory]
    memories_block: str
    """The ``<memories>`` block; ``""`` when there are none."""
    knowledge_block: str
    """The ``<knowledge>`` block for the query; ``""`` without a query or hits."""

    @property
    def prompt(self) -> str:
        """Both blocks, ready to inject."""
        return "\n\n".join(b for b in (self.memories_block, self.knowledge_block) if b)


async def prompt_context(
    memories: MemoryStore,
    knowledge: KnowledgeBase,
    principal: Principal,
    *,
    agent_id: str,
    session_id: str | None = None,
    query: str | None = None,
    budget: int = 8_000,
) -> PromptContext:
    """The agent's memories (session, agent, global) within ``budget`` characters and,
    for a ``query``, the best knowledge passages within half of it."""
    if isinstance(budget, bool) or not isinstance(budget, int):
        raise InvalidInput(
            f"budget must be an int from {MIN_BUDGET} to {MAX_BUDGET}.", field="budget"
        )
    if not MIN_BUDGET <= budget <= MAX_BUDGET:
        raise InvalidInput(
            f"budget {budget} is out of range: give {MIN_BUDGET} to {MAX_BUDGET} characters.",
            field="budget",
        )
    found = await memories.context(principal, agent_id=agent_id, session_id=session_id)
    hits = await knowledge.search(principal, query, limit=KNOWLEDGE_HITS) if query else []
    return PromptContext(
        memories=found,
        memories_block=render_memories(found, budget_chars=budget),
        knowledge_block=render_knowledge(hits, budget_chars=max(MIN_BUDGET, budget // 2)),
    )
