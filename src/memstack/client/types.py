"""What the memory server's REST API returns, as the client gives it back: TypedDicts of
the JSON bodies (``server/schemas.py`` is the other side), so mypy checks every field a
caller reads while the values stay the plain dicts and lists the server sent."""

from __future__ import annotations

from typing import Literal, TypedDict

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
    "KnowledgeHit",
    "KnowledgeResults",
    "Memory",
    "MemoryHistory",
    "MemoryPage",
    "Provenance",
    "Restored",
    "Scope",
    "SearchHit",
    "SearchMode",
    "SearchResults",
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
    """The id of the memory whose newer version replaced this one."""
    closed_reason: ClosedReason | None
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
