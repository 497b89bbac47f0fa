"""The MCP server: memstack's memory tools and the ``<memories>`` resource.

A thin adapter, as REST is: each tool is one call into the services the server runs on
(``MemoryService``, ``KnowledgeBase``, ``prompt_context``), returns the REST API's JSON
shape (``memstack.transports.schemas``), and turns the service's errors into MCP tool
errors carrying the service's message. Who is calling comes from ``caller``: the key
given at start over stdio, the request's Bearer key over HTTP.

No ``from __future__ import annotations`` here: the SDK reads the tool signatures.
"""

import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.types import ToolAnnotations
from pydantic import Field

from memstack import __version__
from memstack.errors import MemstackError, StoreUnavailable
from memstack.service.memories import MAX_LIST_LIMIT, MAX_LIST_OFFSET, MAX_SEARCH_LIMIT
from memstack.service.paging import MAX_CURSOR_CHARS
from memstack.service.principal import Principal
from memstack.service.prompt import MAX_BUDGET, MIN_BUDGET
from memstack.service.types import (
    MAX_ID_PART_CHARS,
    MAX_KEY_CHARS,
    MAX_PROVENANCE_DETAIL_CHARS,
    MAX_VALUE_CHARS,
)
from memstack.transports.schemas import (
    AS_OF_HELP,
    ID_RULE,
    PROVENANCE_DETAIL_HELP,
    PROVENANCE_FILTER_HELP,
    PROVENANCE_HELP,
    ContextOut,
    Deleted,
    KnowledgeResults,
    MemoryHistoryOut,
    MemoryOut,
    MemoryPageOut,
    ProvenanceName,
    SearchResults,
    Ttl,
    context_out,
    history_out,
    hit_out,
    knowledge_hit_out,
    memory_out,
    page_out,
)
from memstack.wiring import Services

__all__ = ["CONTEXT_RESOURCE", "Caller", "build_server"]

Caller = Callable[[], Awaitable[Principal]]
"""Resolves the principal of the current call (raises ``ToolError`` when there is none)."""

CONTEXT_RESOURCE = "memstack://context/{agent_id}"

INSTRUCTIONS = (
    "memstack keeps memories for agents. Call get_context before you answer to see what is "
    "remembered; call store_memory to remember a fact, a preference or a decision under a "
    "short key (the same key again updates it); use search_memories to find older ones."
)

AgentId = Annotated[
    str, Field(min_length=1, max_length=MAX_ID_PART_CHARS, description=f"The agent. {ID_RULE}")
]
SessionId = Annotated[
    str | None, Field(default=None, min_length=1, max_length=MAX_ID_PART_CHARS, description=ID_RULE)
]
ScopeName = Literal["session", "agent", "global"]
MemoryId = Annotated[
    str, Field(min_length=1, max_length=200, description="A memory's id (mem_...).")
]
AsOf = Annotated[float | None, Field(allow_inf_nan=False, description=AS_OF_HELP)]
Provenances = Annotated[
    list[ProvenanceName] | None,
    Field(min_length=1, max_length=4, description=PROVENANCE_FILTER_HELP),
]


def build_server(
    services: Services, caller: Caller, *, default_agent: str | None = None
) -> MCPServer:
    """An MCP server over ``services``; ``default_agent`` is the agent ``store_memory``
    and ``get_context`` act for when the call names none."""
    with _root_logging_kept():
        server: MCPServer = MCPServer(
            "memstack", title="memstack memory", version=__version__, instructions=INSTRUCTIONS
        )
    _memory_tools(server, services, caller, default_agent)
    _context_tools(server, services, caller, default_agent)
    return server


