"""The REST API's calls, written once: each function checks its arguments and returns
the request to send, typed by the body it answers. ``MemoryClient`` sends them and
returns that body; ``AsyncMemoryClient`` returns a coroutine of it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Generic, TypeVar, cast

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
) -> Call[t.SearchResults]:
    """Hybrid (default), full-text or semantic search, best first, of the current
    versions; with ``as_of`` (seconds since the epoch) of those valid at that moment;
    with ``provenances`` of the memories of those provenances only. Each hit shows its
    memory's ``provenance`` beside its scores."""
    body: dict[str, object] = {"query": query, "mode": mode, "limit": limit}
    body |= _given(
        agent_id=agent_id,
        scope=scope,
        session_id=session_id,
        key=key,
        as_of=as_of,
        provenances=_listed(provenances),
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


def health() -> Call[t.Health]:
    """The state of each tier (no key needed); ``StoreUnavailable`` with the server's
    answer while the long-term tier is down (503)."""
    return Call(method="GET", path="/healthz")
