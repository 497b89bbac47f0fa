"""Values long-term memory hands back: stored items, recalled items, write outcomes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final, Literal, get_args

from memstack._json import JSON
from memstack.longterm.scoring import ScoreBreakdown

__all__ = [
    "LTM_KINDS",
    "Candidate",
    "LongTermItem",
    "LtmKind",
    "RecalledMemory",
    "RememberOutcome",
    "RememberStatus",
]

LtmKind = Literal["preference", "identity", "project", "decision", "event", "fact"]
LTM_KINDS: Final[tuple[LtmKind, ...]] = get_args(LtmKind)

RememberStatus = Literal["stored", "secret", "duplicate"]


@dataclass(frozen=True, kw_only=True)
class Candidate:
    """Something to remember, before the secret filter and dedupe have seen it."""

    text: str
    kind: LtmKind = "fact"
    importance: float = 0.5
    created_at: float | None = None
    """When it happened; defaults to now."""
    metadata: dict[str, JSON] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class LongTermItem:
    id: str
    text: str
    kind: str
    importance: float
    created_at: float
    updated_at: float
    last_accessed_at: float | None
    metadata: dict[str, JSON]
    context: str | None = None
    """What keyword search read beside the text (a turn's neighbours); not the memory."""


@dataclass(frozen=True, kw_only=True)
class RecalledMemory(LongTermItem):
    """A recalled item with the score breakdown that ranked it."""

    scores: ScoreBreakdown

    @property
    def score(self) -> float:
        return self.scores.score


@dataclass(frozen=True, kw_only=True)
class RememberOutcome:
    """What became of one candidate: stored, or refused and why."""

    status: RememberStatus
    text: str
    id: str | None = None
    """The stored item's id when ``status == "stored"``."""
    duplicate_of: str | None = None
    """The existing item it duplicates when ``status == "duplicate"``."""
    similarity: float | None = None
    secret_kind: str | None = None
    """Which credential shape matched when ``status == "secret"``."""
