"""Bodies and answers of the per-user long-term memory routes (``/api/users/...``).

A conversation turn comes in either of the shapes agent builders already hold: memstack's
own (``speaker``, ``text``) or an OpenAI-style chat message (``role``, ``content``,
``name``). ``turns_in`` makes one ``TurnIn`` of either, naming the field at fault when a
turn is neither. Times come as ISO 8601 or seconds since the epoch (``Moment``) and go
out as ISO 8601 UTC, as every other answer of the API writes them. A stored turn's
``speaker``, ``session_id`` and ``turn_seq`` are lifted out of its metadata, so
``metadata`` is what the caller gave, as sent.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Final, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    Strict,
    StrictBool,
    StrictStr,
    WithJsonSchema,
)

from memstack.errors import InvalidInput
from memstack.longterm.calibration import CONTEXT_MIN_SCORE
from memstack.longterm.memory import MAX_K, MAX_TEXT_CHARS
from memstack.longterm.turns import MAX_SPEAKER_CHARS, TURN_KEYS
from memstack.longterm.types import LongTermItem, LtmKind, RecalledMemory
from memstack.service.user_export import MAX_RESTORE_ITEMS
from memstack.service.user_turns import MAX_TURNS
from memstack.service.users import MAX_PAGE, AddTurnsResult, JobStatus, RememberedFact, TurnIn
from memstack.transports.schemas import (
    ID_RULE,
    MAX_RESOURCE_ID_CHARS,
    AgentId,
    MinScore,
    Provenances,
    Whole,
    iso,
    seconds_of,
)

__all__ = [
    "CONTEXT_MIN_SCORE_HELP",
    "MAX_FACT_SUPERSEDES",
    "MAX_TURNS",
    "BlockOut",
    "ErasedOut",
    "ExportOut",
    "FactCreate",
    "FactOut",
    "ImportOut",
    "ImportRequest",
    "JobOut",
    "RecallK",
    "RecallOut",
    "RecallRequest",
    "RecalledOut",
    "ScoresOut",
    "TurnBody",
    "TurnOutcomeOut",
    "TurnsOut",
    "TurnsRequest",
    "UserId",
    "UserList",
    "UserListLimit",
    "UserMemoryOut",
    "UserMemoryPage",
    "UserQuery",
    "UserSession",
    "VersionsOut",
    "fact_out",
    "job_out",
    "recalled_out",
    "turns_in",
    "turns_out",
    "user_memory_out",
]

MAX_FACT_SUPERSEDES: Final = 100
_EARLIEST: Final = -62_135_596_800.0  # 0001-01-01T00:00:00Z
_LATEST: Final = 253_402_300_799.0  # 9999-12-31T23:59:59Z

UserId = Annotated[
    AgentId,
    Field(description=f"The user's id, within the key's tenant. {ID_RULE}, except /"),
]
"""A user id parameter: the id rule of agents and sessions."""
UserQuery = Annotated[str, Field(min_length=1, max_length=MAX_TEXT_CHARS)]
"""What to recall memories for."""
RecallK = Annotated[int, Field(ge=1, le=MAX_K, description="How many memories, at most.")]
CONTEXT_MIN_SCORE_HELP = (
    "Keep only the memories whose calibrated relevance (0 to 1, the same scale for every "
    f"query) is at least this; omitted: {CONTEXT_MIN_SCORE}, so a message about nothing "
    "remembered gets an empty block; 0 keeps all k."
)
UserListLimit = Annotated[int, Field(ge=1, le=MAX_PAGE)]
UserSession = Annotated[
    StrictStr,
    Field(
        min_length=1,
        max_length=MAX_SPEAKER_CHARS,
        description="A conversation session: recall favours what was said in it.",
    ),
]
_FactText = Annotated[StrictStr, Field(min_length=1, max_length=MAX_TEXT_CHARS)]
_TurnText = Annotated[
    StrictStr, Field(min_length=1, max_length=MAX_TEXT_CHARS - MAX_SPEAKER_CHARS - 2)
]
"""A turn's text: room is left for ``"<speaker>: "`` within a memory's limit."""
_Name = Annotated[StrictStr, Field(min_length=1, max_length=MAX_SPEAKER_CHARS)]
_ItemId = Annotated[StrictStr, Field(min_length=1, max_length=MAX_RESOURCE_ID_CHARS)]
_MemoryEnabled = Annotated[
    StrictBool | None,
    Field(
        description="false: this request stores nothing and recalls nothing (a user's own "
        "opt-out); omitted: as the server and the key say."
    ),
]


def _time(value: object) -> float:
    """``value`` as seconds since the epoch, or one ``ValueError`` saying what a time is
    (a union's error per member would name ``time.float`` and ``time.int``)."""
    moment = seconds_of(value)
    if isinstance(moment, bool) or not isinstance(moment, int | float):
        raise ValueError(
            "give a time as ISO 8601 (such as 2026-05-08T09:00:00Z) or seconds since the epoch"
        )
    if not _EARLIEST <= moment <= _LATEST:
        raise ValueError("give a time from year 1 to 9999, as ISO 8601 or seconds since the epoch")
    return float(moment)


Time = Annotated[
    float,
    BeforeValidator(_time),
    WithJsonSchema({"anyOf": [{"type": "string", "format": "date-time"}, {"type": "number"}]}),
]
"""A time of a request: ISO 8601 (no zone: UTC) or seconds since the epoch."""


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TurnBody(_Body):
    """One turn: ``speaker`` and ``text``, or OpenAI-style ``role``, ``content`` and
    ``name`` (the speaker is ``name``, else ``role``); not both shapes at once."""

    speaker: _Name | None = None
    text: _TurnText | None = None
    role: _Name | None = None
    content: _TurnText | None = Field(default=None, description="The message's text.")
    name: _Name | None = Field(default=None, description="Who spoke; omitted: the role.")
    session_id: UserSession | None = Field(
        default=None, description="The turn's session; omitted: the body's session_id."
    )
    time: Time | None = Field(
        default=None,
        description="When it was said: ISO 8601 or seconds since the epoch; omitted: now.",
    )
    id: _ItemId | None = Field(
        default=None, description="The turn's id: the same id again is a duplicate, not a copy."
    )
    metadata: dict[str, Any] | None = None


class TurnsRequest(_Body):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "session_id": "2026-05-08",
                    "turns": [
                        {"role": "user", "name": "Caroline", "content": "I moved to Berlin."},
                        {"speaker": "Melanie", "text": "Since when?", "time": 1778230800},
                    ],
                }
            ]
        }
    )
    turns: list[TurnBody] = Field(min_length=1, max_length=MAX_TURNS)
    session_id: UserSession | None = Field(
        default=None, description="The session of every turn that names none."
    )
    memory_enabled: _MemoryEnabled = None


