"""Request and response bodies of the REST API (pydantic at the edge only), and the
parameter rules REST and MCP share.

The response models are what ``/openapi.json`` promises (and the MCP tools answer); the
``*_out`` functions build them from the domain values, so the JSON field names live here
once. A parameter both doors take (an id, a limit, a query) is one ``Annotated`` type
here, its bounds the service's constants, so the two cannot drift apart.
"""

from __future__ import annotations

from datetime import UTC, datetime
from functools import lru_cache
from typing import Annotated, Any, Final, Literal, TypeVar, get_args

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    Strict,
    StrictFloat,
    StrictInt,
    StrictStr,
    WithJsonSchema,
)

from memstack.service import knowledge as kb
from memstack.service.knowledge import (
    CHUNK_CHARS,
    MAX_DOCUMENT_CHARS,
    SYNC_PASSAGES,
    Document,
    DocumentInfo,
    DocumentStatus,
    KnowledgeHit,
)
from memstack.service.memories import (
    MAX_LIST_LIMIT,
    MAX_LIST_OFFSET,
    MAX_SEARCH_LIMIT,
    MemoryPage,
    SearchHit,
)
from memstack.service.paging import MAX_CURSOR_CHARS
from memstack.service.prompt import MAX_BUDGET, MIN_BUDGET, PromptContext
from memstack.service.ttl import MAX_TTL_SECONDS, MIN_TTL_SECONDS
from memstack.service.types import (
    ID_PART_PATTERN,
    MAX_ID_PART_CHARS,
    MAX_KEY_CHARS,
    MAX_PROVENANCE_DETAIL_CHARS,
    MAX_VALUE_CHARS,
    Memory,
)

ScopeName = Literal["session", "agent", "global"]
ClosedReasonName = Literal["superseded", "deleted", "evicted"]
ProvenanceName = Literal["user_stated", "extracted", "tool_output", "imported"]
PROVENANCE_HELP = (
    "How the memory was learned: user_stated (told by the user; the default of a new "
    "memory), extracted (by a model), tool_output, imported."
)
PROVENANCE_DETAIL_HELP = "More on provenance: the extraction model, the tool, the source."
PROVENANCE_FILTER_HELP = "Only memories of these provenances (any of them)."
AS_OF_HELP = (
    "Seconds since the epoch: answer with the versions valid at that moment (each carries "
    "the id of its memory) instead of the current ones."
)
ID_RULE = (
    f"1-{MAX_ID_PART_CHARS} characters: a letter or digit (any script), then letters, "
    "digits and _ . : @ / -"
)
ID_PATTERN: dict[str, Any] = {"pattern": ID_PART_PATTERN}
"""The id rule as JSON Schema (``json_schema_extra``). Documented, not checked here: the
service checks every id with Python's ``re`` (``check_id_part``), whose ``\\w`` pydantic's
regex engine reads otherwise, and its message names the field and the rule."""
MEMORY_ID_PATTERN: dict[str, Any] = {"pattern": r"^mem_[0-9a-f]{32}(?!\n)$"}
"""Every memory id (``types.memory_id``); another answers 404."""
DOCUMENT_ID_PATTERN: dict[str, Any] = {"pattern": r"^doc_[0-9a-f]{32}(?!\n)$"}
"""Every knowledge document id; another answers 404."""

