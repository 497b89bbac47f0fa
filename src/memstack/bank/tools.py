"""The three LLM tools over a MemoryBank, keyed to one agent's name.

Wire formats as the spec fixes them: ``memory_read()`` returns the stored string
(``""`` when empty), ``memory_write(content)`` returns ``"ok"``, ``memory_search(query)``
returns the matching lines joined by ``\\n`` (``""`` when none). Bank calls run in a
worker thread, off the event loop, since a durable bank does file or network I/O.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import TYPE_CHECKING, Final, cast

from memstack._json import JSON, JSONObject
from memstack.bank import _text as text
from memstack.errors import InvalidInput, ToolInputError
from memstack.tools import Tool

if TYPE_CHECKING:
    from memstack.bank.bank import MemoryBank
    from memstack.context import ProcessingContext

__all__ = [
    "BANK_PROMPT",
    "BANK_TOOL_NAMES",
    "BankReadTool",
    "BankSearchTool",
    "BankWriteTool",
    "bank_tools",
]

BANK_TOOL_NAMES: Final = ("memory_read", "memory_write", "memory_search")

BANK_PROMPT: Final = """\
## Agent Memory (persistent)
You have two memories, and `memory_read` / `memory_write` serve both; the arguments say which:
- Your persistent memory, kept under your name between runs: `memory_read()` with no
  arguments returns its whole text, `memory_write(content)` replaces all of it (read,
  modify, write back) and returns "ok", `memory_search(query)` returns its lines that
  contain the query.
- This run's working memory, described under Memory Tools below: `memory_list` lists its
  entries, `memory_read(keys)` reads entries by key, `memory_write(key, value)` publishes
  an entry under `shared:<key>`."""
"""Added to an agent's system prompt when a bank is attached beside working memory
(``bank_tools_with_working_memory``: the bank's and working memory's tools share two names)."""


class _BankTool(Tool):
    """A tool bound to one bank and one agent name; it never touches another key."""

    def __init__(self, bank: MemoryBank, agent_name: str) -> None:
        self.bank = bank
        self.agent_name = agent_name


class BankReadTool(_BankTool):
    name = "memory_read"
    description = (
        "Read your persistent memory: the content stored under your name by earlier runs. "
        "Returns the stored text, or an empty string if nothing has been written yet."
    )
    input_schema: JSONObject = {"type": "object", "properties": {}, "additionalProperties": False}

    async def process(self, context: ProcessingContext, params: Mapping[str, JSON]) -> JSON:
        return await asyncio.to_thread(self.bank.read, self.agent_name)

    def user_message(self, params: Mapping[str, JSON]) -> str:
        return f"Reading the memory of {self.agent_name}"


class BankWriteTool(_BankTool):
    name = "memory_write"
    input_schema: JSONObject = {
        "type": "object",
        "properties": {
            "content": {
                "type": "string",
                "description": "The full new content of your memory; it replaces what was stored.",
            }
        },
        "required": ["content"],
        "additionalProperties": False,
    }

    def __init__(self, bank: MemoryBank, agent_name: str) -> None:
        super().__init__(bank, agent_name)
        capped = (
            f" Only the last {bank.max_lines} lines are kept." if bank.max_lines is not None else ""
        )
        self.description = (
            "Overwrite your persistent memory with new content. It replaces everything "
            "stored before (there is no append: read, modify, then write it all back)."
            f'{capped} Returns "ok".'
        )

    async def process(self, context: ProcessingContext, params: Mapping[str, JSON]) -> JSON:
        content = cast(str, params["content"])
        try:
            await asyncio.to_thread(self.bank.write, self.agent_name, content)
        except InvalidInput as exc:
            raise ToolInputError(
                f"Invalid arguments for `memory_write`: {exc} Nothing was changed.",
                tool=self.name,
                fields=("content",),
            ) from exc
        return "ok"

    def user_message(self, params: Mapping[str, JSON]) -> str:
        content = params.get("content")
        size = f" ({len(content)} chars)" if isinstance(content, str) else ""
        return f"Writing the memory of {self.agent_name}{size}"


class BankSearchTool(_BankTool):
    name = "memory_search"
    description = (
        "Search your persistent memory for lines containing the query (case-insensitive). "
        "Returns the matching lines joined by newlines, or an empty string if none match."
    )
    input_schema: JSONObject = {
        "type": "object",
        "properties": {
            "query": {
                "type": "string",
                "description": "Text to look for in each line of your memory.",
            }
        },
        "required": ["query"],
        "additionalProperties": False,
    }

    async def process(self, context: ProcessingContext, params: Mapping[str, JSON]) -> JSON:
        query = cast(str, params["query"])
        try:
            return await asyncio.to_thread(self.bank.search, self.agent_name, query)
        except InvalidInput as exc:
            raise ToolInputError(
                f"Invalid arguments for `memory_search`: {exc}",
                tool=self.name,
                fields=("query",),
            ) from exc

    def user_message(self, params: Mapping[str, JSON]) -> str:
        query = params.get("query")
        shown = f" for {query!r}" if isinstance(query, str) else ""
        return f"Searching the memory of {self.agent_name}{shown}"


def bank_tools(bank: MemoryBank, agent_name: str) -> list[Tool]:
    """New ``memory_read``, ``memory_write`` and ``memory_search`` tools over ``bank``,
    reading and writing under ``agent_name`` only."""
    name = text.check_key(agent_name, "agent_name")
    return [BankReadTool(bank, name), BankWriteTool(bank, name), BankSearchTool(bank, name)]
