"""The REST API's calls, written once: each function checks its arguments and returns
the request to send, typed by the body it answers. ``MemoryClient`` sends them and
returns that body; ``AsyncMemoryClient`` returns a coroutine of it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Generic, TypeVar, cast
from urllib.parse import quote

from memstack._json import JSON
from memstack.client import types as t
from memstack.errors import InvalidInput
from memstack.service.ttl import check_ttl

__all__ = ["UNSET", "Call"]

T = TypeVar("T")


class _Unset:
    def __repr__(self) -> str:
        return "UNSET"


UNSET: Final = _Unset()
"""Leave the field as it is (``update(ttl=...)``: ``None`` removes the TTL)."""


@dataclass(frozen=True, kw_only=True)
class Call(Generic[T]):
    """One request; ``T`` is the JSON body a success answers with."""

    method: str
    path: str
    body: Mapping[str, object] | None = None
    params: Mapping[str, object] = field(default_factory=dict)

    def query(self) -> dict[str, Any]:
        return {k: v for k, v in self.params.items() if v is not None}

    def result(self, payload: object) -> T:
        """The decoded success body, as the type the server's schema promises."""
        return cast(T, payload)


def _given(**fields: object) -> dict[str, object]:
    return {name: value for name, value in fields.items() if value is not None}


def _listed(values: Sequence[str] | None) -> list[str] | None:
    """A sequence as the JSON list (or repeated query parameter) it is sent as."""
    if isinstance(values, str):
        raise InvalidInput(f"give a list of provenances, not {values!r}.", field="provenances")
    return None if values is None else list(values)


def _segment(value: object) -> str:
    if not isinstance(value, str) or not value or "/" in value:
        raise InvalidInput(f"{value!r} is not an id.", field="id")
    return value


# -- memories -------------------------------------------------------------------------


def store(
    agent_id: str,
    key: str,
    value: str,
    *,
    scope: t.Scope = "agent",
    session_id: str | None = None,
    metadata: Mapping[str, JSON] | None = None,
    ttl: str | float | None = None,
    provenance: t.Provenance | None = None,
    provenance_detail: str | None = None,
) -> Call[t.Memory]:
    """Store (or update: same agent, scope, session and key) a memory; returns it.
    ``ttl``: seconds from now, or an ISO 8601 time. ``provenance``: how it was learned
    (omitted: ``user_stated`` for a new memory, the current one's for an update);
    ``provenance_detail``: the model, tool or source."""
    check_ttl(ttl)  # the server's rule, before a request is sent
    body: dict[str, object] = {"agent_id": agent_id, "key": key, "value": value, "scope": scope}
    body |= _given(
        session_id=session_id,
        metadata=metadata,
        ttl=ttl,
        provenance=provenance,
        provenance_detail=provenance_detail,
    )
    return Call(method="POST", path="/api/memories", body=body)


def store_many(memories: Sequence[Mapping[str, object]]) -> Call[t.MemoryBatch]:
    """Store 1 to 100 memories, each a dict of ``store``'s arguments (``agent_id``,
    ``key``, ``value``; ``scope``, ``session_id``, ``metadata``, ``ttl``, ``provenance``,
    ``provenance_detail``), all or none: one bad memory is an error naming it
    (``memories[3].value``) and nothing is stored. Returns them as stored, in order."""
    if isinstance(memories, Mapping | str):
        raise InvalidInput("give a list of memories, each a dict.", field="memories")
    body = {"memories": [dict(m) for m in memories]}
    return Call(method="POST", path="/api/memories:batch", body=body)


def get(memory_id: str) -> Call[t.Memory]:
    """The memory with this id (``NotFound`` when there is none)."""
    return Call(method="GET", path=f"/api/memories/{_segment(memory_id)}")


def history(memory_id: str) -> Call[t.MemoryHistory]:
    """Every version of a memory, oldest first, each with its validity and what replaced
    it: ``{"id", "versions"}`` (``NotFound`` when there is no such memory)."""
    return Call(method="GET", path=f"/api/memories/{_segment(memory_id)}/history")


