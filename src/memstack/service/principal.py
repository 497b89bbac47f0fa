"""Who is asking: the authenticated tenant, and the agents a key may act for."""

from __future__ import annotations

from dataclasses import dataclass

from memstack.errors import InvalidInput
from memstack.service.types import Memory, Scope, check_id_part

__all__ = ["Forbidden", "Principal"]


class Forbidden(InvalidInput):
    """The caller's key may not act for that agent."""


@dataclass(frozen=True, kw_only=True)
class Principal:
    """Every service call is scoped to ``tenant``; a key bound to ``agents`` may only
    act for those agents (global memories stay readable and writable as shared facts)."""

    tenant: str
    agents: frozenset[str] | None = None
    """None: any agent of the tenant."""

    def __post_init__(self) -> None:
        check_id_part(self.tenant, "tenant")

    def check_agent(self, agent_id: str) -> None:
        if self.agents is not None and agent_id not in self.agents:
            raise Forbidden(
                f"this API key may not act for agent {agent_id!r}; "
                f"it is limited to {', '.join(sorted(self.agents))}.",
                field="agent_id",
            )

    def may_see(self, memory: Memory) -> bool:
        return memory.tenant == self.tenant and (
            self.agents is None or memory.scope == "global" or memory.agent_id in self.agents
        )

    def visible_scopes(self, scope: Scope | None) -> tuple[Scope, ...]:
        return (scope,) if scope else ("session", "agent", "global")
