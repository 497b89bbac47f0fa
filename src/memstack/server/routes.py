"""The REST routes: thin adapters from HTTP to the memory service and knowledge base.

No ``from __future__ import annotations`` here: FastAPI reads the route signatures,
whose ``Caller`` dependency is built per app inside the router functions."""

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request

from memstack.server.auth import bearer_principal
from memstack.server.schemas import (
    KnowledgeCreate,
    KnowledgeSearch,
    MemoryCreate,
    MemoryUpdate,
    ScopeName,
    SearchRequest,
    document_out,
    hit_out,
    knowledge_hit_out,
    memory_out,
)
from memstack.server.services import Services
from memstack.store.knowledge import render_knowledge
from memstack.store.principal import Principal
from memstack.store.render import render_memories

__all__ = ["api_routes", "health_route"]

IdParam = Annotated[str, Query(min_length=1, max_length=128)]


def api_routes(services: Services) -> APIRouter:
    """Every authenticated route, under ``/api``."""
    router = APIRouter(prefix="/api")
    router.include_router(_memory_routes(services))
    router.include_router(_knowledge_routes(services))
    return router


def _memory_routes(services: Services) -> APIRouter:
    router = APIRouter()
    Caller = Annotated[Principal, Depends(bearer_principal(services.keys))]
    memories, knowledge = services.memories, services.knowledge

    @router.post("/memories", status_code=201, tags=["memories"])
    async def store_memory(body: MemoryCreate, caller: Caller) -> dict[str, Any]:
        """Store a memory; the same (agent_id, scope, key) again updates it."""
        memory = await memories.store(
            caller,
            agent_id=body.agent_id,
            key=body.key,
            value=body.value,
            scope=body.scope,
            session_id=body.session_id,
            metadata=body.metadata,
            ttl=body.ttl,
        )
        return memory_out(memory)

    @router.get("/memories", tags=["memories"])
    async def list_memories(
        caller: Caller,
        agent_id: IdParam | None = None,
        scope: ScopeName | None = None,
        session_id: IdParam | None = None,
        key: Annotated[str | None, Query(min_length=1, max_length=256)] = None,
        limit: Annotated[int, Query(ge=1, le=500)] = 50,
        offset: Annotated[int, Query(ge=0)] = 0,
    ) -> dict[str, Any]:
        """A page of memories, newest first."""
        page = await memories.list(
            caller,
            agent_id=agent_id,
            scope=scope,
            session_id=session_id,
            key=key,
            limit=limit,
            offset=offset,
        )
        return {
            "memories": [memory_out(m) for m in page.memories],
            "total": page.total,
            "limit": page.limit,
            "offset": page.offset,
        }

    @router.post("/memories/search", tags=["memories"])
    async def search_memories(body: SearchRequest, caller: Caller) -> dict[str, Any]:
        """Full-text, semantic or hybrid (default) search."""
        hits = await memories.search(
            caller,
            body.query,
            agent_id=body.agent_id,
            scope=body.scope,
            session_id=body.session_id,
            key=body.key,
            mode=body.mode,
            limit=body.limit,
        )
        return {"results": [hit_out(h) for h in hits]}

    @router.get("/memories/{memory_id}", tags=["memories"])
    async def get_memory(memory_id: str, caller: Caller) -> dict[str, Any]:
        return memory_out(await memories.get(caller, memory_id))

    @router.put("/memories/{memory_id}", tags=["memories"])
    async def update_memory(memory_id: str, body: MemoryUpdate, caller: Caller) -> dict[str, Any]:
        """Change value, metadata or TTL (``"ttl": null`` removes it) in every tier."""
        changes: dict[str, Any] = {"value": body.value, "metadata": body.metadata}
        if "ttl" in body.model_fields_set:
            changes["ttl"] = body.ttl
        return memory_out(await memories.update(caller, memory_id, **changes))

    @router.delete("/memories/{memory_id}", tags=["memories"])
    async def delete_memory(memory_id: str, caller: Caller) -> dict[str, Any]:
        removed = await memories.delete(caller, memory_id)
        return {"deleted": True, "id": removed.id}

    @router.get("/context", tags=["memories"])
    async def context(
        caller: Caller,
        agent_id: IdParam,
        session_id: IdParam | None = None,
        query: Annotated[str | None, Query(min_length=1, max_length=4000)] = None,
        budget: Annotated[int, Query(ge=200, le=200_000)] = 8_000,
    ) -> dict[str, Any]:
        """What to inject before the agent runs: the ``<memories>`` block and, for a
        query, the ``<knowledge>`` block."""
        found = await memories.context(caller, agent_id=agent_id, session_id=session_id)
        memories_block = render_memories(found, budget_chars=budget)
        hits = await knowledge.search(caller, query, limit=5) if query else []
        knowledge_block = render_knowledge(hits, budget_chars=max(200, budget // 2))
        return {
            "memories": [memory_out(m) for m in found],
            "memories_block": memories_block,
            "knowledge_block": knowledge_block,
            "prompt": "\n\n".join(b for b in (memories_block, knowledge_block) if b),
        }

    return router


def _knowledge_routes(services: Services) -> APIRouter:
    router = APIRouter()
    Caller = Annotated[Principal, Depends(bearer_principal(services.keys))]
    knowledge = services.knowledge

    @router.post("/knowledge", status_code=201, tags=["knowledge"])
    async def add_document(body: KnowledgeCreate, caller: Caller) -> dict[str, Any]:
        doc = await knowledge.add(
            caller, title=body.title, text=body.text, tags=body.tags, source=body.source
        )
        return document_out(doc, with_text=False)

    @router.get("/knowledge", tags=["knowledge"])
    async def list_documents(
        caller: Caller,
        limit: Annotated[int, Query(ge=1, le=500)] = 50,
        offset: Annotated[int, Query(ge=0)] = 0,
    ) -> dict[str, Any]:
        docs, total = await knowledge.list(caller, limit=limit, offset=offset)
        return {
            "documents": [document_out(d, with_text=False) for d in docs],
            "total": total,
            "limit": limit,
            "offset": offset,
        }

    @router.post("/knowledge/search", tags=["knowledge"])
    async def search_documents(body: KnowledgeSearch, caller: Caller) -> dict[str, Any]:
        hits = await knowledge.search(caller, body.query, limit=body.limit)
        return {"results": [knowledge_hit_out(h) for h in hits]}

    @router.get("/knowledge/{document_id}", tags=["knowledge"])
    async def get_document(document_id: str, caller: Caller) -> dict[str, Any]:
        return document_out(await knowledge.get(caller, document_id))

    @router.delete("/knowledge/{document_id}", tags=["knowledge"])
    async def delete_document(document_id: str, caller: Caller) -> dict[str, Any]:
        removed = await knowledge.delete(caller, document_id)
        return {"deleted": True, "id": removed.id}

    return router


def health_route(services: Services) -> APIRouter:
    router = APIRouter()

    @router.get("/healthz", tags=["health"])
    async def healthz(request: Request) -> dict[str, Any]:
        """Liveness and the state of both tiers (no authentication)."""
        import asyncio

        from memstack.errors import StoreUnavailable

        short = "ok"
        try:
            await asyncio.to_thread(services.short_term.ping)
        except StoreUnavailable:
            short = "unavailable"
        return {"status": "ok", "short_term": short}

    return router