def update(
    memory_id: str,
    *,
    value: str | None = None,
    metadata: Mapping[str, JSON] | None = None,
    ttl: str | float | _Unset | None = UNSET,
    provenance: t.Provenance | None = None,
    provenance_detail: str | None = None,
) -> Call[t.Memory]:
    """Change a memory; ``ttl=None`` removes its TTL, leaving ``ttl`` out keeps it. A new
    ``provenance`` without ``provenance_detail`` drops the old detail."""
    body = _given(
        value=value,
        metadata=metadata,
        provenance=provenance,
        provenance_detail=provenance_detail,
    )
    if not isinstance(ttl, _Unset):
        check_ttl(ttl)
        body["ttl"] = ttl
    return Call(method="PUT", path=f"/api/memories/{_segment(memory_id)}", body=body)


def delete(memory_id: str) -> Call[t.Deleted]:
    """Delete one memory from every tier."""
    return Call(method="DELETE", path=f"/api/memories/{_segment(memory_id)}")


def delete_many(
    *, agent_id: str | None = None, session_id: str | None = None, scope: t.Scope | None = None
) -> Call[t.DeletedCount]:
    """Erase an agent's or a session's memories (an erasure request): what ``list``
    shows for the same filters, in every tier. Returns ``{"deleted": count}``."""
    if agent_id is None and session_id is None:
        raise InvalidInput(
            "give agent_id or session_id to say whose memories to delete.", field="agent_id"
        )
    params = {"agent_id": agent_id, "session_id": session_id, "scope": scope}
    return Call(method="DELETE", path="/api/memories", params=params)


def list_memories(
    *,
    agent_id: str | None = None,
    scope: t.Scope | None = None,
    session_id: str | None = None,
    key: str | None = None,
    limit: int = 50,
    offset: int = 0,
    as_of: float | None = None,
    include_superseded: bool = False,
    provenance: t.Provenance | Sequence[t.Provenance] | None = None,
    cursor: str | None = None,
) -> Call[t.MemoryPage]:
    """A page of memories, newest first: ``{"memories", "total", "limit", "offset",
    "next_cursor"}``. Current versions; with ``as_of`` (seconds since the epoch) the
    versions valid at that moment, each with the id of its memory; with
    ``include_superseded`` every version. Not both. ``provenance``: only memories of this
    provenance (or of any of a list). ``cursor``: a page's ``next_cursor``, for the page
    after it (at any depth; ``offset`` reaches 10,000 at most)."""
    params: dict[str, object] = {
        "agent_id": agent_id,
        "scope": scope,
        "session_id": session_id,
        "key": key,
        "limit": limit,
        "offset": offset,
        "cursor": cursor,
        "as_of": as_of,
        "include_superseded": True if include_superseded else None,
        "provenance": [provenance] if isinstance(provenance, str) else _listed(provenance),
    }
    return Call(method="GET", path="/api/memories", params=params)


def restore(memories: Sequence[Mapping[str, object]], *, replace: bool = False) -> Call[t.Restored]:
    """Write back memories of an export, each with every version of it (``{"agent_id",
    "scope", "session_id", "key", "versions": [...]}``, a version as the listing shows it);
    a memory the store holds already is skipped unless ``replace``: ``import_jsonl``
    sends these."""
    body = {"memories": list(memories), "replace": replace}
    return Call(method="POST", path="/api/memories/restore", body=body)


def search(
    query: str,
    *,
    agent_id: str | None = None,
    scope: t.Scope | None = None,
    session_id: str | None = None,
    key: str | None = None,
    mode: t.SearchMode = "hybrid",
    limit: int = 10,
    as_of: float | None = None,
    provenances: Sequence[t.Provenance] | None = None,
    min_score: float | None = None,
    metadata: Mapping[str, JSON] | None = None,
) -> Call[t.SearchResults]:
    """Hybrid (default), full-text or semantic search, best first, of the current
    versions; with ``as_of`` (seconds since the epoch) of those valid at that moment;
    with ``provenances`` of the memories of those provenances only. Each hit shows its
    memory's ``provenance`` beside its scores; ``min_score`` keeps the hits whose
    ``calibrated`` score (0 to 1, the same scale for every query) is at least that;
    ``metadata`` keeps the memories whose metadata matches it, each key equal to a value
    or one of ``{"$in": [values]}``."""
    body: dict[str, object] = {"query": query, "mode": mode, "limit": limit}
    body |= _given(
        agent_id=agent_id,
        scope=scope,
        session_id=session_id,
        key=key,
        as_of=as_of,
        provenances=_listed(provenances),
        min_score=min_score,
        metadata=metadata,
    )
    return Call(method="POST", path="/api/memories/search", body=body)


