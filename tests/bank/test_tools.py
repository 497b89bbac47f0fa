"""The memory_read / memory_write / memory_search tools of a MemoryBank (spec 002)."""

from __future__ import annotations

from typing import Any
from unittest.mock import ANY

import pytest

from memstack import InvalidInput, ProcessingContext, Tool, ToolInputError
from memstack.bank import (
    BANK_TOOL_NAMES,
    MAX_CONTENT_BYTES,
    BankReadTool,
    BankSearchTool,
    BankWriteTool,
    MemoryBank,
)
from tests.bank.conftest import BankFactory


def tools_by_name(bank: MemoryBank, agent: str) -> dict[str, Tool]:
    return {t.name: t for t in bank.tools(agent)}


async def run(tool: Tool, params: Any) -> Any:
    return await tool.process(ProcessingContext(), params)


def test_tools_are_the_three_spec_tools_with_exact_schemas():
    bank = MemoryBank()
    tools = bank.tools("reviewer")
    assert tuple(t.name for t in tools) == BANK_TOOL_NAMES
    assert [type(t) for t in tools] == [BankReadTool, BankWriteTool, BankSearchTool]
    read, write, search = (t.to_provider_tool().input_schema for t in tools)
    assert read == {"type": "object", "properties": {}, "additionalProperties": False}
    for schema, field in ((write, "content"), (search, "query")):
        assert schema == {
            "type": "object",
            "properties": {field: {"type": "string", "description": ANY}},
            "required": [field],
            "additionalProperties": False,
        }
    assert bank.tools("reviewer")[0] is not tools[0]  # fresh instances every call


async def test_read_write_search_wire_formats(make_bank: BankFactory):
    bank = make_bank()
    tools = tools_by_name(bank, "reviewer")
    assert await run(tools["memory_read"], {}) == ""
    assert await run(tools["memory_search"], {"query": "x"}) == ""
    content = "Known pattern: prefer val over var\nKnown pattern: use data classes\nOther"
    assert await run(tools["memory_write"], {"content": content}) == "ok"
    assert await run(tools["memory_read"], {}) == content
    assert bank.read("reviewer") == content
    assert await run(tools["memory_search"], {"query": "KNOWN"}) == (
        "Known pattern: prefer val over var\nKnown pattern: use data classes"
    )
    assert await run(tools["memory_search"], {"query": "missing"}) == ""


async def test_tools_are_keyed_to_the_agent_name(make_bank: BankFactory):
    bank = make_bank()
    a, b = tools_by_name(bank, "agent-a"), tools_by_name(bank, "agent-b")
    await run(a["memory_write"], {"content": "from-a"})
    await run(b["memory_write"], {"content": "from-b"})
    assert await run(a["memory_read"], {}) == "from-a"
    assert await run(b["memory_search"], {"query": "from"}) == "from-b"
    assert bank.entries() == {"agent-a": "from-a", "agent-b": "from-b"}


async def test_pre_seeded_content_is_read_immediately():
    bank = MemoryBank()
    bank.write("reviewer", "Known pattern: prefer val over var")
    read = tools_by_name(bank, "reviewer")["memory_read"]
    assert await run(read, {}) == "Known pattern: prefer val over var"


async def test_max_lines_applies_through_the_tool():
    bank = MemoryBank(max_lines=2)
    write = tools_by_name(bank, "a")["memory_write"]
    assert "Only the last 2 lines are kept." in write.description
    assert await run(write, {"content": "a\nb\nc\nd"}) == "ok"
    assert bank.read("a") == "c\nd"
    assert "lines are kept" not in tools_by_name(MemoryBank(), "a")["memory_write"].description


@pytest.mark.parametrize(
    ("name", "params", "message"),
    [
        ("memory_read", {"key": "x"}, "unknown field `key`"),
        ("memory_read", [], "must be a JSON object"),
        ("memory_write", {}, "missing required field `content`"),
        ("memory_write", {"content": 3}, "`content` must be of type string, got number"),
        ("memory_write", {"content": "x", "append": True}, "unknown field `append`"),
        ("memory_search", {}, "missing required field `query`"),
        ("memory_search", {"query": None}, "`query` must be of type string, got null"),
    ],
)
async def test_bad_tool_arguments_are_tool_input_errors(name: str, params: Any, message: str):
    bank = MemoryBank()
    bank.write("a", "kept")
    with pytest.raises(ToolInputError, match=message):
        await run(tools_by_name(bank, "a")[name], params)
    assert bank.entries() == {"a": "kept"}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("x" * (MAX_CONTENT_BYTES + 1), "the limit is 1,000,000"),
        ("nul \x00 inside", "NUL character"),
    ],
)
async def test_refused_content_is_a_tool_input_error_and_changes_nothing(
    make_bank: BankFactory, content: str, message: str
):
    bank = make_bank()
    bank.write("a", "kept")
    write = tools_by_name(bank, "a")["memory_write"]
    with pytest.raises(ToolInputError, match=message) as info:
        await run(write, {"content": content})
    assert info.value.fields == ("content",)
    assert "Nothing was changed." in str(info.value)
    assert bank.read("a") == "kept"


@pytest.mark.parametrize("agent_name", ["", "   ", None, 3, "x" * 1025])
def test_tools_need_an_agent_name(agent_name: Any):
    with pytest.raises(InvalidInput) as info:
        MemoryBank().tools(agent_name)
    assert info.value.field == "agent_name"


def test_user_messages_name_the_agent():
    tools = tools_by_name(MemoryBank(), "fibonacci")
    assert tools["memory_read"].user_message({}) == "Reading the memory of fibonacci"
    assert tools["memory_write"].user_message({"content": "0|1"}) == (
        "Writing the memory of fibonacci (3 chars)"
    )
    assert tools["memory_search"].user_message({"query": "x"}) == (
        "Searching the memory of fibonacci for 'x'"
    )
