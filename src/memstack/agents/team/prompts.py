"""What a team member is told: the team system prompt (with the "Shared Memory
(progressive disclosure)" section) and each turn's instructions."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from memstack.agents.team.board import BoardTask
from memstack.agents.team.members import TeamMember

__all__ = [
    "SHARED_MEMORY_PROMPT",
    "TASK_BOARD_PROMPT",
    "planning_instructions",
    "round_instructions",
    "team_system_prompt",
]

TASK_BOARD_PROMPT: Final = """\
## Task Board
- The team's work is a board of tasks; `board_list` shows them (status, assignee,
  dependencies) and which are claimable now (open, every dependency completed).
- Claim one claimable task with `board_claim`, do it, then call `board_complete` with
  its result. If you cannot do it, call `board_fail` with the reason; the tasks that
  depend on it fail too.
- Complete or fail only tasks you claimed. Leave the others to their assignees.
- Use `send_message` to tell a teammate something they need (to a name, or "*" for
  everyone) and `read_messages` to read what teammates sent you."""

SHARED_MEMORY_PROMPT: Final = """\
## Shared Memory (progressive disclosure)
- Teammates' results are NOT included in your prompt. Every completed board task appears
  in shared memory as a `task:<id>` entry holding the result it was completed with.
- Call `memory_list` (e.g. with key_prefix "task:") to discover what teammates have
  finished; it returns metadata only.
- Call `memory_read` with the keys you need (such as `task:<id>` for each dependency of
  the task you claimed) to fetch their full values.
- Call `memory_write` to publish a fact the team should know under `shared:<key>`.
- Pull only what you need — don't fetch every entry by reflex."""


def team_system_prompt(
    *, objective: str, member: TeamMember, team: Sequence[TeamMember], preamble: str = ""
) -> str:
    """The system prompt of a member's turn (a preamble to the default execution prompt)."""
    roster = "\n".join(
        f"- {m.name}: {m.role}" + (" (you)" if m.name == member.name else "") for m in team
    )
    parts = [
        preamble.strip(),
        f"# Team\nYou are {member.name} (role: {member.role}), one member of a team of agents "
        f"working together on one objective.\n\nObjective: {objective}\n\nTeam:\n{roster}",
        member.instructions.strip(),
        TASK_BOARD_PROMPT,
        SHARED_MEMORY_PROMPT,
    ]
    return "\n\n".join(p for p in parts if p)


def round_instructions(
    *,
    objective: str,
    member: TeamMember,
    round_no: int,
    max_rounds: int,
    claimable: Sequence[BoardTask],
    claimed: Sequence[BoardTask],
    unread: int,
) -> str:
    """The user message of a member's turn in one round."""
    lines = [
        f"{member.name}: round {round_no} of at most {max_rounds} for the team objective: "
        f"{objective}",
        f"Your role: {member.role}.",
        _tasks("Tasks claimable now", claimable),
    ]
    if claimed:
        lines.append(_tasks("Tasks you claimed and have not finished", claimed))
    if unread:
        lines.append(f"You have {unread} unread message(s): call `read_messages`.")
    lines.append(
        "Claim one claimable task with `board_claim`, do it, and complete it with "
        "`board_complete` (or `board_fail` with the reason). Then reply with a one-line "
        "status as plain text, without a tool call. If there is nothing for you to do, "
        "reply with that one-line status right away."
    )
    return "\n".join(lines)


def planning_instructions(*, objective: str, member: TeamMember, team: Sequence[TeamMember]) -> str:
    """The user message of the lead's planning turn."""
    roles = ", ".join(f"{m.name} ({m.role})" for m in team)
    return (
        f"{member.name}: plan the team's work. Objective: {objective}\n"
        f"The team: {roles}.\n"
        "Break the objective into tasks on the board with `board_add_task`: short ids, "
        "clear titles, and `depends_on` for tasks that need another's result (add a task "
        "after those it depends on). Do not do the tasks now; teammates claim them next. "
        "Then reply with a one-line summary of the plan as plain text, without a tool call."
    )


def _tasks(heading: str, tasks: Sequence[BoardTask]) -> str:
    if not tasks:
        return f"{heading}: none."
    rows = [f"- {t.id}: {t.title}" + _after(t) for t in tasks]
    return f"{heading}:\n" + "\n".join(rows)


def _after(task: BoardTask) -> str:
    return f" (uses the results of {', '.join(task.depends_on)})" if task.depends_on else ""