def _memory_tools(
    server: MCPServer, services: Services, caller: Caller, default_agent: str | None
) -> None:
    memories = services.memories
    read_only = ToolAnnotations(read_only_hint=True, destructive_hint=False)

    @server.tool(
        description=(
            "Store a memory that persists across conversations. Use a short descriptive key; "
            "storing the same key again (same agent and scope) updates it. Scope: 'agent' "
            "(default) for this agent, 'session' for one session (session_id; without one, "
            "the session 'default'), 'global' to share with every agent."
        ),
        annotations=ToolAnnotations(destructive_hint=False, idempotent_hint=True),
    )
    async def store_memory(
        key: Annotated[
            str, Field(min_length=1, max_length=MAX_KEY_CHARS, description="Short descriptive key")
        ],
        value: Annotated[
            str,
            Field(min_length=1, max_length=MAX_VALUE_CHARS, description="The content to remember"),
        ],
        scope: Annotated[
            ScopeName, Field(description="session, agent (default), or global")
        ] = "agent",
        metadata: Annotated[
            dict[str, Any] | None, Field(description="Optional metadata tags")
        ] = None,
        agent_id: Annotated[
            str | None,
            Field(
                min_length=1,
                max_length=MAX_ID_PART_CHARS,
                description="The agent the memory belongs to; the server's default agent "
                "when omitted.",
            ),
        ] = None,
        session_id: SessionId = None,
        ttl: Annotated[
            Ttl, Field(description="When it expires: an ISO 8601 time, or seconds from now.")
        ] = None,
        provenance: Annotated[
            ProvenanceName | None,
            Field(description=f"{PROVENANCE_HELP} Omitted: an update keeps the memory's."),
        ] = None,
        provenance_detail: Annotated[
            str | None,
            Field(
                min_length=1,
                max_length=MAX_PROVENANCE_DETAIL_CHARS,
                description=PROVENANCE_DETAIL_HELP,
            ),
        ] = None,
    ) -> MemoryOut:
        async with _tool_errors():
            memory = await memories.store(
                await caller(),
                agent_id=_agent(agent_id, default_agent),
                key=key,
                value=value,
                scope=scope,
                session_id=session_id,
                metadata=metadata,
                ttl=ttl,
                provenance=provenance,
                provenance_detail=provenance_detail,
            )
        return memory_out(memory)

    @server.tool(
        description="Search memories by meaning and keywords (hybrid, default), keywords "
        "only (text) or meaning only (semantic); best first, with scores and each "
        "memory's provenance.",
        annotations=read_only,
    )
    async def search_memories(
        query: Annotated[str, Field(min_length=1, max_length=MAX_VALUE_CHARS)],
        agent_id: Annotated[
            str | None,
            Field(
                min_length=1,
                max_length=MAX_ID_PART_CHARS,
                description="Only this agent's (and global).",
            ),
        ] = None,
        scope: ScopeName | None = None,
        session_id: SessionId = None,
        key: Annotated[str | None, Field(min_length=1, max_length=MAX_KEY_CHARS)] = None,
        mode: Literal["hybrid", "text", "semantic"] = "hybrid",
        limit: Annotated[int, Field(ge=1, le=MAX_SEARCH_LIMIT)] = 10,
        as_of: AsOf = None,
        provenances: Provenances = None,
    ) -> SearchResults:
        async with _tool_errors():
            hits = await memories.search(
                await caller(),
                query,
                agent_id=agent_id,
                scope=scope,
                session_id=session_id,
                key=key,
                mode=mode,
                limit=limit,
                as_of=as_of,
                provenances=provenances,
            )
        return SearchResults(results=[hit_out(h) for h in hits])

    @server.tool(
        description="A page of memories, newest first: the current versions, or those valid "
        "as_of a moment, or every version (include_superseded); not both. For the next "
        "page pass its next_cursor as cursor (null: the last page).",
        annotations=read_only,
    )
    async def list_memories(
        agent_id: Annotated[str | None, Field(min_length=1, max_length=MAX_ID_PART_CHARS)] = None,
        scope: ScopeName | None = None,
        session_id: SessionId = None,
        key: Annotated[str | None, Field(min_length=1, max_length=MAX_KEY_CHARS)] = None,
        limit: Annotated[int, Field(ge=1, le=MAX_LIST_LIMIT)] = 50,
        offset: Annotated[int, Field(ge=0, le=MAX_LIST_OFFSET)] = 0,
        cursor: Annotated[
            str | None,
            Field(
                min_length=1,
                max_length=MAX_CURSOR_CHARS,
                description="The next_cursor of the page before: the page after it, at any depth.",
            ),
        ] = None,
        as_of: AsOf = None,
        include_superseded: Annotated[
            bool, Field(description="Every version, current or closed, each with its validity.")
        ] = False,
        provenances: Provenances = None,
    ) -> MemoryPageOut:
        async with _tool_errors():
            page = await memories.list(
                await caller(),
                agent_id=agent_id,
                scope=scope,
                session_id=session_id,
                key=key,
                limit=limit,
                offset=offset,
                cursor=cursor,
                as_of=as_of,
                include_superseded=include_superseded,
                provenances=provenances,
            )
        return page_out(page)

    @server.tool(description="One memory by its id.", annotations=read_only)
    async def get_memory(memory_id: MemoryId) -> MemoryOut:
        async with _tool_errors():
            memory = await memories.get(await caller(), memory_id)
        return memory_out(memory)

    @server.tool(
        description="Every version of a memory, oldest first, each with its validity "
        "(valid_from, valid_to: null on the current one) and what ended it (superseded_by, "
        "closed_reason). Storing a new value under a memory's key supersedes its value.",
        annotations=read_only,
    )
    async def memory_history(memory_id: MemoryId) -> MemoryHistoryOut:
        async with _tool_errors():
            versions = await memories.history(await caller(), memory_id)
        return history_out(memory_id, versions)

    @server.tool(
        description="Delete a memory by its id, from every tier, with every version of it "
        "(an erasure: nothing of it stays in its history).",
        annotations=ToolAnnotations(destructive_hint=True, idempotent_hint=True),
    )
    async def delete_memory(memory_id: MemoryId) -> Deleted:
        async with _tool_errors():
            removed = await memories.delete(await caller(), memory_id)
        return Deleted(deleted=True, id=removed.id)


