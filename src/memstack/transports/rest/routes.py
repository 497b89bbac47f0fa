"""The REST routes: thin adapters from HTTP to the memory service and knowledge base.

The routes are tables (``_MEMORY_ROUTES``, ``_KNOWLEDGE_ROUTES``): each row names its
method, path, handler and every error status it can answer (``error_responses``), so
``/openapi.json`` says what the server really does. A handler is one small function per
endpoint, built for each app over its services and its keys (``_Api``); its parameters
are the rules REST shares with MCP (``memstack.transports.schemas``).

No ``from __future__ import annotations`` here: FastAPI reads the handler signatures,
whose caller dependency is built per app."""

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Annotated, Any, Final

from fastapi import APIRouter, Depends, Path, Query, Request, Response

from memstack.service.knowledge import KnowledgeBase
from memstack.service.memories import MemoryService
from memstack.service.principal import Principal
from memstack.transports.errors import RETRY_AFTER_DOC, RETRY_AFTER_S, error_responses
from memstack.transports.rest.auth import bearer_principal
from memstack.transports.rest.batch_schemas import BatchOut, BatchRequest, batch_in
from memstack.transports.rest.health import HealthCheck
from memstack.transports.rest.restore_schemas import RestoreOut, RestoreRequest, restore_in
from memstack.transports.rest.users import user_routes
from memstack.transports.schemas import (
    CURSOR_HELP,
    DEFAULT_LIST_LIMIT,
    PROVENANCE_FILTER_HELP,
    AgentId,
    AsOf,
    Budget,
    ContextOut,
    Cursor,
    Deleted,
    DeletedCount,
    DocumentId,
    DocumentListLimit,
    DocumentListOffset,
    DocumentOut,
    DocumentPage,
    DocumentSummary,
    Health,
    IncludeSuperseded,
    KnowledgeCreate,
    KnowledgeQuery,
    KnowledgeResults,
    KnowledgeSearch,
    ListLimit,
    ListOffset,
    MemoryCreate,
    MemoryHistoryOut,
    MemoryId,
    MemoryKey,
    MemoryOut,
    MemoryPageOut,
    MemoryUpdate,
    Provenances,
    ScopeName,
    SearchRequest,
    SearchResults,
    SessionId,
    context_out,
    document_out,
    document_summary,
    history_out,
    hit_out,
    knowledge_hit_out,
    memory_out,
    page_out,
)
from memstack.wiring import Services

__all__ = ["api_routes", "health_route", "searched", "stored"]

_MemoryIdPath = Annotated[MemoryId, Path()]
_DocumentIdPath = Annotated[DocumentId, Path()]
_Endpoint = Callable[..., Awaitable[Any]]

# Every /api route: no key (401), a store down (503), the wrong method on its path (405).
_ALWAYS = (401, 405, 503)
_BODY = (400, 413, 422)  # a route that reads a JSON body
_INDEXING: dict[str, Any] = {
    "model": DocumentSummary,
    "description": "Too large to embed within the request: stored, status `indexing`, "
    "embedded in the background; `Location` is its status.",
}


@dataclass(frozen=True)
class _Api:
    """What one app's handlers run against."""

    memories: MemoryService
    knowledge: KnowledgeBase
    auth: Any
    """``Depends`` on the app's keys: a parameter ``Annotated[Principal, api.auth]`` is the
    caller, resolved from the request's Bearer key (401 without a valid one)."""


@dataclass(frozen=True)
class _Route:
    """One row of a route table: ``handler(api)`` answers ``method path``."""

    method: str
    path: str
    handler: Callable[[_Api], _Endpoint]
    errors: tuple[int, ...]
    status_code: int | None = None
    more: dict[int | str, dict[str, Any]] = field(default_factory=dict)
    """Documented answers besides the errors."""


def api_routes(services: Services) -> APIRouter:
    """Every authenticated route, under ``/api``."""
    router = APIRouter(prefix="/api")
    api = _Api(services.memories, services.knowledge, Depends(bearer_principal(services.keys)))
    for tag, routes in (("memories", _MEMORY_ROUTES), ("knowledge", _KNOWLEDGE_ROUTES)):
        for route in routes:
            router.add_api_route(
                route.path,
                route.handler(api),
                methods=[route.method],
                tags=[tag],
                status_code=route.status_code,
                responses={**error_responses(*route.errors), **route.more},
            )
    router.include_router(user_routes(services.users, api.auth))
    return router


