"""What the memory server's REST API returns, as the client gives it back: TypedDicts of
the JSON bodies (``server/schemas.py`` is the other side), so mypy checks every field a
caller reads while the values stay the plain dicts and lists the server sent."""

from __future__ import annotations

from typing import Literal, NotRequired, TypedDict

from memstack._json import JSON

__all__ = [
    "ClosedReason",
    "Context",
    "Deleted",
    "DeletedCount",
    "Document",
    "DocumentPage",
    "DocumentStatus",
    "DocumentSummary",
    "Health",
    "Job",
    "JobState",
    "KnowledgeHit",
    "KnowledgeResults",
    "Memory",
    "MemoryBatch",
    "MemoryHistory",
    "MemoryKind",
    "MemoryPage",
    "Provenance",
    "RecallResults",
    "RecallScores",
    "RecalledContext",
    "RecalledMemory",
    "RememberedFact",
    "Restored",
    "Scope",
    "SearchHit",
    "SearchMode",
    "SearchResults",
    "TurnIn",
    "TurnOutcome",
    "TurnsAdded",
    "UserExport",
    "UserHistory",
    "UserImported",
    "UserList",
    "UserMemory",
    "UserMemoryPage",
    "WriteOutcome",
]

Scope = Literal["session", "agent", "global"]
SearchMode = Literal["hybrid", "text", "semantic"]
ClosedReason = Literal["superseded", "deleted", "evicted"]
Provenance = Literal["user_stated", "extracted", "tool_output", "imported"]
DocumentStatus = Literal["indexing", "ready", "failed"]
"""A knowledge document's: ``indexing`` while its passages are embedded (each searchable
once stored), ``ready``, or ``failed`` (its ``error`` says why)."""
"""How a memory was learned: told by the user (the default of a new memory), extracted by
a model, taken from a tool's output, or imported."""


class Memory(TypedDict):
    id: str
    agent_id: str
    scope: Scope
    key: str
    value: str
    session_id: str | None
    metadata: dict[str, JSON]
    expires_at: str | None
    """ISO 8601 UTC; None: no TTL."""
    created_at: str
    updated_at: str
    valid_from: str
    """ISO 8601 UTC: since when this version's value holds."""
    valid_to: str | None
    """ISO 8601 UTC: until when it held; None while it is the current version."""
    superseded_by: str | None
    """The ``version_id`` of the version that came after this one; None while current."""
    closed_reason: ClosedReason | None
    version_id: NotRequired[str | None]
    """This version's own id, kept when it is closed (absent from older servers)."""
    provenance: Provenance | None
    """None: stored before memories had provenance."""
    provenance_detail: str | None
    """The extraction model, the tool, the source imported from."""


class MemoryHistory(TypedDict):
    id: str
    versions: list[Memory]
    """Oldest first; the last is the current version, or the evicted one."""


class MemoryPage(TypedDict):
    memories: list[Memory]
    total: int
    limit: int
    offset: int
    next_cursor: str | None
    """Pass it as ``cursor`` for the page after this one; None on the last page."""


class MemoryBatch(TypedDict):
    memories: list[Memory]
    """The memories of a ``store_many``, as stored, in the order given."""


class Restored(TypedDict):
    restored: int
    """Memories written, each with all its versions."""
    versions: int
    skipped: int
    """Memories the store held already, left as they were (no ``replace``)."""


class SearchHit(TypedDict):
    memory: Memory
    score: float
    similarity: float
    keyword: float
    provenance: Provenance | None
    calibrated: float
    """``score`` as the chance (0 to 1) that the memory answers the query, the same scale
    for every query: what ``min_score`` cuts at."""


class SearchResults(TypedDict):
    results: list[SearchHit]


class Deleted(TypedDict):
    deleted: bool
    id: str


class DeletedCount(TypedDict):
    deleted: int


class Context(TypedDict):
    memories: list[Memory]
    memories_block: str
    knowledge_block: str
    prompt: str


class DocumentSummary(TypedDict):
    id: str
    title: str
    tags: list[str]
    source: str | None
    created_at: str
    chars: int
    status: DocumentStatus
    passages_done: int
    passages_total: int
    error: str | None


class Document(DocumentSummary):
    text: str


