"""The memory service's values: a memory, its scope, its validity, and where it lives."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Final, Literal, get_args

from memstack._json import JSON, to_json
from memstack.errors import InvalidInput
from memstack.longterm.types import PROVENANCES, Provenance
from memstack.secrets import looks_like_secret

__all__ = [
    "CLOSED_REASONS",
    "DEFAULT_PROVENANCE",
    "GLOBAL_BUCKET",
    "ID_PART_PATTERN",
    "MAX_KEY_CHARS",
    "MAX_PROVENANCE_DETAIL_CHARS",
    "MAX_VALUE_CHARS",
    "PROVENANCES",
    "SCOPES",
    "ClosedReason",
    "Memory",
    "Provenance",
    "Scope",
    "as_closed_reason",
    "as_provenance",
    "bucket_of",
    "check_id_part",
    "check_user_id",
    "memory_from_json",
    "memory_id",
    "memory_to_json",
]

Scope = Literal["session", "agent", "global"]
SCOPES: Final[tuple[Scope, ...]] = get_args(Scope)
ClosedReason = Literal["superseded", "deleted", "evicted"]
"""Why a version stopped being current: a new value replaced it, it was retired, or the
long-term cap evicted it."""
CLOSED_REASONS: Final[tuple[ClosedReason, ...]] = get_args(ClosedReason)
GLOBAL_BUCKET: Final = "~global"
"""The short-term bucket and storage partition the global memories of every agent share,
so every agent reads them together (no agent id has '~')."""

DEFAULT_PROVENANCE: Final[Provenance] = "user_stated"
"""The provenance of a memory stored without one: an agent stores what it was told."""
MAX_KEY_CHARS: Final = 256
MAX_PROVENANCE_DETAIL_CHARS: Final = 256
MAX_VALUE_CHARS: Final = 32_768
MAX_ID_PART_CHARS: Final = 128
ID_PART_PATTERN: Final = r"^[^\W_][\w.:@/-]*(?!\n)$"
r"""A tenant, agent or session id: letters and digits of any script (a query string carries
"機器人" as well as "bot"), as Python's ``re`` reads ``\w``. ``(?!\n)``: ``$`` alone would
also match before a final newline where the pattern is searched (JSON Schema's ``pattern``),
and no id ends with one. The OpenAPI document gives it as ``pattern``."""
_ID_PART = re.compile(ID_PART_PATTERN)


@dataclass(frozen=True, kw_only=True)
class Memory:
    """One memory of the service.

    Identity is ``(tenant, agent_id, scope, key)``, and the session for session scope
    (the ``(agent_id, scope, key)`` upsert): storing the same identity again updates
    it, and ``id`` is derived from it. Two agents' global memories of one key are two
    memories; every agent reads both (global scope is shared for reading).

    A memory has versions: a new value closes the one before (``valid_to``,
    ``superseded_by``) and keeps it as history. Every version carries the ``id`` of the
    memory it is a version of, so a read ``as_of`` a past moment shows "memory ``id`` as it
    was then", and a ``version_id`` of its own, which ``superseded_by`` of the version
    before names; ``valid_to`` is None on the current version only.
    """

    id: str
    tenant: str
    agent_id: str
    """The agent the memory belongs to: the one that stored it, in every scope. (A
    global memory stored before the agent was part of its identity belongs to the agent
    that wrote it last; ``global_identity`` moved it to that agent's id.)"""
    scope: Scope
    key: str
    value: str
    session_id: str | None = None
    """The session / workflow run a session-scope memory is tied to."""
    metadata: dict[str, JSON] = field(default_factory=dict)
    expires_at: float | None = None
    """Seconds since the epoch after which the memory is never returned; None = no TTL."""
    created_at: float
    updated_at: float
    valid_from: float | None = None
    """Since when this version's value holds (the store or update that set it); None: since
    ``created_at``. Every memory the service returns has it set."""
    valid_to: float | None = None
    """Until when it held: None while current."""
    superseded_by: str | None = None
    """The ``version_id`` of the version that came after this one: the new value that
    replaced it, or the memory started anew after the cap evicted it; None while current
    (and on the latest version the cap evicted). A version closed before versions had
    ids names its memory's ``id`` instead."""
    closed_reason: ClosedReason | None = None
    """Why ``valid_to`` is set; None while current."""
    version_id: str | None = None
    """This version's own id, the same while it is current and after it is closed: what
    ``superseded_by`` of the version before names. None only on a version written before
    versions had ids (a closed one of those is named by its record's id)."""
    provenance: Provenance | None = None
    """How it was learned: ``user_stated`` (the default of a store), ``extracted``,
    ``tool_output`` or ``imported``. Every write records one; None only on a memory stored
    before memories had provenance and not written since."""
    provenance_detail: str | None = None
    """More on ``provenance``: the extraction model, the tool, the source imported from."""

    @property
    def bucket(self) -> str:
        return bucket_of(self.scope, self.agent_id)

    @property
    def starts(self) -> float:
        """``valid_from``, or ``created_at`` when it is unset."""
        return self.created_at if self.valid_from is None else self.valid_from

    @property
    def is_current(self) -> bool:
        return self.valid_to is None

    def is_expired(self, now: float) -> bool:
        return self.expires_at is not None and self.expires_at <= now


def bucket_of(scope: Scope, agent_id: str) -> str:
    """Where a memory lives: its agent's bucket, or the tenant's global bucket."""
    return GLOBAL_BUCKET if scope == "global" else agent_id


def memory_id(*, tenant: str, scope: Scope, agent_id: str, session_id: str | None, key: str) -> str:
    """The deterministic id of a memory identity; the same identity always maps to it.
    (Global memories once left ``agent_id`` out: ``global_identity.legacy_global_id``.)"""
    session = session_id if scope == "session" else ""
    digest = hashlib.sha256(
        json.dumps([tenant, scope, agent_id, session, key], ensure_ascii=False).encode()
    ).hexdigest()
    return f"mem_{digest[:32]}"


def check_id_part(value: object, field: str) -> str:
    """Validate a tenant, agent or session id: 1-128 characters, starting with a letter or
    digit (of any script), then letters, digits and ``_.:@/-``."""
    if not isinstance(value, str) or not value:
        raise InvalidInput(f"{field} must be a non-empty string.", field=field)
    if len(value) > MAX_ID_PART_CHARS or not _ID_PART.fullmatch(value):
        shown = "" if looks_like_secret(value) else f" {value[:40]!r}"  # never echo a key
        raise InvalidInput(
            f"{field}{shown} is invalid: use 1-{MAX_ID_PART_CHARS} characters, "
            "starting with a letter or digit (any script), then letters, digits and _ . : @ / -",
            field=field,
        )
    return value


def check_user_id(value: object, field: str = "user_id") -> str:
    """Validate a served user's id: an id part (``check_id_part``) without ``/``, since
    it is one segment of the user's paths (``/api/users/{user_id}/...``)."""
    user_id = check_id_part(value, field)
    if "/" in user_id:
        raise InvalidInput(
            f"{field} must not hold '/': it is one segment of /api/users/{{user_id}}/...; "
            "use ':' or '-' to separate its parts instead.",
            field=field,
        )
    return user_id


def memory_to_json(memory: Memory) -> str:
    """The one serialization of a memory, for the short-term tier."""
    return json.dumps(
        {
            "id": memory.id,
            "tenant": memory.tenant,
            "agent_id": memory.agent_id,
            "scope": memory.scope,
            "key": memory.key,
            "value": memory.value,
            "session_id": memory.session_id,
            "metadata": memory.metadata,
            "expires_at": memory.expires_at,
            "created_at": memory.created_at,
            "updated_at": memory.updated_at,
            "valid_from": memory.valid_from,
            "valid_to": memory.valid_to,
            "superseded_by": memory.superseded_by,
            "closed_reason": memory.closed_reason,
            "version_id": memory.version_id,
            "provenance": memory.provenance,
            "provenance_detail": memory.provenance_detail,
        },
        ensure_ascii=False,
        separators=(",", ":"),
    )


def memory_from_json(text: str | bytes) -> Memory:
    """A memory from ``memory_to_json``; JSON written before memories had validity (no
    ``valid_*`` fields) loads as a current memory valid since its ``created_at``, and JSON
    written before they had provenance with ``provenance`` None."""
    data = json.loads(text)
    scope = data["scope"]
    if scope not in SCOPES:
        raise InvalidInput(f"stored memory has an unknown scope {scope!r}.", field="scope")
    metadata = to_json(data.get("metadata") or {}, field="metadata")
    assert isinstance(metadata, dict)
    return Memory(
        id=str(data["id"]),
        tenant=str(data["tenant"]),
        agent_id=str(data["agent_id"]),
        scope=scope,
        key=str(data["key"]),
        value=str(data["value"]),
        session_id=data.get("session_id"),
        metadata=metadata,
        expires_at=data.get("expires_at"),
        created_at=float(data["created_at"]),
        updated_at=float(data["updated_at"]),
        valid_from=_optional_float(data.get("valid_from")),
        valid_to=_optional_float(data.get("valid_to")),
        superseded_by=_optional_str(data.get("superseded_by")),
        closed_reason=as_closed_reason(data.get("closed_reason")),
        version_id=_optional_str(data.get("version_id")),
        provenance=as_provenance(data.get("provenance")),
        provenance_detail=_optional_str(data.get("provenance_detail")),
    )


def as_closed_reason(value: object) -> ClosedReason | None:
    """``value`` if it is a known reason, else None."""
    for reason in CLOSED_REASONS:
        if value == reason:
            return reason
    return None


def as_provenance(value: object) -> Provenance | None:
    """``value`` if it is a known provenance, else None."""
    for provenance in PROVENANCES:
        if value == provenance:
            return provenance
    return None


def _optional_float(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _optional_str(value: object) -> str | None:
    return value if isinstance(value, str) else None
