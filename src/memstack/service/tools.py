"""The ``store_memory`` tool of the memory service, bound to the running agent."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, cast

from memstack._json import JSON, JSONObject
from memstack.clock import iso_from_ms
from memstack.errors import InvalidInput, ToolInputError
from memstack.service.memories import MemoryService
from memstack.service.principal import Principal
from memstack.service.types import MAX_KEY_CHARS, MAX_VALUE_CHARS, Scope
from memstack.tools import Tool

if TYPE_CHECKING:
    from memstack.context import ProcessingContext

__all__ = ["StoreMemoryTool"]


class StoreMemoryTool(Tool):
    name = "store_memory"
    description = (
        "Store a memory that persists across executions. Use a short descriptive key; "
        "storing the same key again updates it. Scope: 'agent' (default) for this agent "
        "across workflows, 'session' for this run only, 'global' to share with every agent."
    )
    input_schema: JSONObject = {
        "type": "object",
        "properties": {
            "key": {
                "type": "string",
                "minLength": 1,
                "maxLength": MAX_KEY_CHARS,
                "description": "Short descriptive key for the memory",
            },
            "value": {
                "type": "string",
                "minLength": 1,
                "maxLength": MAX_VALUE_CHARS,
                "description": "The content to remember",
            },
            "scope": {
                "type": "string",
                "enum": ["session", "agent", "global"],
                "description": "session, agent (default), or global",
            },
            "metadata": {"type": "object", "description": "Optional metadata tags"},
        },
        "required": ["key", "value"],
        "additionalProperties": False,
    }

    # A run bound without a session stores scope 'session' in the service's
    # DEFAULT_SESSION, where the same binding's context reads it back.
    def __init__(
        self,
        store: MemoryService,
        principal: Principal,
        *,
        agent_id: str,
        session_id: str | None = None,
    ) -> None:
        self.store = store
        self.principal = principal
        self.agent_id = agent_id
        self.session_id = session_id

    async def process(self, context: ProcessingContext, params: Mapping[str, JSON]) -> JSON:
        scope = cast(Scope, params.get("scope", "agent"))
        try:
            memory = await self.store.store(
                self.principal,
                agent_id=self.agent_id,
                key=cast(str, params["key"]),
                value=cast(str, params["value"]),
                scope=scope,
                session_id=self.session_id if scope == "session" else None,
                metadata=cast("dict[str, JSON] | None", params.get("metadata")),
            )
        except InvalidInput as exc:
            raise ToolInputError(
                f"`store_memory` refused the call: {exc}",
                tool=self.name,
                fields=(exc.field,) if exc.field else (),
            ) from exc
        return {
            "ok": True,
            "id": memory.id,
            "key": memory.key,
            "scope": memory.scope,
            "updatedAt": iso_from_ms(round(memory.updated_at * 1000)),
        }

    def user_message(self, params: Mapping[str, JSON]) -> str:
        return f"Storing memory: {params.get('key', '(no key)')}"
