"""A MemoryBank beside working memory: one ``memory_read`` and one ``memory_write``.

The bank's tools and working memory's tools share two names. An agent that
has both gets one tool of each name that serves both, told apart by the arguments, so
each keeps its wire format exactly:

- ``memory_read()`` (no arguments): the bank's text, a string; ``memory_read(keys)``:
  working-memory entries, ``{"entries": ..., "missing": ...}``.
- ``memory_write(content)``: replaces the bank's text, ``"ok"``; ``memory_write(key,
  value, title?, description?)``: publishes under ``shared:``, as working memory does.

``memory_search`` is the bank's alone and ``memory_list`` working memory's alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from memstack._json import JSON, JSONObject
from memstack.bank import _text as text
from memstack.bank.tools import BankReadTool, BankSearchTool, BankWriteTool
from memstack.errors import ToolInputError
from memstack.tools import Tool
from memstack.working import MemoryReadTool, MemoryWriteTool

if TYPE_CHECKING:
    from memstack.bank.bank import MemoryBank
    from memstack.context import ProcessingContext

__all__ = ["SharedReadTool", "SharedWriteTool", "bank_tools_with_working_memory"]

_WORKING_WRITE_FIELDS = ("key", "value", "title", "description")


class SharedReadTool(BankReadTool):
    description = (
        "Read memory. With no arguments: your persistent memory, the text stored under your "
        "name by earlier runs (an empty string if nothing has been written yet). With `keys`: "
        "full entries of this run's working memory by key (the keys `memory_list` returns); "
        "missing keys are reported in `missing`."
    )
    input_schema: JSONObject = {
        "type": "object",
        "properties": {
            "keys": {
                "type": "array",
                "items": {"type": "string"},
                "description": "Working-memory keys to read (e.g. "
                '["task:research", "step:summary"]); leave out to read your persistent memory.',
            }
        },
        "additionalProperties": False,
    }

    def __init__(self, bank: MemoryBank, agent_name: str) -> None:
        super().__init__(bank, agent_name)
        self.working = MemoryReadTool()

    async def process(self, context: ProcessingContext, params: Mapping[str, JSON]) -> JSON:
        if "keys" in params:
            return await self.working.process(context, params)
        return await super().process(context, params)

    def user_message(self, params: Mapping[str, JSON]) -> str:
        if "keys" in params:
            return self.working.user_message(params)
        return super().user_message(params)


class SharedWriteTool(BankWriteTool):
    def __init__(self, bank: MemoryBank, agent_name: str, *, source: str) -> None:
        super().__init__(bank, agent_name)
        self.working = MemoryWriteTool(source=source)
        working_fields = self.working.input_schema["properties"]
        assert isinstance(working_fields, dict)
        self.input_schema: JSONObject = {
            "type": "object",
            "properties": {**self._bank_fields(), **working_fields},
            "additionalProperties": False,
        }
        self.description = (
            "Write memory, in one of two forms. `content` alone: overwrite your persistent "
            "memory (it replaces everything stored before: read, modify, then write it all "
            f'back){self._capped()}; returns "ok". `key` and `value`: publish to this run\'s '
            "working memory under `shared:<key>`, for other agents and later steps."
        )

    def _bank_fields(self) -> JSONObject:
        fields = BankWriteTool.input_schema["properties"]
        assert isinstance(fields, dict)
        return fields

    def _capped(self) -> str:
        if self.bank.max_lines is None:
            return ""
        return f"; only the last {self.bank.max_lines} lines are kept"

    async def process(self, context: ProcessingContext, params: Mapping[str, JSON]) -> JSON:
        working = [f for f in _WORKING_WRITE_FIELDS if f in params]
        if ("content" in params) == bool(working):
            raise ToolInputError(
                "Invalid arguments for `memory_write`: give either `content` (your persistent "
                "memory) or `key` and `value` (working memory), not "
                + ("both." if working else "neither."),
                tool=self.name,
                fields=("content", *working) if working else ("content", "key", "value"),
            )
        if working:
            missing = [f for f in ("key", "value") if f not in params]
            if missing:
                raise ToolInputError(
                    f"Invalid arguments for `memory_write`: `{missing[0]}` is required to "
                    "publish to working memory.",
                    tool=self.name,
                    fields=tuple(missing),
                )
            return await self.working.process(context, params)
        return await super().process(context, params)

    def user_message(self, params: Mapping[str, JSON]) -> str:
        if "content" not in params:
            return self.working.user_message(params)
        return super().user_message(params)


def bank_tools_with_working_memory(bank: MemoryBank, agent_name: str, *, source: str) -> list[Tool]:
    """``memory_read``, ``memory_write`` and ``memory_search`` over ``bank`` under
    ``agent_name`` that also serve working memory; ``source`` is recorded on the
    working-memory entries ``memory_write`` stores."""
    name = text.check_key(agent_name, "agent_name")
    return [
        SharedReadTool(bank, name),
        SharedWriteTool(bank, name, source=source),
        BankSearchTool(bank, name),
    ]
