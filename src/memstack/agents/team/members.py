"""TeamMember: one agent of a team, with its role and its own tools."""

from __future__ import annotations

from dataclasses import dataclass

from memstack.agents.team.bus import BROADCAST
from memstack.errors import InvalidInput
from memstack.tools import Tool

__all__ = ["TeamMember"]


@dataclass(frozen=True, kw_only=True)
class TeamMember:
    name: str
    """Unique in the team; teammates send messages to it."""
    role: str
    """One line, e.g. "researcher: finds and summarizes sources"."""
    instructions: str = ""
    """Extra guidance for this member, added to its system prompt."""
    tools: tuple[Tool, ...] = ()
    """Tools only this member has (they win over shared tools of the same name)."""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip() or self.name == BROADCAST:
            raise InvalidInput(
                f"a team member needs a non-empty name other than {BROADCAST!r}; "
                f"got {self.name!r}.",
                field="name",
            )
        if not isinstance(self.role, str) or not self.role.strip():
            raise InvalidInput(f"team member {self.name!r} needs a role.", field="role")
        if not isinstance(self.instructions, str):
            raise InvalidInput(
                f"team member {self.name!r}: instructions must be a string.",
                field="instructions",
            )
        object.__setattr__(self, "tools", tuple(self.tools))
        if not all(isinstance(t, Tool) for t in self.tools):
            raise InvalidInput(
                f"team member {self.name!r}: tools must be Tool instances.", field="tools"
            )