class TurnOutcomeOut(BaseModel):
    id: str
    outcome: Literal["stored", "duplicate", "refused", "skipped"]
    reason: str | None = Field(description="Why it was refused; null otherwise.")


class TurnsOut(BaseModel):
    turns: list[TurnOutcomeOut] = Field(description="One per turn sent, in order.")
    job_id: str | None = Field(
        description="The extraction job of these turns (GET .../jobs/{job_id}); null when "
        "the server has no extraction model or nothing was stored."
    )


class JobOut(BaseModel):
    id: str
    state: Literal["queued", "running", "done", "failed"]
    stored: list[str] = Field(description="Ids of the memories the extraction stored.")
    error: str | None
    created_at: str
    updated_at: str


class FactCreate(_Body):
    model_config = ConfigDict(
        json_schema_extra={"examples": [{"text": "Caroline lives in Berlin.", "kind": "fact"}]}
    )
    text: _FactText
    kind: LtmKind = "fact"
    importance: Annotated[float, Strict(), Field(ge=0, le=1, allow_inf_nan=False)] = 0.5
    supersedes: list[_ItemId] = Field(
        default_factory=list,
        max_length=MAX_FACT_SUPERSEDES,
        description="Ids of current memories this one replaces: kept as history.",
    )
    metadata: dict[str, Any] | None = None
    memory_enabled: _MemoryEnabled = None