def _store_memory(api: _Api) -> _Endpoint:
    async def store_memory(body: MemoryCreate, caller: Annotated[Principal, api.auth]) -> MemoryOut:
        """Store a memory; the same (agent_id, scope, key) again updates it."""
        return await stored(api.memories, caller, body)

    return store_memory


def _store_batch(api: _Api) -> _Endpoint:
    async def store_memories(
        body: BatchRequest, caller: Annotated[Principal, api.auth]
    ) -> BatchOut:
        """Store up to 100 memories, each as ``POST /api/memories`` stores one, all or
        none: every memory is checked first and an error names it (``memories[3].value``),
        nothing stored; then all are written in one transaction."""
        stored = await api.memories.store_many(caller, batch_in(body))
        return BatchOut(memories=[memory_out(m) for m in stored])

    return store_memories


def _list_memories(api: _Api) -> _Endpoint:
    async def list_memories(
        caller: Annotated[Principal, api.auth],
        agent_id: AgentId | None = None,
        scope: ScopeName | None = None,
        session_id: SessionId | None = None,
        key: MemoryKey | None = None,
        limit: ListLimit = DEFAULT_LIST_LIMIT,
        offset: ListOffset = 0,
        cursor: Annotated[
            Cursor | None, Query(description=f"{CURSOR_HELP} (offset then skips that many more).")
        ] = None,
        as_of: Annotated[AsOf, Query()] = None,
        include_superseded: Annotated[IncludeSuperseded, Query()] = False,
        provenance: Annotated[
            Provenances,
            Query(
                description=f"{PROVENANCE_FILTER_HELP} Repeat the parameter for several: "
                "?provenance=tool_output&provenance=imported."
            ),
        ] = None,
    ) -> MemoryPageOut:
        """A page of memories, newest first: the current versions, or those valid
        ``as_of`` a moment, or every version (``include_superseded``); not both. Page
        with ``cursor`` (each page's ``next_cursor``) at any depth, or ``offset``."""
        return await listed(
            api.memories,
            caller,
            agent_id=agent_id,
            scope=scope,
            session_id=session_id,
            key=key,
            limit=limit,
            offset=offset,
            cursor=cursor,
            as_of=as_of,
            include_superseded=include_superseded,
            provenances=provenance,
        )

    return list_memories


def _delete_memories(api: _Api) -> _Endpoint:
    async def delete_memories(
        caller: Annotated[Principal, api.auth],
        agent_id: AgentId | None = None,
        session_id: SessionId | None = None,
        scope: ScopeName | None = None,
    ) -> DeletedCount:
        """Erase an agent's or a session's memories (what the same filters list), in
        every tier; ``agent_id`` or ``session_id`` is required."""
        count = await api.memories.delete_many(
            caller, agent_id=agent_id, session_id=session_id, scope=scope
        )
        return DeletedCount(deleted=count)

    return delete_memories


def _search_memories(api: _Api) -> _Endpoint:
    async def search_memories(
        body: SearchRequest, caller: Annotated[Principal, api.auth]
    ) -> SearchResults:
        """Full-text, semantic or hybrid (default) search of the current versions, or of
        those valid ``as_of`` a moment."""
        return await searched(api.memories, caller, body)

    return search_memories


def _get_memory(api: _Api) -> _Endpoint:
    async def get_memory(
        memory_id: _MemoryIdPath, caller: Annotated[Principal, api.auth]
    ) -> MemoryOut:
        return memory_out(await api.memories.get(caller, memory_id))

    return get_memory


def _memory_history(api: _Api) -> _Endpoint:
    async def memory_history(
        memory_id: _MemoryIdPath, caller: Annotated[Principal, api.auth]
    ) -> MemoryHistoryOut:
        """Every version of a memory, oldest first, each with its validity and what
        replaced it; also after the memory cap evicted it. A deleted memory has none."""
        return history_out(memory_id, await api.memories.history(caller, memory_id))

    return memory_history


def _update_memory(api: _Api) -> _Endpoint:
    async def update_memory(
        memory_id: _MemoryIdPath, body: MemoryUpdate, caller: Annotated[Principal, api.auth]
    ) -> MemoryOut:
        """Change value, metadata, TTL (``"ttl": null`` removes it) or provenance in every
        tier."""
        changes: dict[str, Any] = {
            "value": body.value,
            "metadata": body.metadata,
            "provenance": body.provenance,
            "provenance_detail": body.provenance_detail,
        }
        if "ttl" in body.model_fields_set:
            changes["ttl"] = body.ttl
        return memory_out(await api.memories.update(caller, memory_id, **changes))

    return update_memory


