"""The MCP server: memstack's memory tools and the ``<memories>`` resource.

A thin adapter, as REST is: each tool is one call into the services the server runs on
(``MemoryService``, ``KnowledgeBase``, ``prompt_context``), returns the REST API's JSON
shape (``memstack.transports.schemas``), and turns the service's errors into MCP tool
errors carrying the service's message. Who is calling comes from ``caller``: the key
given at start over stdio, the request's Bearer key over HTTP.

The tools are a table (``_TOOLS``): each row is a small function building the tool over
the server's services (``_Env``), its description and its annotations. Their parameters
are the rules MCP shares with REST (``memstack.transports.schemas``).

No ``from __future__ import annotations`` here: the SDK reads the tool signatures.
"""

import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from typing import Annotated, Any, Final

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.types import ToolAnnotations
from pydantic import Field, Strict

from memstack import __version__
from memstack.errors import MemstackError, StoreUnavailable
from memstack.service.knowledge import KnowledgeBase
from memstack.service.memories import MemoryService
from memstack.service.principal import Principal
from memstack.transports.mcp.manage_tools import ManageToolEnv, add_manage_tools
from memstack.transports.mcp.user_tools import UserToolEnv, add_user_tools
from memstack.transports.schemas import (
    CURSOR_HELP,
    DEFAULT_KNOWLEDGE_LIMIT,
    DEFAULT_LIST_LIMIT,
    DEFAULT_SEARCH_LIMIT,
    ID_RULE,
    PROVENANCE_HELP,
    AgentId,
    AsOf,
    Budget,
    ContextOut,
    Cursor,
    Deleted,
    IncludeSuperseded,
    KnowledgeLimit,
    KnowledgeQuery,
    KnowledgeResults,
    ListLimit,
    ListOffset,
    MemoryHistoryOut,
    MemoryId,
    MemoryKey,
    MemoryOut,
    MemoryPageOut,
    MemoryValue,
    MetadataFilter,
    MinScore,
    ProvenanceDetail,
    ProvenanceName,
    Provenances,
    ScopeName,
    SearchLimit,
    SearchMode,
    SearchResults,
    SessionId,
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

_OptionalSession = Annotated[SessionId | None, Field(description=ID_RULE)]
_ToolFn = Callable[..., Awaitable[Any]]


def build_server(
    services: Services, caller: Caller, *, default_agent: str | None = None
) -> MCPServer:
    """An MCP server over ``services``; ``default_agent`` is the agent ``store_memory``
    and ``get_context`` act for when the call names none."""
    with _root_logging_kept():
        server: MCPServer = MCPServer(
            "memstack", title="memstack memory", version=__version__, instructions=INSTRUCTIONS
        )
    env = _Env(services.memories, services.knowledge, caller, default_agent)
    for tool in _TOOLS:
        server.add_tool(tool.build(env), description=tool.description, annotations=tool.annotations)
    add_user_tools(server, UserToolEnv(services.users, caller, _tool_errors))
    add_manage_tools(server, ManageToolEnv(services.memories, caller, _tool_errors))
    _add_context_resource(server, env)
    return server


@dataclass(frozen=True)
class _Env:
    """What one server's tools run against."""

    memories: MemoryService
    knowledge: KnowledgeBase
    caller: Caller
    default_agent: str | None

    def agent(self, agent_id: str | None) -> str:
        """The agent named, else the server's default; a tool error without either."""
        chosen = agent_id or self.default_agent
        if chosen is None:
            raise ToolError(
                "agent_id is required: name the agent the memory is for, or start the server "
                "with a default agent (`memstack mcp --agent-id NAME`)."
            )
        return chosen

    async def context(
        self, agent_id: str | None, session_id: str | None, query: str | None, budget: int | None
    ) -> ContextOut:
        found = await self.memories.prompt_context(
            await self.caller(),
            agent_id=self.agent(agent_id),
            session_id=session_id,
            query=query,
            budget=budget,
        )
        return context_out(found)


@dataclass(frozen=True)
class _Tool:
    """One row of the tool table: ``build(env)`` is the tool, named after its function."""

    build: Callable[[_Env], _ToolFn]
    description: str
    annotations: ToolAnnotations


def _store_memory(env: _Env) -> _ToolFn:
    async def store_memory(
        key: Annotated[MemoryKey, Field(description="Short descriptive key")],
        value: Annotated[MemoryValue, Field(description="The content to remember")],
        scope: Annotated[
            ScopeName, Field(description="session, agent (default), or global")
        ] = "agent",
        metadata: Annotated[
            dict[str, Any] | None, Field(description="Optional metadata tags")
        ] = None,
        agent_id: Annotated[
            AgentId | None,
            Field(
                description="The agent the memory belongs to; the server's default agent "
                "when omitted."
            ),
        ] = None,
        session_id: _OptionalSession = None,
        ttl: Annotated[
            Ttl, Field(description="When it expires: an ISO 8601 time, or seconds from now.")
        ] = None,
        provenance: Annotated[
            ProvenanceName | None,
            Field(description=f"{PROVENANCE_HELP} Omitted: an update keeps the memory's."),
        ] = None,
        provenance_detail: ProvenanceDetail = None,
    ) -> MemoryOut:
        async with _tool_errors():
            memory = await env.memories.store(
                await env.caller(),
                agent_id=env.agent(agent_id),
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

    return store_memory


def _search_memories(env: _Env) -> _ToolFn:
    async def search_memories(
        query: MemoryValue,
        agent_id: Annotated[
            AgentId | None, Field(description="Only this agent's (and global).")
        ] = None,
        scope: ScopeName | None = None,
        session_id: _OptionalSession = None,
        key: MemoryKey | None = None,
        mode: SearchMode = "hybrid",
        limit: SearchLimit = DEFAULT_SEARCH_LIMIT,
        as_of: AsOf = None,
        provenances: Provenances = None,
        min_score: Annotated[MinScore, Strict()] = None,
        metadata: MetadataFilter = None,
    ) -> SearchResults:
        async with _tool_errors():
            hits = await env.memories.search(
                await env.caller(),
                query,
                agent_id=agent_id,
                scope=scope,
                session_id=session_id,
                key=key,
                mode=mode,
                limit=limit,
                as_of=as_of,
                provenances=provenances,
                min_score=min_score,
                metadata=metadata,
            )
        return SearchResults(results=[hit_out(h) for h in hits])

    return search_memories


def _list_memories(env: _Env) -> _ToolFn:
    async def list_memories(
        agent_id: AgentId | None = None,
        scope: ScopeName | None = None,
        session_id: _OptionalSession = None,
        key: MemoryKey | None = None,
        limit: ListLimit = DEFAULT_LIST_LIMIT,
        offset: ListOffset = 0,
        cursor: Annotated[Cursor | None, Field(description=f"{CURSOR_HELP}.")] = None,
        as_of: AsOf = None,
        include_superseded: IncludeSuperseded = False,
        provenances: Provenances = None,
    ) -> MemoryPageOut:
        async with _tool_errors():
            page = await env.memories.list(
                await env.caller(),
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

    return list_memories


def _get_memory(env: _Env) -> _ToolFn:
    async def get_memory(memory_id: MemoryId) -> MemoryOut:
        async with _tool_errors():
            memory = await env.memories.get(await env.caller(), memory_id)
        return memory_out(memory)

    return get_memory


def _memory_history(env: _Env) -> _ToolFn:
    async def memory_history(memory_id: MemoryId) -> MemoryHistoryOut:
        async with _tool_errors():
            versions = await env.memories.history(await env.caller(), memory_id)
        return history_out(memory_id, versions)

    return memory_history


def _delete_memory(env: _Env) -> _ToolFn:
    async def delete_memory(memory_id: MemoryId) -> Deleted:
        async with _tool_errors():
            removed = await env.memories.delete(await env.caller(), memory_id)
        return Deleted(deleted=True, id=removed.id)

    return delete_memory


def _get_context(env: _Env) -> _ToolFn:
    async def get_context(
        agent_id: Annotated[
            AgentId | None, Field(description="The server's default when omitted.")
        ] = None,
        session_id: _OptionalSession = None,
        query: KnowledgeQuery | None = None,
        budget: Budget | None = None,
    ) -> ContextOut:
        async with _tool_errors():
            return await env.context(agent_id, session_id, query, budget)

    return get_context


def _search_knowledge(env: _Env) -> _ToolFn:
    async def search_knowledge(
        query: KnowledgeQuery, limit: KnowledgeLimit = DEFAULT_KNOWLEDGE_LIMIT
    ) -> KnowledgeResults:
        async with _tool_errors():
            hits = await env.knowledge.search(await env.caller(), query, limit=limit)
        return KnowledgeResults(results=[knowledge_hit_out(h) for h in hits])

    return search_knowledge


_READ_ONLY: Final = ToolAnnotations(read_only_hint=True, destructive_hint=False)
_TOOLS: Final = (
    _Tool(
        _store_memory,
        "Store a memory that persists across conversations. Use a short descriptive key; "
        "storing the same key again (same agent and scope) updates it. Scope: 'agent' "
        "(default) for this agent, 'session' for one session (session_id; without one, "
        "the session 'default'), 'global' to share with every agent.",
        ToolAnnotations(destructive_hint=False, idempotent_hint=True),
    ),
    _Tool(
        _search_memories,
        "Search memories by meaning and keywords (hybrid, default), keywords "
        "only (text) or meaning only (semantic); best first, with scores and each "
        "memory's provenance.",
        _READ_ONLY,
    ),
    _Tool(
        _list_memories,
        "A page of memories, newest first: the current versions, or those valid "
        "as_of a moment, or every version (include_superseded); not both. For the next "
        "page pass its next_cursor as cursor (null: the last page).",
        _READ_ONLY,
    ),
    _Tool(_get_memory, "One memory by its id.", _READ_ONLY),
    _Tool(
        _memory_history,
        "Every version of a memory, oldest first, each with its validity "
        "(valid_from, valid_to: null on the current one) and what ended it (superseded_by, "
        "closed_reason). Storing a new value under a memory's key supersedes its value.",
        _READ_ONLY,
    ),
    _Tool(
        _delete_memory,
        "Delete a memory by its id, from every tier, with every version of it "
        "(an erasure: nothing of it stays in its history).",
        ToolAnnotations(destructive_hint=True, idempotent_hint=True),
    ),
    _Tool(
        _get_context,
        "What is remembered for an agent, as the <memories> block to read before "
        "answering (its session's, its own and the global memories) and, for a query, the "
        "<knowledge> block of the best matching documents.",
        _READ_ONLY,
    ),
    _Tool(
        _search_knowledge,
        "Search the knowledge documents (added through the API) by meaning and "
        "keywords; the best passages first.",
        _READ_ONLY,
    ),
)


def _add_context_resource(server: MCPServer, env: _Env) -> None:
    @server.resource(
        CONTEXT_RESOURCE,
        name="memories",
        description="The <memories> block of an agent, as get_context returns it.",
        mime_type="text/plain",
    )
    async def memories_block(agent_id: str) -> str:
        try:
            return (await env.context(agent_id, None, None, None)).memories_block
        except (MemstackError, ToolError) as exc:
            raise ResourceError(str(exc)) from exc


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