# The parameters REST and MCP both take, each rule written once: a REST route wraps one in
# ``Query()`` or ``Path()`` where FastAPI needs the location (or is to show the type's
# description on the parameter), an MCP tool adds its own description around one, and a
# body's field adds ``Strict()`` (``Whole`` for a number). Defaults stay where a parameter
# is declared, named here when more than one door gives it.
_ID_PART: Final = Field(min_length=1, max_length=MAX_ID_PART_CHARS, json_schema_extra=ID_PATTERN)
IdPart = Annotated[StrictStr, _ID_PART]
"""A tenant, agent or session id in a body."""
AgentId = Annotated[str, _ID_PART, Field(description=ID_RULE)]
"""An agent id parameter."""
SessionId = AgentId
"""A session id parameter: the same rule as an agent id."""
MAX_RESOURCE_ID_CHARS: Final = 200
"""The longest memory or document id a parameter takes: far above a real one's 36
characters, so a longer one is refused before any lookup."""
MemoryId = Annotated[
    str,
    Field(
        min_length=1,
        max_length=MAX_RESOURCE_ID_CHARS,
        description="A memory's id (mem_...).",
        json_schema_extra=MEMORY_ID_PATTERN,
    ),
]
DocumentId = Annotated[
    str,
    Field(
        min_length=1,
        max_length=MAX_RESOURCE_ID_CHARS,
        description="A document's id (doc_...).",
        json_schema_extra=DOCUMENT_ID_PATTERN,
    ),
]
MemoryKey = Annotated[str, Field(min_length=1, max_length=MAX_KEY_CHARS)]
MemoryValue = Annotated[str, Field(min_length=1, max_length=MAX_VALUE_CHARS)]
"""A memory's value, or a query of the memories (as long as a value may be)."""
SearchMode = Literal["hybrid", "text", "semantic"]
SearchLimit = Annotated[int, Field(ge=1, le=MAX_SEARCH_LIMIT)]
DEFAULT_SEARCH_LIMIT: Final = 10
ListLimit = Annotated[int, Field(ge=1, le=MAX_LIST_LIMIT)]
ListOffset = Annotated[int, Field(ge=0, le=MAX_LIST_OFFSET)]
DEFAULT_LIST_LIMIT: Final = 50
Cursor = Annotated[str, Field(min_length=1, max_length=MAX_CURSOR_CHARS)]
CURSOR_HELP = "The next_cursor of the page before: the page after it, at any depth"
"""What a cursor is; each door ends the sentence (REST says how ``offset`` adds to it)."""
AsOf = Annotated[float | None, Field(allow_inf_nan=False, description=AS_OF_HELP)]
MIN_SCORE_HELP = (
    "Keep only the results whose calibrated relevance (0 to 1, the same scale for every "
    "query: the chance a result answers the query) is at least this; omitted: no cut."
)
MinScore = Annotated[
    float | None, Field(ge=0, le=1, allow_inf_nan=False, description=MIN_SCORE_HELP)
]
"""A threshold of the calibrated relevance (``longterm.calibration``), as every search,
recall and block of recalled memories takes it."""
METADATA_FILTER_HELP = (
    "Only memories whose metadata matches: each key equal to a value, or to one of "
    '{"$in": [values]} (strings, numbers, booleans, null); every key must match. Example: '
    '{"project": "apollo", "tier": {"$in": ["gold", "silver"]}}.'
)
MetadataFilter = Annotated[dict[str, Any] | None, Field(description=METADATA_FILTER_HELP)]
"""A search's metadata filter, read for every door by ``service.metadata_filter`` (which
names the key and the fix of a filter it refuses)."""
IncludeSuperseded = Annotated[
    bool, Field(description="Every version, current or closed, each with its validity.")
]
MAX_PROVENANCES: Final = len(get_args(ProvenanceName))
"""A provenance filter names each provenance at most once."""
Provenances = Annotated[
    list[ProvenanceName] | None,
    Field(min_length=1, max_length=MAX_PROVENANCES, description=PROVENANCE_FILTER_HELP),
]
ProvenanceDetail = Annotated[
    StrictStr | None,
    Field(min_length=1, max_length=MAX_PROVENANCE_DETAIL_CHARS, description=PROVENANCE_DETAIL_HELP),
]
"""A version's ``provenance_detail``, as every body and tool that takes one declares it."""
KnowledgeQuery = Annotated[str, Field(min_length=1, max_length=kb.MAX_QUERY_CHARS)]
"""A query of the knowledge documents, also the one ``get_context`` searches them with."""
KnowledgeLimit = Annotated[int, Field(ge=1, le=kb.MAX_SEARCH_LIMIT)]
DEFAULT_KNOWLEDGE_LIMIT: Final = 5
DocumentListLimit = Annotated[int, Field(ge=1, le=kb.MAX_LIST_LIMIT)]
DocumentListOffset = Annotated[int, Field(ge=0, le=kb.MAX_LIST_OFFSET)]
Budget = Annotated[
    int,
    Field(
        ge=MIN_BUDGET,
        le=MAX_BUDGET,
        description="Characters, at most; leave it out to inject every memory (the "
        "<memories> block then has no budget).",
    ),
]
_TTL_SECONDS: dict[str, Any] = {"minimum": MIN_TTL_SECONDS, "maximum": MAX_TTL_SECONDS}
Ttl = Annotated[
    Any,
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "string", "description": "An ISO 8601 time, at most ten years away."},
                {"type": "integer", **_TTL_SECONDS},
                {"type": "number", **_TTL_SECONDS},
                {"type": "null"},
            ]
        }
    ),
]
"""A TTL, taken as sent: its rule (``service.ttl``), types included, is checked by the
service, once for every way in (REST, MCP, client, library), and documented here."""