def _delete_memory(api: _Api) -> _Endpoint:
    async def delete_memory(
        memory_id: _MemoryIdPath, caller: Annotated[Principal, api.auth]
    ) -> Deleted:
        removed = await api.memories.delete(caller, memory_id)
        return Deleted(deleted=True, id=removed.id)

    return delete_memory


def _restore_memories(api: _Api) -> _Endpoint:
    async def restore_memories(
        body: RestoreRequest, caller: Annotated[Principal, api.auth]
    ) -> RestoreOut:
        """Write back memories of an export, each with every version of it (history,
        validity, times, provenance), in one transaction: ``memstack memories import``.
        A memory the store already holds is left as it is (``skipped``) unless
        ``replace``. Ids follow from the key's tenant and each identity, as for a store;
        running it again changes nothing."""
        done = await api.memories.restore(caller, restore_in(body), replace=body.replace)
        return RestoreOut(restored=done.memories, versions=done.versions, skipped=done.skipped)

    return restore_memories


def _context(api: _Api) -> _Endpoint:
    async def context(
        caller: Annotated[Principal, api.auth],
        agent_id: Annotated[AgentId, Query()],
        session_id: SessionId | None = None,
        query: KnowledgeQuery | None = None,
        budget: Annotated[Budget | None, Query()] = None,
    ) -> ContextOut:
        """What to inject before the agent runs: the ``<memories>`` block (every memory,
        or within ``budget`` characters) and, for a query, the ``<knowledge>`` block."""
        found = await api.memories.prompt_context(
            caller, agent_id=agent_id, session_id=session_id, query=query, budget=budget
        )
        return context_out(found)

    return context


def _add_document(api: _Api) -> _Endpoint:
    async def add_document(
        body: KnowledgeCreate,
        caller: Annotated[Principal, api.auth],
        request: Request,
        response: Response,
    ) -> DocumentSummary:
        """Add a document: embedded now (201) or, over 128 passages, in the background
        (202; ``Location`` is its status, searchable passage by passage meanwhile). The
        text may be up to 10 MiB, the body 12 MiB."""
        doc = await api.knowledge.add(
            caller,
            title=body.title,
            text=body.text,
            tags=body.tags,
            source=body.source,
            background=True,
        )
        if doc.status == "indexing":
            response.status_code = 202
            location = request.url_for("document_status", document_id=doc.id)
            response.headers["Location"] = str(location)
        return document_summary(doc)

    return add_document


def _list_documents(api: _Api) -> _Endpoint:
    async def list_documents(
        caller: Annotated[Principal, api.auth],
        limit: DocumentListLimit = DEFAULT_LIST_LIMIT,
        offset: DocumentListOffset = 0,
    ) -> DocumentPage:
        docs, total = await api.knowledge.list(caller, limit=limit, offset=offset)
        return DocumentPage(
            documents=[document_summary(d) for d in docs], total=total, limit=limit, offset=offset
        )

    return list_documents


def _search_documents(api: _Api) -> _Endpoint:
    async def search_documents(
        body: KnowledgeSearch, caller: Annotated[Principal, api.auth]
    ) -> KnowledgeResults:
        hits = await api.knowledge.search(caller, body.query, limit=body.limit)
        return KnowledgeResults(results=[knowledge_hit_out(h) for h in hits])

    return search_documents


def _get_document(api: _Api) -> _Endpoint:
    async def get_document(
        document_id: _DocumentIdPath, caller: Annotated[Principal, api.auth]
    ) -> DocumentOut:
        """The document with its text and its indexing progress."""
        return document_out(await api.knowledge.get(caller, document_id))

    return get_document


def _document_status(api: _Api) -> _Endpoint:
    async def document_status(
        document_id: _DocumentIdPath, caller: Annotated[Principal, api.auth]
    ) -> DocumentSummary:
        """The document without its text: poll this while it is ``indexing``."""
        return document_summary(await api.knowledge.status(caller, document_id))

    return document_status


def _delete_document(api: _Api) -> _Endpoint:
    async def delete_document(
        document_id: _DocumentIdPath, caller: Annotated[Principal, api.auth]
    ) -> Deleted:
        removed = await api.knowledge.delete(caller, document_id)
        return Deleted(deleted=True, id=removed.id)

    return delete_document


