"""What to inject before an agent runs: the ``<memories>`` and ``<knowledge>`` blocks.

``MemoryService.prompt_context`` is the one entry every transport calls (REST
``/api/context``, MCP ``get_context``, the agents' ``MemoryServiceBinding``); this module
holds its budget rule and how the blocks are put together: every memory unless the
caller gives a budget, the knowledge within half of the budget, or of ``DEFAULT_BUDGET``
without one."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from memstack.errors import InvalidInput
from memstack.service.knowledge import KnowledgeHit, render_knowledge
from memstack.service.render import DEFAULT_BUDGET, render_memories
from memstack.service.types import Memory

__all__ = [
    "KNOWLEDGE_HITS",
    "MAX_BUDGET",
    "MIN_BUDGET",
    "PromptContext",
    "assemble",
    "check_budget",
]

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


def check_budget(budget: object) -> int | None:
    """``budget`` as an int of characters (None: no budget), or ``InvalidInput`` naming it."""
    if budget is None:
        return None
    if isinstance(budget, bool) or not isinstance(budget, int):
        raise InvalidInput(
            f"budget must be an int from {MIN_BUDGET} to {MAX_BUDGET}.", field="budget"
        )
    if not MIN_BUDGET <= budget <= MAX_BUDGET:
        raise InvalidInput(
            f"budget {budget} is out of range: give {MIN_BUDGET} to {MAX_BUDGET} characters.",
            field="budget",
        )
    return budget


def assemble(found: list[Memory], hits: list[KnowledgeHit], budget: int | None) -> PromptContext:
    """The blocks of ``found`` memories, all of them or within ``budget`` characters, and
    of the knowledge ``hits`` within half of the budget (of ``DEFAULT_BUDGET`` without one)."""
    knowledge_budget = (DEFAULT_BUDGET if budget is None else budget) // 2
    return PromptContext(
        memories=found,
        memories_block=render_memories(found, budget_chars=budget),
        knowledge_block=render_knowledge(hits, budget_chars=max(MIN_BUDGET, knowledge_budget)),
    )
