"""The MCP tools that manage an agent's memories: change one, erase all of an agent's,
list the agents that have some (``MemoryService.update``, ``delete_many``, ``agents``).

A table as ``server`` has, each row a small function building its tool over the memory
service and the call's principal; the answers are the REST API's JSON shapes. Errors go
through the server's error scope, which turns the service's errors into tool errors with
its message. Erasing an agent's memories takes ``confirm: true``: an LLM that calls it
by mistake is told how many memories it would erase, and nothing is erased.

No ``from __future__ import annotations`` here: the SDK reads the tool signatures.
"""

from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Annotated, Any, Final

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field, StrictBool

from memstack.errors import InvalidInput
from memstack.service.memories import AgentPage, MemoryService
from memstack.service.principal import Principal
from memstack.transports.schemas import (
    DEFAULT_LIST_LIMIT,
    PROVENANCE_HELP,
    AgentId,
    DeletedCount,
    ListLimit,
    ListOffset,
    MemoryId,
    MemoryOut,
    MemoryValue,
    ProvenanceDetail,
    ProvenanceName,
    Ttl,
    memory_out,
)

__all__ = ["MANAGE_TOOLS", "AgentOut", "AgentPageOut", "ManageToolEnv", "add_manage_tools"]

_ToolFn = Callable[..., Awaitable[Any]]


@dataclass(frozen=True)
class ManageToolEnv:
    """What the tools run against: the service, who is calling, and the server's error
    scope (service errors become tool errors inside it)."""

    memories: MemoryService
    caller: Callable[[], Awaitable[Principal]]
    errors: Callable[[], AbstractAsyncContextManager[None]]


@dataclass(frozen=True)
class ManageTool:
    """One row of the table: ``build(env)`` is the tool, named after its function."""

    build: Callable[[ManageToolEnv], _ToolFn]
    description: str
    annotations: ToolAnnotations


def add_manage_tools(server: MCPServer, env: ManageToolEnv) -> None:
    """Register every tool of ``MANAGE_TOOLS`` on ``server``."""
    for tool in MANAGE_TOOLS:
        server.add_tool(tool.build(env), description=tool.description, annotations=tool.annotations)


class AgentOut(BaseModel):
    agent_id: str
    memories: int = Field(description="Its current memories of its own (agent and session scope).")


class AgentPageOut(BaseModel):
    agents: list[AgentOut]
    total: int
    limit: int
    offset: int


def _agent_page_out(page: AgentPage) -> AgentPageOut:
    return AgentPageOut(
        agents=[AgentOut(agent_id=a.agent_id, memories=a.memories) for a in page.agents],
        total=page.total,
        limit=page.limit,
        offset=page.offset,
    )


def _update_memory(env: ManageToolEnv) -> _ToolFn:
    async def update_memory(
        memory_id: MemoryId,
        value: Annotated[MemoryValue | None, Field(description="The new content.")] = None,
        metadata: Annotated[
            dict[str, Any] | None, Field(description="Replaces the metadata tags.")
        ] = None,
        ttl: Annotated[
            Ttl, Field(description="A new expiry: an ISO 8601 time, or seconds from now.")
        ] = None,
        remove_ttl: Annotated[
            StrictBool, Field(description="true: the memory no longer expires.")
        ] = False,
        provenance: Annotated[
            ProvenanceName | None,
            Field(description=f"{PROVENANCE_HELP} Omitted: kept."),
        ] = None,
        provenance_detail: ProvenanceDetail = None,
    ) -> MemoryOut:
        changes: dict[str, Any] = {
            "value": value,
            "metadata": metadata,
            "provenance": provenance,
            "provenance_detail": provenance_detail,
        }
        async with env.errors():
            if ttl is not None and remove_ttl:
                raise InvalidInput("give ttl or remove_ttl, not both.", field="ttl")
            if ttl is not None or remove_ttl:
                changes["ttl"] = ttl
            if not any(v is not None for v in changes.values()) and not remove_ttl:
                raise InvalidInput(
                    "nothing to change: give value, metadata, ttl, remove_ttl or provenance.",
                    field="value",
                )
            memory = await env.memories.update(await env.caller(), memory_id, **changes)
        return memory_out(memory)

    return update_memory


def _delete_agent_memories(env: ManageToolEnv) -> _ToolFn:
    async def delete_agent_memories(
        agent_id: AgentId,
        confirm: Annotated[
            StrictBool,
            Field(
                description="true to erase them; anything else erases nothing and says how "
                "many there are."
            ),
        ],
    ) -> DeletedCount:
        async with env.errors():
            caller = await env.caller()
            if not confirm:
                page = await env.memories.list(caller, agent_id=agent_id, limit=1)
                raise InvalidInput(
                    f"agent {agent_id!r} has {page.total} memories (its own and the global "
                    "ones it wrote); to erase them all, with their history, call again with "
                    "confirm: true. Nothing was erased.",
                    field="confirm",
                )
            count = await env.memories.delete_many(caller, agent_id=agent_id)
        return DeletedCount(deleted=count)

    return delete_agent_memories


def _list_agents(env: ManageToolEnv) -> _ToolFn:
    async def list_agents(
        limit: ListLimit = DEFAULT_LIST_LIMIT, offset: ListOffset = 0
    ) -> AgentPageOut:
        async with env.errors():
            page = await env.memories.agents(await env.caller(), limit=limit, offset=offset)
        return _agent_page_out(page)

    return list_agents


MANAGE_TOOLS: Final = (
    ManageTool(
        _update_memory,
        "Change a memory by its id: its value, metadata, expiry (ttl, or remove_ttl) or "
        "provenance; what is left out is kept. A new value supersedes the old one, which "
        "stays in memory_history.",
        ToolAnnotations(destructive_hint=False, idempotent_hint=True),
    ),
    ManageTool(
        _delete_agent_memories,
        "Erase every memory of an agent (its session and agent memories, and the global "
        "ones it wrote), with their history, from every tier. Needs a key allowed to act for "
        "the agent (and to change global memories, if it wrote any) and confirm: true; "
        "without it, says how many would be erased and erases nothing.",
        ToolAnnotations(destructive_hint=True, idempotent_hint=True),
    ),
    ManageTool(
        _list_agents,
        "The agents that have memories of their own, by agent id, each with how many "
        "are current; a page at a time (total says how many agents there are).",
        ToolAnnotations(read_only_hint=True, destructive_hint=False),
    ),
)