class DocumentPage(TypedDict):
    documents: list[DocumentSummary]
    total: int
    limit: int
    offset: int


class KnowledgeHit(TypedDict):
    document_id: str
    title: str
    passage: str
    score: float


class KnowledgeResults(TypedDict):
    results: list[KnowledgeHit]


class Health(TypedDict):
    status: Literal["ok", "degraded"]
    long_term: Literal["up", "down"]
    short_term: Literal["up", "down", "in-process"]


# -- a user's conversation memory (``/api/users/{user_id}/...``) ------------------------

MemoryKind = Literal["preference", "identity", "project", "decision", "event", "fact"]
"""What a fact of a user is about (``remember``); a stored turn is an ``event``."""
WriteOutcome = Literal["stored", "duplicate", "refused", "skipped"]
"""What became of a turn or a fact: ``refused`` by the secret filter (``reason`` says
why), ``skipped`` because the request vetoed long-term memory (``memory_enabled=False``)."""
JobState = Literal["queued", "running", "done", "failed"]


class TurnIn(TypedDict):
    """One conversation turn to store, as said. ``time``: ISO 8601 or seconds since the
    epoch (default now); ``id`` makes a retry idempotent."""

    speaker: str
    text: str
    session_id: str
    time: NotRequired[str | float]
    id: NotRequired[str]
    metadata: NotRequired[dict[str, JSON]]


class TurnOutcome(TypedDict):
    id: str
    outcome: WriteOutcome
    reason: str | None


class TurnsAdded(TypedDict):
    turns: list[TurnOutcome]
    """One per turn sent, in the order sent."""
    job_id: str | None
    """The extraction job queued for these turns (``get_job``); None without a model."""


class Job(TypedDict):
    id: str
    state: JobState
    stored: list[str]
    """Ids of the memories the extraction stored."""
    error: str | None
    created_at: str
    updated_at: str


class RememberedFact(TypedDict):
    id: str | None
    outcome: WriteOutcome
    reason: str | None


class UserMemory(TypedDict):
    """A stored turn or fact, one version of it (``valid_to`` set on a closed one)."""

    id: str
    text: str
    kind: str
    importance: float
    metadata: dict[str, JSON]
    """A turn's own metadata, as it was given."""
    provenance: Provenance | None
    provenance_detail: str | None
    created_at: str
    updated_at: str
    last_accessed_at: str | None
    valid_from: str
    valid_to: str | None
    superseded_by: str | None
    closed_reason: ClosedReason | None
    session_id: str | None
    """The turn's session; None for a fact."""
    speaker: str | None
    turn_seq: int | None
    """The turn's place in its session; None for a fact."""


class RecallScores(TypedDict):
    """The terms that ranked a recalled memory (``longterm.scoring.ScoreBreakdown``)."""

    score: float
    similarity: float
    keyword: float
    relevance: float
    recency: float
    importance: float
    session: float
    speaker: float
    time: float
    calibrated: float
    """The chance (0 to 1) that the memory answers the query, the same scale for every
    query: what ``min_score`` cuts at (``score`` ranks)."""
    inherited_from: str | None
    """The id of a version it replaced whose match it carries; None: its own."""


class RecalledMemory(UserMemory):
    score: float
    scores: RecallScores


class RecallResults(TypedDict):
    results: list[RecalledMemory]
    """Best first, ranked as the library ranks them in process."""


class RecalledContext(TypedDict):
    block: str
    """The ``<recalled-memories>`` block to inject before the user's message; "" if none."""


class UserMemoryPage(TypedDict):
    memories: list[UserMemory]
    next_cursor: str | None
    """Pass it as ``cursor`` for the page after this one; None on the last page."""


class UserList(TypedDict):
    users: list[str]
    """User ids of the key's tenant that hold a memory, in id order."""
    next_cursor: str | None
    """Pass it as ``cursor`` for the page after this one; None on the last page."""


class UserHistory(TypedDict):
    versions: list[UserMemory]
    """Oldest first; the last is the current one."""


class UserExport(TypedDict):
    memories: list[dict[str, JSON]]
    """Every turn, fact and version of the user, as ``import_user`` takes them back."""


class UserImported(TypedDict):
    stored: int
    skipped: int
    """Memories the user held already, left as they were (no ``replace``)."""
