"""The REST routes: thin adapters from HTTP to the memory service and knowledge base.

Each route declares its response model and every error status it can answer
(``error_responses``), so ``/openapi.json`` says what the server really does.

No ``from __future__ import annotations`` here: FastAPI reads the route signatures,
whose ``Caller`` dependency is built per app inside the router functions."""

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Query, Request, Response

from memstack.service import knowledge as kb
from memstack.service.memories import MAX_LIST_LIMIT, MAX_LIST_OFFSET, MemoryService
from memstack.service.paging import MAX_CURSOR_CHARS
from memstack.service.principal import Principal
from memstack.service.prompt import MAX_BUDGET, MIN_BUDGET
from memstack.service.types import MAX_ID_PART_CHARS
from memstack.transports.errors import RETRY_AFTER_DOC, RETRY_AFTER_S, error_responses
from memstack.transports.rest.auth import bearer_principal
from memstack.transports.rest.health import HealthCheck
from memstack.transports.rest.restore_schemas import RestoreOut, RestoreRequest, restore_in
from memstack.transports.schemas import (
    AS_OF_HELP,
    DOCUMENT_ID_PATTERN,
    ID_PATTERN,
    ID_RULE,
    MEMORY_ID_PATTERN,
    PROVENANCE_FILTER_HELP,
    ContextOut,
    Deleted,
    DeletedCount,
    DocumentOut,
    DocumentPage,
    DocumentSummary,
    Health,
    KnowledgeCreate,
    KnowledgeResults,
    KnowledgeSearch,
    MemoryCreate,
    MemoryHistoryOut,
    MemoryOut,
    MemoryPageOut,
    MemoryUpdate,
    ProvenanceName,
    ScopeName,
    SearchRequest,
    SearchResults,
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

IdParam = Annotated[
    str,
    Query(
        min_length=1,
        max_length=MAX_ID_PART_CHARS,
        description=ID_RULE,
        json_schema_extra=ID_PATTERN,
    ),
]
MemoryId = Annotated[
    str,
    Path(
        max_length=200, description="A memory's id (mem_...).", json_schema_extra=MEMORY_ID_PATTERN
    ),
]
DocumentId = Annotated[
    str,
    Path(
        max_length=200,
        description="A document's id (doc_...).",
        json_schema_extra=DOCUMENT_ID_PATTERN,
    ),
]

# Every /api route: no key (401), a store down (503), the wrong method on its path (405).
_ALWAYS = (401, 405, 503)
_BODY = (400, 413, 422)  # a route that reads a JSON body
_INDEXING: dict[str, Any] = {
    "model": DocumentSummary,
    "description": "Too large to embed within the request: stored, status `indexing`, "
    "embedded in the background; `Location` is its status.",
}


def api_routes(services: Services) -> APIRouter:
    """Every authenticated route, under ``/api``."""
    router = APIRouter(prefix="/api")
    router.include_router(_memory_routes(services))
    router.include_router(_restore_routes(services))
    router.include_router(_context_routes(services))
    router.include_router(_knowledge_routes(services))
    return router


def _restore_routes(services: Services) -> APIRouter:
    router = APIRouter(tags=["memories"])
    Caller = Annotated[Principal, Depends(bearer_principal(services.keys))]
    memories = services.memories

    @router.post("/memories/restore", responses=error_responses(*_ALWAYS, *_BODY, 403))
    async def restore_memories(body: RestoreRequest, caller: Caller) -> RestoreOut:
        """Write back memories of an export, each with every version of it (history,
        validity, times, provenance), in one transaction: ``memstack memories import``.
        A memory the store already holds is left as it is (``skipped``) unless
        ``replace``. Ids follow from the key's tenant and each identity, as for a store;
        running it again changes nothing."""
        done = await memories.restore(caller, restore_in(body), replace=body.replace)
        return RestoreOut(restored=done.memories, versions=done.versions, skipped=done.skipped)

    return router


def _memory_routes(services: Services) -> APIRouter:
    router = APIRouter(tags=["memories"])
    Caller = Annotated[Principal, Depends(bearer_principal(services.keys))]
    memories = services.memories

    @router.post("/memories", status_code=201, responses=error_responses(*_ALWAYS, *_BODY, 403))
    async def store_memory(body: MemoryCreate, caller: Caller) -> MemoryOut:
        """Store a memory; the same (agent_id, scope, key) again updates it."""
        return await stored(memories, caller, body)

    @router.get("/memories", responses=error_responses(*_ALWAYS, 403, 422))
    async def list_memories(
        caller: Caller,
        agent_id: IdParam | None = None,
        scope: ScopeName | None = None,
        session_id: IdParam | None = None,
        key: Annotated[str | None, Query(min_length=1, max_length=256)] = None,
        limit: Annotated[int, Query(ge=1, le=MAX_LIST_LIMIT)] = 50,
        offset: Annotated[int, Query(ge=0, le=MAX_LIST_OFFSET)] = 0,
        cursor: Annotated[
            str | None,
            Query(
                min_length=1,
                max_length=MAX_CURSOR_CHARS,
                description="The next_cursor of the page before: the page after it, at any "
                "depth (offset then skips that many more).",
            ),
        ] = None,
        as_of: Annotated[float | None, Query(allow_inf_nan=False, description=AS_OF_HELP)] = None,
        include_superseded: Annotated[
            bool,
            Query(description="Every version, current or closed, each with its validity."),
        ] = False,
        provenance: Annotated[
            list[ProvenanceName] | None,
            Query(
                max_length=4,
                description=f"{PROVENANCE_FILTER_HELP} Repeat the parameter for several: "
                "?provenance=tool_output&provenance=imported.",
            ),
        ] = None,
    ) -> MemoryPageOut:
        """A page of memories, newest first: the current versions, or those valid
        ``as_of`` a moment, or every version (``include_superseded``); not both. Page
        with ``cursor`` (each page's ``next_cursor``) at any depth, or ``offset``."""
        return await listed(
            memories,
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

    @router.delete("/memories", responses=error_responses(*_ALWAYS, 403, 422))
    async def delete_memories(
        caller: Caller,
        agent_id: IdParam | None = None,
        session_id: IdParam | None = None,
        scope: ScopeName | None = None,
    ) -> DeletedCount:
        """Erase an agent's or a session's memories (what the same filters list), in
        every tier; ``agent_id`` or ``session_id`` is required."""
        count = await memories.delete_many(
            caller, agent_id=agent_id, session_id=session_id, scope=scope
        )
        return DeletedCount(deleted=count)

    @router.post("/memories/search", responses=error_responses(*_ALWAYS, *_BODY, 403))
    async def search_memories(body: SearchRequest, caller: Caller) -> SearchResults:
        """Full-text, semantic or hybrid (default) search of the current versions, or of
        those valid ``as_of`` a moment."""
        return await searched(memories, caller, body)

    @router.get("/memories/{memory_id}", responses=error_responses(*_ALWAYS, 404, 422))
    async def get_memory(memory_id: MemoryId, caller: Caller) -> MemoryOut:
        return memory_out(await memories.get(caller, memory_id))

    @router.get("/memories/{memory_id}/history", responses=error_responses(*_ALWAYS, 404, 422))
    async def memory_history(memory_id: MemoryId, caller: Caller) -> MemoryHistoryOut:
        """Every version of a memory, oldest first, each with its validity and what
        replaced it; also after the memory cap evicted it. A deleted memory has none."""
        return history_out(memory_id, await memories.history(caller, memory_id))

    @router.put("/memories/{memory_id}", responses=error_responses(*_ALWAYS, *_BODY, 403, 404))
    async def update_memory(memory_id: MemoryId, body: MemoryUpdate, caller: Caller) -> MemoryOut:
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
        return memory_out(await memories.update(caller, memory_id, **changes))

    @router.delete("/memories/{memory_id}", responses=error_responses(*_ALWAYS, 403, 404, 422))
    async def delete_memory(memory_id: MemoryId, caller: Caller) -> Deleted:
        removed = await memories.delete(caller, memory_id)
        return Deleted(deleted=True, id=removed.id)

    return router


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
    )
    return SearchResults(results=[hit_out(h) for h in hits])


def _context_routes(services: Services) -> APIRouter:
    router = APIRouter(tags=["memories"])
    Caller = Annotated[Principal, Depends(bearer_principal(services.keys))]
    memories = services.memories

    @router.get("/context", responses=error_responses(*_ALWAYS, 403, 422))
    async def context(
        caller: Caller,
        agent_id: IdParam,
        session_id: IdParam | None = None,
        query: Annotated[str | None, Query(min_length=1, max_length=4000)] = None,
        budget: Annotated[int, Query(ge=MIN_BUDGET, le=MAX_BUDGET)] = 8_000,
    ) -> ContextOut:
        """What to inject before the agent runs: the ``<memories>`` block and, for a
        query, the ``<knowledge>`` block."""
        found = await memories.prompt_context(
            caller,
            agent_id=agent_id,
            session_id=session_id,
            query=query,
            budget=budget,
        )
        return context_out(found)

    return router


def _knowledge_routes(services: Services) -> APIRouter:
    router = APIRouter(tags=["knowledge"])
    Caller = Annotated[Principal, Depends(bearer_principal(services.keys))]
    knowledge = services.knowledge

    @router.post(
        "/knowledge",
        status_code=201,
        responses={**error_responses(*_ALWAYS, *_BODY, 403), 202: _INDEXING},
    )
    async def add_document(
        body: KnowledgeCreate, caller: Caller, request: Request, response: Response
    ) -> DocumentSummary:
        """Add a document: embedded now (201) or, over 128 passages, in the background
        (202; ``Location`` is its status, searchable passage by passage meanwhile). The
        text may be up to 10 MiB, the body 12 MiB."""
        doc = await knowledge.add(
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

    @router.get("/knowledge", responses=error_responses(*_ALWAYS, 422))
    async def list_documents(
        caller: Caller,
        limit: Annotated[int, Query(ge=1, le=500)] = 50,
        offset: Annotated[int, Query(ge=0, le=kb.MAX_LIST_OFFSET)] = 0,
    ) -> DocumentPage:
        docs, total = await knowledge.list(caller, limit=limit, offset=offset)
        return DocumentPage(
            documents=[document_summary(d) for d in docs], total=total, limit=limit, offset=offset
        )

    @router.post("/knowledge/search", responses=error_responses(*_ALWAYS, *_BODY))
    async def search_documents(body: KnowledgeSearch, caller: Caller) -> KnowledgeResults:
        hits = await knowledge.search(caller, body.query, limit=body.limit)
        return KnowledgeResults(results=[knowledge_hit_out(h) for h in hits])

    @router.get("/knowledge/{document_id}", responses=error_responses(*_ALWAYS, 404, 422))
    async def get_document(document_id: DocumentId, caller: Caller) -> DocumentOut:
        """The document with its text and its indexing progress."""
        return document_out(await knowledge.get(caller, document_id))

    @router.get("/knowledge/{document_id}/status", responses=error_responses(*_ALWAYS, 404, 422))
    async def document_status(document_id: DocumentId, caller: Caller) -> DocumentSummary:
        """The document without its text: poll this while it is ``indexing``."""
        return document_summary(await knowledge.status(caller, document_id))

    @router.delete("/knowledge/{document_id}", responses=error_responses(*_ALWAYS, 403, 404, 422))
    async def delete_document(document_id: DocumentId, caller: Caller) -> Deleted:
        removed = await knowledge.delete(caller, document_id)
        return Deleted(deleted=True, id=removed.id)

    return router


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