def context(
    agent_id: str, *, session_id: str | None = None, query: str | None = None
) -> Call[t.Context]:
    """What to inject before an agent runs: memories and the ``<memories>`` block."""
    params = {"agent_id": agent_id, "session_id": session_id, "query": query}
    return Call(method="GET", path="/api/context", params=params)


# -- knowledge ------------------------------------------------------------------------


def add_document(
    title: str, text: str, *, tags: list[str] | None = None, source: str | None = None
) -> Call[t.DocumentSummary]:
    """Add a knowledge document (up to 10 MiB). Its ``status`` is ``ready`` when it was
    embedded within the request, ``indexing`` when it is embedded in the background (over
    128 passages of about 800 characters): poll ``document_status`` or call
    ``wait_for_document``; its passages are searchable as they are stored."""
    body = {"title": title, "text": text} | _given(tags=tags, source=source)
    return Call(method="POST", path="/api/knowledge", body=body)


def get_document(document_id: str) -> Call[t.Document]:
    """The document with its text and its indexing progress."""
    return Call(method="GET", path=f"/api/knowledge/{_segment(document_id)}")


def document_status(document_id: str) -> Call[t.DocumentSummary]:
    """The document without its text: ``status``, ``passages_done`` of ``passages_total``."""
    return Call(method="GET", path=f"/api/knowledge/{_segment(document_id)}/status")


def list_documents(*, limit: int = 50, offset: int = 0) -> Call[t.DocumentPage]:
    return Call(method="GET", path="/api/knowledge", params={"limit": limit, "offset": offset})


def search_knowledge(query: str, *, limit: int = 5) -> Call[t.KnowledgeResults]:
    return Call(method="POST", path="/api/knowledge/search", body={"query": query, "limit": limit})


def delete_document(document_id: str) -> Call[t.Deleted]:
    return Call(method="DELETE", path=f"/api/knowledge/{_segment(document_id)}")


# -- a user's conversation memory -----------------------------------------------------


def _user(user_id: object) -> str:
    """The path of a user's memory: the id percent-encoded as one segment."""
    if not isinstance(user_id, str) or not user_id:
        raise InvalidInput(f"{user_id!r} is not a user id.", field="user_id")
    return f"/api/users/{quote(user_id, safe='')}"


def add_turns(
    user_id: str,
    turns: Sequence[t.TurnIn | Mapping[str, JSON]],
    *,
    session_id: str | None = None,
    memory_enabled: bool | None = None,
) -> Call[t.TurnsAdded]:
    """Store conversation turns verbatim, each with its neighbours as context: each turn
    ``{"speaker", "text", "session_id", "time"?, "id"?, "metadata"?}``, or an OpenAI-style
    message ``{"role", "content", "name"?}`` (then ``session_id`` here or in the turn).
    Each turn's outcome in order; ``job_id`` the extraction queued when the server has a
    model. ``memory_enabled=False`` vetoes long-term memory: nothing is stored."""
    body: dict[str, object] = {"turns": [dict(turn) for turn in turns]}
    body |= _given(session_id=session_id, memory_enabled=memory_enabled)
    return Call(method="POST", path=f"{_user(user_id)}/turns", body=body)


def get_job(user_id: str, job_id: str) -> Call[t.Job]:
    """An extraction job's state and the ids of the memories it stored."""
    return Call(method="GET", path=f"{_user(user_id)}/jobs/{_segment(job_id)}")


def remember(
    user_id: str,
    text: str,
    *,
    kind: t.MemoryKind = "fact",
    importance: float = 0.5,
    supersedes: Sequence[str] = (),
    metadata: Mapping[str, JSON] | None = None,
    memory_enabled: bool | None = None,
) -> Call[t.RememberedFact]:
    """Remember an explicit fact about the user; ``supersedes``: ids of the memories it
    replaces (each kept as history). Returns its id and outcome."""
    if isinstance(supersedes, str):
        raise InvalidInput(f"give a list of ids, not {supersedes!r}.", field="supersedes")
    body: dict[str, object] = {"text": text, "kind": kind, "importance": importance}
    body |= _given(
        supersedes=list(supersedes) or None, metadata=metadata, memory_enabled=memory_enabled
    )
    return Call(method="POST", path=f"{_user(user_id)}/memories", body=body)


