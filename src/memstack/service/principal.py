"""Who is asking: the authenticated tenant, and the agents a key may act for."""

from __future__ import annotations

from dataclasses import dataclass

from memstack.errors import Forbidden
from memstack.service.types import Memory, Scope, check_id_part

__all__ = ["Forbidden", "Principal"]


@dataclass(frozen=True, kw_only=True)
class Principal:
    """Every service call is scoped to ``tenant``; a key bound to ``agents`` may only
    act for those agents. It reads the global memories and the knowledge documents, which
    every agent shares, but changes them only with ``global_write``: a key handed to one
    agent must not rewrite what all the others are told."""

    tenant: str
    agents: frozenset[str] | None = None
    """None: any agent of the tenant."""
    global_write: bool = False
    """A key bound to ``agents`` may change global memories and knowledge (``memstack keys
    create --global-write``); a key for any agent always may."""
    long_term: bool = False
    """The key may use its tenant's users' long-term memory (``memstack keys create
    --long-term``) even when the server has not switched it on for every key
    (``MEMSTACK_MEMORY_ENABLED``); a server that switched it off refuses it all the same."""

    def __post_init__(self) -> None:
        check_id_part(self.tenant, "tenant")

    def check_agent(self, agent_id: str) -> None:
        if self.agents is not None and agent_id not in self.agents:
            raise Forbidden(
                f"this API key may not act for agent {agent_id!r}; "
                f"it is limited to {', '.join(sorted(self.agents))}.",
                field="agent_id",
            )

    @property
    def may_write_global(self) -> bool:
        return self.agents is None or self.global_write

    def check_global_write(self, *, field: str | None = None) -> None:
        """``Forbidden`` unless this key may change global memories and knowledge."""
        if not self.may_write_global:
            raise Forbidden(
                "this API key may read but not change global memories or knowledge "
                f"documents: it is limited to agents {', '.join(sorted(self.agents or ()))} "
                "and lacks the global-write right; use a key without an agent limit, or "
                "create one with `memstack keys create --agents ... --global-write`.",
                field=field,
            )

    def may_see(self, memory: Memory) -> bool:
        return memory.tenant == self.tenant and (
            self.agents is None or memory.scope == "global" or memory.agent_id in self.agents
        )

    def visible_scopes(self, scope: Scope | None) -> tuple[Scope, ...]:
        return (scope,) if scope else ("session", "agent", "global")