class FactOut(BaseModel):
    id: str | None = Field(description="The memory's id; null when nothing was stored.")
    outcome: str
    reason: str | None


class RecallRequest(_Body):
    model_config = ConfigDict(
        json_schema_extra={"examples": [{"query": "Where does Caroline live?", "k": 5}]}
    )
    query: Annotated[UserQuery, Strict()]
    k: Whole[RecallK] = 10
    touch: StrictBool = Field(default=True, description="Mark what is recalled as accessed.")
    as_of: Time | None = Field(default=None, description="Recall what was valid at that time.")
    include_superseded: StrictBool = False
    provenances: Provenances = None
    session_id: UserSession | None = None
    memory_enabled: _MemoryEnabled = None
    min_score: Annotated[MinScore, Strict()] = None


class ScoresOut(BaseModel):
    """The terms that ranked a memory (``longterm.scoring.ScoreBreakdown``)."""

    score: float
    similarity: float
    keyword: float
    relevance: float
    recency: float
    importance: float
    session: float
    speaker: float
    time: float
    inherited_from: str | None = Field(
        default=None,
        description="The id of a version this memory replaced whose match it carries "
        "(similarity and keyword are that version's); null: its own.",
    )
    calibrated: float = Field(
        description="The chance (0 to 1) that the memory answers the query, the same scale "
        "for every query: what min_score cuts at. It does not rank: score does."
    )


class UserMemoryOut(BaseModel):
    id: str
    text: str
    kind: str
    importance: float
    metadata: dict[str, Any] = Field(description="The metadata given with it, as given.")
    provenance: str | None
    provenance_detail: str | None
    created_at: str
    updated_at: str
    last_accessed_at: str | None
    valid_from: str
    valid_to: str | None = Field(description="Until when it held; null while current.")
    superseded_by: str | None
    closed_reason: str | None
    session_id: str | None = Field(description="A turn's session; null for a fact.")
    speaker: str | None = Field(description="Who said a turn; null for a fact.")
    turn_seq: int | None = Field(description="A turn's place in its session; null for a fact.")


class RecalledOut(UserMemoryOut):
    score: float
    scores: ScoresOut


class RecallOut(BaseModel):
    results: list[RecalledOut] = Field(description="Best first, ranked as in process.")


class BlockOut(BaseModel):
    block: str = Field(description="The <recalled-memories> block; empty when nothing.")


class UserMemoryPage(BaseModel):
    memories: list[UserMemoryOut]
    next_cursor: str | None = Field(description="Pass it as cursor for the next page; null last.")


class UserList(BaseModel):
    users: list[str] = Field(description="User ids of the key's tenant, in id order.")
    next_cursor: str | None = Field(description="Pass it as cursor for the next page; null last.")


class VersionsOut(BaseModel):
    versions: list[UserMemoryOut] = Field(description="Every version, oldest first.")


class ErasedOut(BaseModel):
    deleted: int = Field(description="Turns, facts, versions and jobs erased.")


class ExportOut(BaseModel):
    memories: list[dict[str, Any]] = Field(description="What POST .../import takes back.")


class ImportRequest(_Body):
    memories: list[dict[str, Any]] = Field(
        min_length=1,
        max_length=MAX_RESTORE_ITEMS,
        description="Items of GET .../export, as it listed them; a larger export in parts.",
    )


class ImportOut(BaseModel):
    stored: int
    skipped: int


def turns_in(body: TurnsRequest) -> list[TurnIn]:
    """Each turn of ``body`` in memstack's shape, or ``InvalidInput`` naming the field."""
    return [_turn_in(turn, f"turns.{i}", body.session_id) for i, turn in enumerate(body.turns)]


