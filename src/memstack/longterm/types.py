"""Values long-term memory hands back: stored items, recalled items, write outcomes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final, Literal, get_args

from memstack._json import JSON
from memstack.longterm.scoring import ScoreBreakdown

__all__ = [
    "LTM_KINDS",
    "PROVENANCES",
    "Candidate",
    "LongTermItem",
    "LtmKind",
    "Provenance",
    "RecalledMemory",
    "RememberOutcome",
    "RememberStatus",
]

LtmKind = Literal["preference", "identity", "project", "decision", "event", "fact"]
LTM_KINDS: Final[tuple[LtmKind, ...]] = get_args(LtmKind)

RememberStatus = Literal["stored", "secret", "duplicate", "unchanged", "retired"]
"""``unchanged``: reconciliation found it already stored; ``retired``: reconciliation
closed the validity of the stored memory it contradicts (``id``) and stored nothing."""

Provenance = Literal["user_stated", "extracted", "tool_output", "imported"]
"""How a memory was learned: said by the user (or a speaker of a conversation stored
verbatim), extracted by a model, taken from a tool's output, or imported from elsewhere."""
PROVENANCES: Final[tuple[Provenance, ...]] = get_args(Provenance)


@dataclass(frozen=True, kw_only=True)
class Candidate:
    """Something to remember, before the secret filter and dedupe have seen it."""

    text: str
    kind: LtmKind = "fact"
    importance: float = 0.5
    created_at: float | None = None
    """When it happened; defaults to now. It is also when the memory starts being valid."""
    metadata: dict[str, JSON] = field(default_factory=dict)
    supersedes: tuple[str, ...] = ()
    """Ids of current memories this one replaces: each is closed (kept as history, left
    out of recall) from this one's ``created_at`` and points to it."""
    provenance: Provenance = "user_stated"
    provenance_detail: str | None = None
    """The extraction model, the tool, or the source it was imported from."""


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
    valid_from: float | None = None
    """Since when it holds (None: since ``created_at``)."""
    valid_to: float | None = None
    """Until when it held; None while it is current."""
    superseded_by: str | None = None
    """The id of the memory that replaced it."""
    closed_reason: str | None = None
    """Why it stopped being current: ``superseded``, ``deleted`` or ``evicted``."""
    provenance: str | None = None
    """How it was learned (``Provenance``); None for memories stored before provenance."""
    provenance_detail: str | None = None

    @property
    def current(self) -> bool:
        """Whether it is still current (not superseded, deleted or evicted)."""
        return self.valid_to is None


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
