"""The values ``UserMemories`` takes and hands back (``memstack.service.users``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final, Literal, get_args

from memstack._json import JSON
from memstack.longterm.types import LongTermItem

__all__ = [
    "JOB_STATES",
    "OUTCOMES",
    "AddTurnsResult",
    "JobState",
    "JobStatus",
    "Outcome",
    "Page",
    "RememberedFact",
    "RestoreResult",
    "TurnIn",
    "TurnOutcome",
    "UserPage",
]

Outcome = Literal["stored", "duplicate", "refused", "skipped"]
"""``duplicate``: already stored (a turn sent again with its ``id``, or a fact close to
a stored one); ``refused``: the secret filter refused it (``reason`` says where);
``skipped``: the request vetoed long-term memory (``memory_enabled=False``)."""
OUTCOMES: Final[tuple[Outcome, ...]] = get_args(Outcome)
JobState = Literal["queued", "running", "done", "failed"]
JOB_STATES: Final[tuple[JobState, ...]] = get_args(JobState)


@dataclass(frozen=True, kw_only=True)
class TurnIn:
    """One conversation turn as a client sends it."""

    speaker: str
    text: str
    session_id: str
    time: float | None = None
    """Seconds since the epoch; None: now."""
    id: str | None = None
    """The turn's id: sending it again is answered ``duplicate`` (a retry is idempotent);
    None: a fresh one."""
    metadata: dict[str, JSON] | None = None


@dataclass(frozen=True, kw_only=True)
class TurnOutcome:
    id: str
    """The turn's id: the one given, or the one made for it (also when not stored)."""
    outcome: Outcome
    reason: str | None = None


@dataclass(frozen=True, kw_only=True)
class AddTurnsResult:
    turns: list[TurnOutcome]
    """One per turn sent, in order."""
    job_id: str | None = None
    """The extraction job of the turns stored, when the server has an extraction model
    and some turn was stored; ``UserMemories.job`` follows it."""


@dataclass(frozen=True, kw_only=True)
class RememberedFact:
    id: str | None
    """The stored fact's id; for a ``duplicate``, the stored fact it duplicates; None
    when refused or skipped."""
    outcome: Outcome
    reason: str | None = None


@dataclass(frozen=True, kw_only=True)
class Page:
    """A page of a user's memories, newest first."""

    items: list[LongTermItem]
    next_cursor: str | None = None
    """Pass it back for the next page; None on the last."""


@dataclass(frozen=True, kw_only=True)
class UserPage:
    """A page of a tenant's users that hold a memory, by id."""

    users: list[str]
    next_cursor: str | None = None
    """Pass it back for the next page; None on the last."""


@dataclass(frozen=True, kw_only=True)
class RestoreResult:
    stored: int
    skipped: int = 0
    """Memories left as they were: the store held that id already (a restore without
    ``replace``)."""


@dataclass(frozen=True, kw_only=True)
class JobStatus:
    """One extraction job: what became of the memories mined from some stored turns."""

    id: str
    state: JobState
    stored: list[str] = field(default_factory=list)
    """Ids of the memories it stored (the new versions of those it updated)."""
    error: str | None = None
    """Why it failed (``state == "failed"``)."""
    created_at: float
    updated_at: float