_MEMORY_ROUTES: Final = (
    _Route("POST", "/memories", _store_memory, (*_ALWAYS, *_BODY, 403), status_code=201),
    _Route("POST", "/memories:batch", _store_batch, (*_ALWAYS, *_BODY, 403), status_code=201),
    _Route("GET", "/memories", _list_memories, (*_ALWAYS, 403, 422)),
    _Route("DELETE", "/memories", _delete_memories, (*_ALWAYS, 403, 422)),
    _Route("POST", "/memories/search", _search_memories, (*_ALWAYS, *_BODY, 403)),
    _Route("GET", "/memories/{memory_id}", _get_memory, (*_ALWAYS, 404, 422)),
    _Route("GET", "/memories/{memory_id}/history", _memory_history, (*_ALWAYS, 404, 422)),
    _Route("PUT", "/memories/{memory_id}", _update_memory, (*_ALWAYS, *_BODY, 403, 404)),
    _Route("DELETE", "/memories/{memory_id}", _delete_memory, (*_ALWAYS, 403, 404, 422)),
    _Route("POST", "/memories/restore", _restore_memories, (*_ALWAYS, *_BODY, 403)),
    _Route("GET", "/context", _context, (*_ALWAYS, 403, 422)),
)
_KNOWLEDGE_ROUTES: Final = (
    _Route(
        "POST",
        "/knowledge",
        _add_document,
        (*_ALWAYS, *_BODY, 403),
        status_code=201,
        more={202: _INDEXING},
    ),
    _Route("GET", "/knowledge", _list_documents, (*_ALWAYS, 422)),
    _Route("POST", "/knowledge/search", _search_documents, (*_ALWAYS, *_BODY)),
    _Route("GET", "/knowledge/{document_id}", _get_document, (*_ALWAYS, 404, 422)),
    _Route("GET", "/knowledge/{document_id}/status", _document_status, (*_ALWAYS, 404, 422)),
    _Route("DELETE", "/knowledge/{document_id}", _delete_document, (*_ALWAYS, 403, 404, 422)),
)


async def stored(memories: MemoryService, caller: Principal, body: MemoryCreate) -> MemoryOut:
    """What ``POST /api/memories`` answers (also ``hot_routes``)."""
    memory = await memories.store(
        caller,
        agent_id=body.agent_id,
        key=body.key,
        value=body.value,
        scope=body.scope,
        session_id=body.session_id,
        metadata=body.metadata,
        ttl=body.ttl,
        provenance=body.provenance,
        provenance_detail=body.provenance_detail,
    )
    return memory_out(memory)


async def listed(memories: MemoryService, caller: Principal, **query: Any) -> MemoryPageOut:
    """What ``GET /api/memories`` answers (also ``hot_routes``): ``query`` is
    ``MemoryService.list``'s keyword arguments."""
    return page_out(await memories.list(caller, **query))


async def searched(
    memories: MemoryService, caller: Principal, body: SearchRequest
) -> SearchResults:
    """What ``POST /api/memories/search`` answers (also ``hot_routes``)."""
    hits = await memories.search(
        caller,
        body.query,
        agent_id=body.agent_id,
        scope=body.scope,
        session_id=body.session_id,
        key=body.key,
        mode=body.mode,
        limit=body.limit,
        as_of=body.as_of,
        provenances=body.provenances,
        min_score=body.min_score,
        metadata=body.metadata,
    )
    return SearchResults(results=[hit_out(h) for h in hits])


def health_route(services: Services) -> APIRouter:
    router = APIRouter()
    check = HealthCheck(services)

    @router.get("/healthz", tags=["health"], responses={**_DEGRADED, **error_responses(405)})
    async def healthz(response: Response) -> Health:
        """The state of each tier (no authentication): 200 while the long-term tier
        answers, 503 while it does not. Probed at most once a second, answered within
        about a second."""
        health = await check.health()
        if health.status != "ok":
            response.status_code = 503
            response.headers["Retry-After"] = str(RETRY_AFTER_S)
        return health

    return router


_DEGRADED: dict[int | str, dict[str, Any]] = {
    503: {
        "model": Health,
        "description": "`degraded`: the long-term tier is down; requests that need it "
        "answer 503 with `Retry-After` until it is back.",
        "headers": RETRY_AFTER_DOC,
        "content": {
            "application/json": {
                "example": {"status": "degraded", "long_term": "down", "short_term": "up"}
            }
        },
    }
}