def recall(
    user_id: str,
    query: str,
    *,
    k: int = 10,
    touch: bool = True,
    as_of: float | None = None,
    include_superseded: bool = False,
    provenances: Sequence[t.Provenance] | None = None,
    session_id: str | None = None,
    memory_enabled: bool | None = None,
    min_score: float | None = None,
) -> Call[t.RecallResults]:
    """The ``k`` memories of the user that best answer ``query``, best first, ranked as
    in process, each with the scores that ranked it; ``session_id``, the conversation the
    query comes from, favours its turns (the context bonuses). ``touch`` marks them
    recalled (they age slower); ``as_of`` recalls what was valid then,
    ``include_superseded`` every version; ``min_score`` keeps those whose
    ``scores.calibrated`` (0 to 1, the same scale for every query) is at least that."""
    body: dict[str, object] = {"query": query, "k": k, "touch": touch}
    body |= _given(
        as_of=as_of,
        include_superseded=True if include_superseded else None,
        provenances=_listed(provenances),
        session_id=session_id,
        memory_enabled=memory_enabled,
        min_score=min_score,
    )
    return Call(method="POST", path=f"{_user(user_id)}/recall", body=body)


def recalled_context(
    user_id: str,
    query: str,
    *,
    k: int = 10,
    session_id: str | None = None,
    memory_enabled: bool | None = None,
    min_score: float | None = None,
) -> Call[t.RecalledContext]:
    """The ``<recalled-memories>`` block for ``query``, to inject before the user's
    message: ``{"block"}``, "" when nothing is recalled. It holds the memories whose
    calibrated relevance is at least ``min_score`` (None: the server's default threshold,
    ``CONTEXT_MIN_SCORE``; 0 keeps all ``k``)."""
    params = {
        "query": query,
        "k": k,
        "session_id": session_id,
        "memory_enabled": memory_enabled,
        "min_score": min_score,
    }
    return Call(method="GET", path=f"{_user(user_id)}/context", params=params)


def user_memories(
    user_id: str, *, limit: int = 50, cursor: str | None = None, include_superseded: bool = False
) -> Call[t.UserMemoryPage]:
    """A page of the user's turns and facts, newest first; pass ``next_cursor`` as
    ``cursor`` for the next page."""
    params = {
        "limit": limit,
        "cursor": cursor,
        "include_superseded": True if include_superseded else None,
    }
    return Call(method="GET", path=f"{_user(user_id)}/memories", params=params)


def list_users(*, limit: int = 50, cursor: str | None = None) -> Call[t.UserList]:
    """A page of the key's tenant's users that hold a memory, in id order; pass
    ``next_cursor`` as ``cursor`` for the next page."""
    return Call(method="GET", path="/api/users", params={"limit": limit, "cursor": cursor})


def user_history(user_id: str, memory_id: str) -> Call[t.UserHistory]:
    """Every version of one of the user's memories, oldest first."""
    return Call(method="GET", path=f"{_user(user_id)}/memories/{_segment(memory_id)}/history")


def forget(user_id: str, memory_id: str) -> Call[None]:
    """Forget one of the user's memories (``NotFound`` when the user has no such one)."""
    return Call(method="DELETE", path=f"{_user(user_id)}/memories/{_segment(memory_id)}")


def erase_user(user_id: str) -> Call[t.DeletedCount]:
    """Erase the user: every turn, fact, version and job. ``{"deleted": count}``."""
    return Call(method="DELETE", path=_user(user_id))


def export_user(user_id: str) -> Call[t.UserExport]:
    """Every turn, fact and version of the user, as ``import_user`` takes them."""
    return Call(method="GET", path=f"{_user(user_id)}/export")


def import_user(
    user_id: str, memories: Sequence[Mapping[str, JSON]], *, replace: bool = False
) -> Call[t.UserImported]:
    """Write back an export (``export_user(...)["memories"]``); a memory the user holds
    already is skipped unless ``replace``."""
    body = {"memories": [dict(memory) for memory in memories]}
    params = {"replace": "true" if replace else "false"}
    return Call(method="POST", path=f"{_user(user_id)}/import", body=body, params=params)


def health() -> Call[t.Health]:
    """The state of each tier (no key needed); ``StoreUnavailable`` with the server's
    answer while the long-term tier is down (503)."""
    return Call(method="GET", path="/healthz")