def _turn_in(turn: TurnBody, where: str, session_id: str | None) -> TurnIn:
    chat = turn.role is not None or turn.content is not None or turn.name is not None
    if chat and (turn.speaker is not None or turn.text is not None):
        field = "speaker" if turn.speaker is not None else "text"
        raise InvalidInput(
            f"{where}.{field}: a turn is speaker and text, or OpenAI-style role and content "
            "(with name), not both.",
            field=f"{where}.{field}",
        )
    speaker, text = (turn.name or turn.role, turn.content) if chat else (turn.speaker, turn.text)
    missing = _missing(chat, speaker, text)
    if missing is not None:
        raise InvalidInput(
            f"{where}.{missing} is required: send speaker and text, or role and content.",
            field=f"{where}.{missing}",
        )
    session = turn.session_id or session_id
    if session is None:
        raise InvalidInput(
            f"{where}.session_id is required: give it on the turn or as the body's session_id.",
            field=f"{where}.session_id",
        )
    assert speaker is not None and text is not None  # _missing said so
    return TurnIn(
        speaker=speaker,
        text=text,
        session_id=session,
        time=turn.time,
        id=turn.id,
        metadata=turn.metadata,
    )


def _missing(chat: bool, speaker: str | None, text: str | None) -> str | None:
    if speaker is None:
        return "role" if chat else "speaker"
    if text is None:
        return "content" if chat else "text"
    return None


def _opt_iso(ts: float | None) -> str | None:
    return None if ts is None else iso(ts)


def _turn_fields(metadata: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """A turn's own metadata and its ``speaker``/``session_id``/``turn_seq``: a memory
    carrying all three is a turn (a turn's own metadata may set none of them)."""
    if not all(key in metadata for key in TURN_KEYS):
        return metadata, {key: None for key in TURN_KEYS}
    own = {k: v for k, v in metadata.items() if k not in TURN_KEYS}
    return own, {key: metadata[key] for key in TURN_KEYS}


def _fields(item: LongTermItem) -> dict[str, Any]:
    """What ``UserMemoryOut`` holds of ``item``."""
    metadata, turn = _turn_fields(dict(item.metadata))
    return {
        "id": item.id,
        "text": item.text,
        "kind": item.kind,
        "importance": item.importance,
        "metadata": metadata,
        "provenance": item.provenance,
        "provenance_detail": item.provenance_detail,
        "created_at": iso(item.created_at),
        "updated_at": iso(item.updated_at),
        "last_accessed_at": _opt_iso(item.last_accessed_at),
        "valid_from": iso(item.created_at if item.valid_from is None else item.valid_from),
        "valid_to": _opt_iso(item.valid_to),
        "superseded_by": item.superseded_by,
        "closed_reason": item.closed_reason,
        **turn,
    }


def user_memory_out(item: LongTermItem) -> UserMemoryOut:
    return UserMemoryOut(**_fields(item))


def recalled_out(items: Sequence[RecalledMemory]) -> RecallOut:
    """Recalled memories, in their order, each with every term that ranked it."""
    return RecallOut(
        results=[
            RecalledOut(**_fields(item), score=item.score, scores=_scores(item)) for item in items
        ]
    )


def _scores(item: RecalledMemory) -> ScoresOut:
    s = item.scores
    return ScoresOut(
        score=s.score,
        similarity=s.similarity,
        keyword=s.keyword,
        relevance=s.relevance,
        recency=s.recency,
        importance=s.importance,
        session=s.session,
        speaker=s.speaker,
        time=s.time,
        inherited_from=s.inherited_from,
        calibrated=s.calibrated,
    )


def turns_out(result: AddTurnsResult) -> TurnsOut:
    return TurnsOut(
        turns=[TurnOutcomeOut(id=t.id, outcome=t.outcome, reason=t.reason) for t in result.turns],
        job_id=result.job_id,
    )


def fact_out(fact: RememberedFact) -> FactOut:
    return FactOut(id=fact.id, outcome=fact.outcome, reason=fact.reason)


def job_out(job: JobStatus) -> JobOut:
    return JobOut(
        id=job.id,
        state=job.state,
        stored=list(job.stored),
        error=job.error,
        created_at=iso(job.created_at),
        updated_at=iso(job.updated_at),
    )