def _whole(value: object) -> object:
    """``10.0`` is the integer 10, as JSON Schema says; ``10.5`` stays a float and fails."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


_Rule = TypeVar("_Rule")
Whole = Annotated[_Rule, Strict(), BeforeValidator(_whole)]
"""A JSON integer under a rule (``Whole[SearchLimit]``): ``10`` or ``10.0``; never
``"10"``, ``true`` or ``10.5``."""
WholeNumber = Whole[int]


def seconds_of(value: object) -> object:
    """An ISO 8601 time (no zone: UTC) as seconds since the epoch; anything else as is."""
    if not isinstance(value, str):
        return value
    try:
        moment = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(
            f"{value[:40]!r} is not a time: give an ISO 8601 time such as "
            '"2026-01-01T09:30:00.000Z", as an export writes it, or seconds since the epoch'
        ) from None
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


Moment = Annotated[StrictFloat | StrictInt, BeforeValidator(seconds_of)]
"""A time: ISO 8601 (as the API writes them) or seconds since the epoch."""


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class MemoryCreate(_Body):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "agent_id": "support-bot",
                    "key": "preferred_language",
                    "value": "The user prefers answers in French.",
                    "scope": "agent",
                    "ttl": 86400,
                }
            ]
        }
    )
    agent_id: IdPart = Field(description=ID_RULE)
    key: Annotated[MemoryKey, Strict()]
    value: Annotated[MemoryValue, Strict()]
    scope: ScopeName = "agent"
    session_id: IdPart | None = Field(
        default=None,
        description=f"Only for scope 'session'; omitted, the session is 'default'. {ID_RULE}",
    )
    metadata: dict[str, Any] | None = None
    ttl: Ttl = Field(
        default=None,
        description="When the memory expires: an ISO 8601 time, or seconds from now. "
        "A time already past stores the memory expired: no read shows it.",
    )
    provenance: ProvenanceName | None = Field(
        default=None,
        description=f"{PROVENANCE_HELP} Omitted: an update keeps the memory's provenance.",
    )
    provenance_detail: ProvenanceDetail = None


class MemoryUpdate(_Body):
    value: Annotated[MemoryValue, Strict()] | None = None
    metadata: dict[str, Any] | None = None
    ttl: Ttl = Field(default=None, description="null removes the TTL; omit to keep it.")
    provenance: ProvenanceName | None = Field(
        default=None,
        description="Omit to keep it; a new one without provenance_detail drops the old detail.",
    )
    provenance_detail: ProvenanceDetail = None


class SearchRequest(_Body):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [{"query": "which language?", "agent_id": "support-bot", "limit": 5}]
        }
    )
    query: Annotated[MemoryValue, Strict()]
    agent_id: IdPart | None = Field(default=None, description=ID_RULE)
    scope: ScopeName | None = None
    session_id: IdPart | None = Field(default=None, description=ID_RULE)
    key: Annotated[MemoryKey, Strict()] | None = None
    mode: SearchMode = "hybrid"
    limit: Whole[SearchLimit] = DEFAULT_SEARCH_LIMIT
    as_of: Annotated[AsOf, Strict()] = None
    provenances: Provenances = None
    min_score: Annotated[MinScore, Strict()] = None
    metadata: MetadataFilter = None


class KnowledgeCreate(_Body):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "title": "Refund policy",
                    "text": "Refunds are paid within 14 days of the return arriving.",
                    "tags": ["policy"],
                }
            ]
        }
    )
    title: StrictStr = Field(min_length=1, max_length=kb.MAX_TITLE_CHARS)
    text: StrictStr = Field(
        min_length=1,
        max_length=MAX_DOCUMENT_CHARS,
        description=(
            f"Split into passages of about {CHUNK_CHARS} characters, each embedded. Up to "
            f"{SYNC_PASSAGES} passages (about 100 kB of prose) are embedded before the answer "
            "(201, status ready); a longer text, up to 10 MiB, is embedded in the background "
            "(202, status indexing, progress at the Location given)."
        ),
    )
    tags: list[StrictStr] | None = Field(default=None, max_length=kb.MAX_TAGS)
    source: StrictStr | None = Field(default=None, max_length=kb.MAX_SOURCE_CHARS)


class KnowledgeSearch(_Body):
    model_config = ConfigDict(json_schema_extra={"examples": [{"query": "refunds", "limit": 3}]})
    query: Annotated[KnowledgeQuery, Strict()]
    limit: Whole[KnowledgeLimit] = DEFAULT_KNOWLEDGE_LIMIT


ErrorCode = Literal[
    "malformed_json",
    "invalid_input",
    "unauthorized",
    "forbidden",
    "not_found",
    "method_not_allowed",
    "too_large",
    "unavailable",
    "config_error",
    "http_error",
]


class FieldError(BaseModel):
    field: str
    message: str


class ErrorInfo(BaseModel):
    code: ErrorCode
    message: str = Field(description="What went wrong and how to fix the request.")
    field: str | None = Field(description="The request field at fault, when one is.")
    details: list[FieldError] | None = Field(
        default=None, description="Every field at fault (validation errors only)."
    )


class ErrorResponse(BaseModel):
    """Every error the server answers: ``{"error": {"code", "message", "field"}}``."""

    error: ErrorInfo


class MemoryOut(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "id": "mem_3f1c0b5e9a7d4c2e8b6a1d0f9e8c7b6a",
                    "agent_id": "support-bot",
                    "scope": "agent",
                    "key": "preferred_language",
                    "value": "The user prefers answers in French.",
                    "session_id": None,
                    "metadata": {},
                    "expires_at": "2026-01-02T09:30:00.000Z",
                    "created_at": "2026-01-01T09:30:00.000Z",
                    "updated_at": "2026-01-01T09:30:00.000Z",
                    "valid_from": "2026-01-01T09:30:00.000Z",
                    "valid_to": None,
                    "superseded_by": None,
                    "closed_reason": None,
                    "version_id": "ver_5d2c8e1f0a9b4c3d8e7f6a5b4c3d2e1f",
                    "provenance": "user_stated",
                    "provenance_detail": None,
                }
            ]
        }
    )
    id: str = Field(description="The memory's id; a past version carries it too.")
    agent_id: str
    scope: ScopeName
    key: str
    value: str
    session_id: str | None
    metadata: dict[str, Any]
    expires_at: str | None = Field(description="ISO 8601 UTC; null: no TTL.")
    created_at: str
    updated_at: str
    valid_from: str = Field(description="ISO 8601 UTC: since when this version's value holds.")
    valid_to: str | None = Field(
        description="ISO 8601 UTC: until when it held; null while it is the current version."
    )
    superseded_by: str | None = Field(
        description="The version_id of the version that came after this one (the new value "
        "that replaced it); null while current. A version closed before versions had ids "
        "names the memory's id."
    )
    closed_reason: ClosedReasonName | None = Field(
        description="Why valid_to is set: a new value (superseded) or the memory cap "
        "(evicted); null while current."
    )
    version_id: str | None = Field(
        default=None,
        description="This version's own id, kept when it is closed: what superseded_by of "
        "the version before names. null only on a version written before versions had ids.",
    )
    provenance: ProvenanceName | None = Field(
        description=f"{PROVENANCE_HELP} null: stored before memories had provenance."
    )
    provenance_detail: str | None = Field(description=PROVENANCE_DETAIL_HELP)


class MemoryHistoryOut(BaseModel):
    id: str
    versions: list[MemoryOut] = Field(
        description="Every version kept, oldest first; the last is the current one, or the "
        "evicted one."
    )


class MemoryPageOut(BaseModel):
    memories: list[MemoryOut]
    total: int
    limit: int
    offset: int
    next_cursor: str | None = Field(
        description="Pass it as cursor to get the page after this one (at any depth, "
        "stable while memories are stored); null on the last page."
    )


class SearchHitOut(BaseModel):
    memory: MemoryOut
    score: float
    similarity: float
    keyword: float
    provenance: ProvenanceName | None = Field(
        description="The memory's provenance, beside the scores that ranked it."
    )
    calibrated: float = Field(
        description="score as the chance (0 to 1) that the memory answers the query, the "
        "same scale for every query: what min_score cuts at."
    )


class SearchResults(BaseModel):
    results: list[SearchHitOut]


class Deleted(BaseModel):
    deleted: bool
    id: str


class DeletedCount(BaseModel):
    deleted: int = Field(description="How many memories were deleted, from every tier.")


class ContextOut(BaseModel):
    memories: list[MemoryOut]
    memories_block: str = Field(description="The <memories> block; empty when none.")
    knowledge_block: str = Field(description="The <knowledge> block; empty when none.")
    prompt: str = Field(description="Both blocks, ready to inject before the agent runs.")


class DocumentSummary(BaseModel):
    id: str
    title: str
    tags: list[str]
    source: str | None
    created_at: str
    chars: int
    status: DocumentStatus = Field(
        description="indexing while its passages are embedded (each searchable once "
        "stored), then ready; failed when indexing could not go on (see error)."
    )
    passages_done: int = Field(description="Passages embedded and searchable so far.")
    passages_total: int
    error: str | None = Field(description="Why indexing failed; null otherwise.")


class DocumentOut(DocumentSummary):
    text: str


class DocumentPage(BaseModel):
    documents: list[DocumentSummary]
    total: int
    limit: int
    offset: int


class KnowledgeHitOut(BaseModel):
    document_id: str
    title: str
    passage: str
    score: float


class KnowledgeResults(BaseModel):
    results: list[KnowledgeHitOut]


TierState = Literal["up", "down"]


class Health(BaseModel):
    """What ``/healthz`` answers: 200 with ``status`` ``ok`` while the long-term tier
    answers, 503 with ``degraded`` while it does not. The short-term tier is a cache of
    the long-term one: while it is down every request is still served (from the
    long-term tier), so it shows ``down`` here and ``status`` stays ``ok``."""

    status: Literal["ok", "degraded"] = Field(
        description="`ok` (200): every request can be served; `degraded` (503): the "
        "long-term tier is down, and requests that need it answer 503 with `Retry-After`."
    )
    long_term: TierState = Field(
        description="The long-term tier (SQLite or PostgreSQL): `up` if it answered just now."
    )
    short_term: Literal["up", "down", "in-process"] = Field(
        description="The short-term tier: Redis `up` or `down`, or `in-process` (no Redis; "
        "it lives in this server process)."
    )


@lru_cache(maxsize=8_192)
def iso(ts: float) -> str:
    """``ts`` as ISO 8601 UTC with milliseconds. Remembered: a listing or search answers
    with three times a memory, and the same memories come back request after request; a
    lookup costs a fraction of formatting one again."""
    return (
        datetime.fromtimestamp(ts, tz=UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    )


def memory_out(memory: Memory) -> MemoryOut:
    return MemoryOut(
        id=memory.id,
        agent_id=memory.agent_id,
        scope=memory.scope,
        key=memory.key,
        value=memory.value,
        session_id=memory.session_id,
        metadata=memory.metadata,
        expires_at=None if memory.expires_at is None else iso(memory.expires_at),
        created_at=iso(memory.created_at),
        updated_at=iso(memory.updated_at),
        valid_from=iso(memory.starts),
        valid_to=None if memory.valid_to is None else iso(memory.valid_to),
        superseded_by=memory.superseded_by,
        closed_reason=memory.closed_reason,
        version_id=memory.version_id,
        provenance=memory.provenance,
        provenance_detail=memory.provenance_detail,
    )


def history_out(memory_id: str, versions: list[Memory]) -> MemoryHistoryOut:
    return MemoryHistoryOut(id=memory_id, versions=[memory_out(m) for m in versions])


def page_out(page: MemoryPage) -> MemoryPageOut:
    return MemoryPageOut(
        memories=[memory_out(m) for m in page.memories],
        total=page.total,
        limit=page.limit,
        offset=page.offset,
        next_cursor=page.next_cursor,
    )


def hit_out(hit: SearchHit) -> SearchHitOut:
    return SearchHitOut(
        memory=memory_out(hit.memory),
        score=hit.score,
        similarity=hit.similarity,
        keyword=hit.keyword,
        provenance=hit.provenance,
        calibrated=hit.calibrated,
    )


def context_out(found: PromptContext) -> ContextOut:
    return ContextOut(
        memories=[memory_out(m) for m in found.memories],
        memories_block=found.memories_block,
        knowledge_block=found.knowledge_block,
        prompt=found.prompt,
    )


def document_summary(doc: DocumentInfo) -> DocumentSummary:
    return DocumentSummary(
        id=doc.id,
        title=doc.title,
        tags=list(doc.tags),
        source=doc.source,
        created_at=iso(doc.created_at),
        chars=doc.chars,
        status=doc.status,
        passages_done=doc.passages_done,
        passages_total=doc.passages_total,
        error=doc.error,
    )


def document_out(doc: Document) -> DocumentOut:
    return DocumentOut(**document_summary(doc).model_dump(), text=doc.text)


def knowledge_hit_out(hit: KnowledgeHit) -> KnowledgeHitOut:
    return KnowledgeHitOut(
        document_id=hit.document_id, title=hit.title, passage=hit.passage, score=hit.score
    )