def _context_tools(
    server: MCPServer, services: Services, caller: Caller, default_agent: str | None
) -> None:
    memories, knowledge = services.memories, services.knowledge
    read_only = ToolAnnotations(read_only_hint=True, destructive_hint=False)

    async def context(
        agent_id: str | None, session_id: str | None, query: str | None, budget: int
    ) -> ContextOut:
        found = await memories.prompt_context(
            await caller(),
            agent_id=_agent(agent_id, default_agent),
            session_id=session_id,
            query=query,
            budget=budget,
        )
        return context_out(found)

    @server.tool(
        description="What is remembered for an agent, as the <memories> block to read before "
        "answering (its session's, its own and the global memories) and, for a query, the "
        "<knowledge> block of the best matching documents.",
        annotations=read_only,
    )
    async def get_context(
        agent_id: Annotated[
            str | None,
            Field(
                min_length=1,
                max_length=MAX_ID_PART_CHARS,
                description="The server's default when omitted.",
            ),
        ] = None,
        session_id: SessionId = None,
        query: Annotated[str | None, Field(min_length=1, max_length=4_000)] = None,
        budget: Annotated[
            int, Field(ge=MIN_BUDGET, le=MAX_BUDGET, description="Characters, at most.")
        ] = 8_000,
    ) -> ContextOut:
        async with _tool_errors():
            return await context(agent_id, session_id, query, budget)

    @server.tool(
        description="Search the knowledge documents (added through the API) by meaning and "
        "keywords; the best passages first.",
        annotations=read_only,
    )
    async def search_knowledge(
        query: Annotated[str, Field(min_length=1, max_length=4_000)],
        limit: Annotated[int, Field(ge=1, le=50)] = 5,
    ) -> KnowledgeResults:
        async with _tool_errors():
            hits = await knowledge.search(await caller(), query, limit=limit)
        return KnowledgeResults(results=[knowledge_hit_out(h) for h in hits])

    @server.resource(
        CONTEXT_RESOURCE,
        name="memories",
        description="The <memories> block of an agent, as get_context returns it.",
        mime_type="text/plain",
    )
    async def memories_block(agent_id: str) -> str:
        try:
            return (await context(agent_id, None, None, 8_000)).memories_block
        except (MemstackError, ToolError) as exc:
            raise ResourceError(str(exc)) from exc


def _agent(agent_id: str | None, default_agent: str | None) -> str:
    chosen = agent_id or default_agent
    if chosen is None:
        raise ToolError(
            "agent_id is required: name the agent the memory is for, or start the server with "
            "a default agent (`memstack mcp --agent-id NAME`)."
        )
    return chosen


@contextmanager
def _root_logging_kept() -> Iterator[None]:
    """The SDK's constructor calls ``logging.basicConfig``; the process that embeds the
    server (``memstack serve``, a host application) keeps its own logging setup."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        yield
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)


@asynccontextmanager
async def _tool_errors() -> AsyncIterator[None]:
    """The service's errors as MCP tool errors, with the service's message."""
    try:
        yield
    except StoreUnavailable as exc:
        raise ToolError(f"a backing store is unavailable: {exc}; try again later.") from exc
    except MemstackError as exc:
        raise ToolError(str(exc)) from exc
