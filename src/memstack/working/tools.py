"""The three LLM tools over working memory: memory_list, memory_read, memory_write."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Final, cast

from memstack._json import JSON, JSONObject, byte_size
from memstack.clock import iso_from_ms
from memstack.errors import ToolInputError
from memstack.tools import Tool
from memstack.working.keys import memory_keys
from memstack.working.memory import MEMORY_KINDS, MemoryEntry, MemoryKind

if TYPE_CHECKING:
    from memstack.context import ProcessingContext

__all__ = [
    "MAX_LIST_ENTRIES",
    "MEMORY_TOOL_NAMES",
    "MemoryListTool",
    "MemoryReadTool",
    "MemoryWriteTool",
    "memory_tools",
]

MAX_LIST_ENTRIES: Final = 200
"""Hard cap on entries one ``memory_list`` call returns; the most recent are kept."""
MAX_DESCRIPTION_CHARS: Final = 240
MAX_WRITE_BYTES: Final = 1_000_000
"""Largest value ``memory_write`` accepts, in bytes of JSON."""
MEMORY_TOOL_NAMES: Final = ("memory_list", "memory_read", "memory_write")


class MemoryListTool(Tool):
    name = "memory_list"
    description = (
        "List entries in shared agent memory (results from prior steps and tasks, inputs, "
        "and shared facts published by other agents). Returns metadata only — call "
        "`memory_read` to fetch full values. Use this when you need context from upstream "
        "work but don't yet know which entry holds it."
    )
    input_schema: JSONObject = {
        "type": "object",
        "properties": {
            "kind": {
                "type": "array",
                "items": {"type": "string", "enum": list(MEMORY_KINDS)},
                "description": "Optional filter — restrict results to the listed kinds. "
                "Omit to list everything.",
            },
            "key_prefix": {
                "type": "string",
                "description": "Optional filter — only entries whose key starts with this "
                'prefix (e.g. "task:").',
            },
            "sources": {
                "type": "array",
                "items": {"type": "string"},
                "description": "Optional filter — only entries produced by one of these "
                "source IDs.",
            },
        },
        "additionalProperties": False,
    }

    async def process(self, context: ProcessingContext, params: Mapping[str, JSON]) -> JSON:
        kinds = cast("list[MemoryKind] | None", params.get("kind"))
        sources = cast("list[str] | None", params.get("sources"))
        prefix = cast("str | None", params.get("key_prefix"))
        matched = context.memory.list(kind=kinds, key_prefix=prefix, sources=sources)
        shown = matched[-MAX_LIST_ENTRIES:]
        return {
            "total": len(matched),
            "returned": len(shown),
            "truncated": len(shown) < len(matched),
            "entries": [_describe(entry) for entry in shown],
        }

    def user_message(self, params: Mapping[str, JSON]) -> str:
        parts = []
        if isinstance(kinds := params.get("kind"), list):
            parts.append(f"kinds={','.join(map(str, kinds))}")
        if params.get("key_prefix"):
            parts.append(f"prefix={params['key_prefix']}")
        if isinstance(sources := params.get("sources"), list):
            parts.append(f"sources={','.join(map(str, sources))}")
        return f"Listing memory ({' '.join(parts)})" if parts else "Listing memory"


class MemoryReadTool(Tool):
    name = "memory_read"
    description = (
        "Read full values from shared agent memory by key. Use the keys returned by "
        "`memory_list`. Returns each requested entry with its value, kind, title, and "
        "source. Missing keys are reported in `missing`."
    )
    input_schema: JSONObject = {
        "type": "object",
        "properties": {
            "keys": {
                "type": "array",
                "items": {"type": "string"},
                "description": 'Memory keys to read (e.g. ["task:research", "step:summary"]).',
            }
        },
        "required": ["keys"],
        "additionalProperties": False,
    }

    async def process(self, context: ProcessingContext, params: Mapping[str, JSON]) -> JSON:
        found: dict[str, JSON] = {}
        missing: list[JSON] = []
        for key in cast("list[str]", params["keys"]):
            entry = context.memory.get(key)
            if entry is not None:
                found[key] = _full(entry)
            elif key not in missing:
                missing.append(key)
        return {"entries": found, "missing": missing}

    def user_message(self, params: Mapping[str, JSON]) -> str:
        keys = params.get("keys")
        if not isinstance(keys, list) or not keys:
            return "Reading memory"
        return (
            f"Reading memory: {keys[0]}"
            if len(keys) == 1
            else f"Reading memory: {len(keys)} entries"
        )


class MemoryWriteTool(Tool):
    """Publishes under ``shared:`` only, so agents cannot spoof step, task or input results.

    ``source`` names the writer (an agent or step id) on every entry it stores.
    """

    name = "memory_write"
    description = (
        "Publish a value to shared agent memory under the `shared:` namespace. Other agents "
        "and downstream steps can discover it via `memory_list` and fetch it via "
        "`memory_read`. Use this to broadcast facts, intermediate findings, or coordination "
        "signals to the rest of the team."
    )
    input_schema: JSONObject = {
        "type": "object",
        "properties": {
            "key": {
                "type": "string",
                "minLength": 1,
                "maxLength": 256,
                "description": "Suffix for the memory key. Stored as `shared:<key>`. Use a "
                'short, descriptive identifier (e.g. "top_sources").',
            },
            "value": {
                "description": "The value to publish. Any JSON-serializable structure or string."
            },
            "title": {
                "type": "string",
                "description": "Optional human-readable title shown when the entry is listed.",
            },
            "description": {
                "type": "string",
                "description": "Optional brief description shown alongside the title.",
            },
        },
        "required": ["key", "value"],
        "additionalProperties": False,
    }

    def __init__(self, *, source: str = "memory_write") -> None:
        self.source = source

    async def process(self, context: ProcessingContext, params: Mapping[str, JSON]) -> JSON:
        suffix = cast(str, params["key"]).removeprefix(memory_keys.SHARED)
        if not suffix:
            raise ToolInputError(
                "Invalid arguments for `memory_write`: `key` must name the entry after "
                '"shared:", e.g. "top_sources".',
                tool=self.name,
                fields=("key",),
            )
        value = params["value"]
        size = byte_size(value)
        if size > MAX_WRITE_BYTES:
            raise ToolInputError(
                f"Invalid arguments for `memory_write`: `value` is {size} bytes of JSON; "
                f"the limit is {MAX_WRITE_BYTES}. Publish a summary or split it across keys.",
                tool=self.name,
                fields=("value",),
            )
        title = params.get("title")
        description = params.get("description")
        entry = context.memory.set(
            key=memory_keys.shared(suffix),
            kind="shared",
            value=value,
            title=title if isinstance(title, str) else suffix,
            description=description if isinstance(description, str) else None,
            source=self.source,
        )
        return {
            "ok": True,
            "key": entry.key,
            "kind": entry.kind,
            "createdAt": iso_from_ms(entry.created_at),
        }

    def user_message(self, params: Mapping[str, JSON]) -> str:
        key = params.get("key")
        return f"Publishing to memory: shared:{key if isinstance(key, str) else '(no key)'}"


def memory_tools(*, source: str = "memory_write") -> list[Tool]:
    """New instances of ``memory_list``, ``memory_read`` and ``memory_write``.

    ``source`` is recorded on the entries ``memory_write`` stores; executors pass
    the id of the agent or step the tools belong to.
    """
    return [MemoryListTool(), MemoryReadTool(), MemoryWriteTool(source=source)]


def _describe(entry: MemoryEntry) -> JSONObject:
    description = entry.description
    if description is not None and len(description) > MAX_DESCRIPTION_CHARS:
        description = description[:MAX_DESCRIPTION_CHARS] + "…"
    return _without_none(
        {
            "key": entry.key,
            "kind": entry.kind,
            "title": entry.title,
            "description": description,
            "source": entry.source,
            "valueBytes": byte_size(entry.value),
            "createdAt": iso_from_ms(entry.created_at),
        }
    )


def _full(entry: MemoryEntry) -> JSONObject:
    return _without_none(
        {
            "key": entry.key,
            "kind": entry.kind,
            "value": entry.value,
            "source": entry.source,
            "title": entry.title,
            "description": entry.description,
            "createdAt": entry.created_at,
        },
        keep=("value",),
    )


def _without_none(fields: JSONObject, keep: tuple[str, ...] = ()) -> JSONObject:
    """Drop absent optional fields, as JavaScript drops ``undefined`` from JSON."""
    return {k: v for k, v in fields.items() if v is not None or k in keep}
