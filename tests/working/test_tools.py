from typing import Any

import pytest

from memstack import ManualClock, ProcessingContext, ToolInputError, memory_keys, memory_tools
from memstack.working import (
    MEMORY_TOOL_NAMES,
    MemoryListTool,
    MemoryReadTool,
    MemoryWriteTool,
)
from memstack.working.tools import MAX_WRITE_BYTES


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(start=1_778_162_401.234)  # 2026-05-07T14:00:01.234Z


@pytest.fixture
def context(clock: ManualClock) -> ProcessingContext:
    from memstack import AgentMemory

    return ProcessingContext(memory=AgentMemory(clock=clock))


async def call(tool, context: ProcessingContext, params: Any) -> Any:
    return await tool.process(context, params)


def test_memory_tools_are_the_three_spec_tools():
    tools = memory_tools()
    assert (
        tuple(t.name for t in tools)
        == MEMORY_TOOL_NAMES
        == (
            "memory_list",
            "memory_read",
            "memory_write",
        )
    )
    assert memory_tools()[0] is not tools[0]  # fresh instances every call


async def test_memory_list_returns_metadata_only(context: ProcessingContext):
    context.memory.set(
        key=memory_keys.task("research"),
        kind="task_result",
        value={"findings": ["alpha", "beta"]},
        source="research",
        title="Research findings",
        description="Top three sources from the web search step.",
    )
    result = await call(MemoryListTool(), context, {})
    assert result == {
        "total": 1,
        "returned": 1,
        "truncated": False,
        "entries": [
            {
                "key": "task:research",
                "kind": "task_result",
                "title": "Research findings",
                "description": "Top three sources from the web search step.",
                "source": "research",
                "valueBytes": len('{"findings":["alpha","beta"]}'),
                "createdAt": "2026-05-07T14:00:01.234Z",
            }
        ],
    }


async def test_value_bytes_counts_utf8_bytes_of_the_json(context: ProcessingContext):
    context.memory.set(key="shared:u", kind="shared", value="héllo")
    (entry,) = (await call(MemoryListTool(), context, {}))["entries"]
    assert entry["valueBytes"] == len('"héllo"'.encode())
    assert "title" not in entry and "source" not in entry  # absent fields are omitted


async def test_memory_list_filters(context: ProcessingContext):
    context.memory.set(key="task:a", kind="task_result", value=1, source="a")
    context.memory.set(key="step:x", kind="step_result", value=2, source="a")
    context.memory.set(key="shared:n", kind="shared", value=3, source="b")
    tool = MemoryListTool()
    by_kind = await call(tool, context, {"kind": ["task_result", "shared"]})
    assert [e["key"] for e in by_kind["entries"]] == ["task:a", "shared:n"]
    by_prefix = await call(tool, context, {"key_prefix": "step:"})
    assert [e["key"] for e in by_prefix["entries"]] == ["step:x"]
    by_source = await call(tool, context, {"sources": ["a"], "kind": ["step_result"]})
    assert [e["key"] for e in by_source["entries"]] == ["step:x"]


async def test_memory_list_caps_at_200_keeping_the_most_recent(context, clock):
    for i in range(250):
        context.memory.set(key=f"step:{i:03d}", kind="step_result", value=i)
        clock.advance(1)
    result = await call(MemoryListTool(), context, {})
    assert result["total"] == 250
    assert result["returned"] == 200
    assert result["truncated"] is True
    keys = [e["key"] for e in result["entries"]]
    assert keys[0] == "step:050" and keys[-1] == "step:249"
    narrowed = await call(MemoryListTool(), context, {"key_prefix": "step:24"})
    assert narrowed["truncated"] is False and narrowed["returned"] == 10


async def test_memory_list_shortens_long_descriptions(context: ProcessingContext):
    context.memory.set(key="shared:d", kind="shared", value=1, description="x" * 500)
    (entry,) = (await call(MemoryListTool(), context, {}))["entries"]
    assert entry["description"] == "x" * 240 + "…"
    assert context.memory.get("shared:d").description == "x" * 500  # type: ignore[union-attr]


async def test_memory_read_returns_values_and_missing(context: ProcessingContext):
    context.memory.set(
        key="task:research",
        kind="task_result",
        value={"findings": ["alpha", "beta"]},
        source="research",
        title="Research findings",
    )
    result = await call(
        MemoryReadTool(), context, {"keys": ["task:research", "step:summary", "step:summary"]}
    )
    assert result == {
        "entries": {
            "task:research": {
                "key": "task:research",
                "kind": "task_result",
                "value": {"findings": ["alpha", "beta"]},
                "source": "research",
                "title": "Research findings",
                "createdAt": 1_778_162_401_234,
            }
        },
        "missing": ["step:summary"],
    }


async def test_memory_read_keeps_a_null_value(context: ProcessingContext):
    context.memory.set(key="shared:none", kind="shared", value=None)
    result = await call(MemoryReadTool(), context, {"keys": ["shared:none"]})
    assert result["entries"]["shared:none"]["value"] is None
    assert result["missing"] == []


async def test_memory_write_publishes_under_shared(context: ProcessingContext):
    tool = MemoryWriteTool(source="researcher")
    result = await call(
        tool,
        context,
        {
            "key": "top_source",
            "value": "https://example.com",
            "title": "Top source URL",
            "description": "Picked by the researcher agent.",
        },
    )
    assert result == {
        "ok": True,
        "key": "shared:top_source",
        "kind": "shared",
        "createdAt": "2026-05-07T14:00:01.234Z",
    }
    entry = context.memory.get("shared:top_source")
    assert entry is not None
    assert (entry.kind, entry.value, entry.source, entry.title, entry.description) == (
        "shared",
        "https://example.com",
        "researcher",
        "Top source URL",
        "Picked by the researcher agent.",
    )


async def test_memory_write_title_defaults_to_the_key(context: ProcessingContext):
    await call(MemoryWriteTool(), context, {"key": "facts", "value": {"n": 1}})
    entry = context.memory.get("shared:facts")
    assert entry is not None and entry.title == "facts" and entry.source == "memory_write"


@pytest.mark.parametrize(
    ("key", "stored"),
    [
        ("task:x", "shared:task:x"),
        ("step:s1", "shared:step:s1"),
        ("input:q", "shared:input:q"),
        ("shared:top", "shared:top"),
    ],
)
async def test_memory_write_cannot_spoof_other_namespaces(context, key, stored):
    context.memory.set(key="task:x", kind="task_result", value="real result")
    result = await call(MemoryWriteTool(), context, {"key": key, "value": "spoof"})
    assert result["key"] == stored
    assert context.memory.get(stored).kind == "shared"
    assert context.memory.get_value("task:x") == "real result"


async def test_memory_write_round_trips_through_list_and_read(context: ProcessingContext):
    list_tool, read_tool, write_tool = memory_tools(source="agent-1")
    await call(write_tool, context, {"key": "plan", "value": ["a", "b"]})
    listed = await call(list_tool, context, {"kind": ["shared"]})
    keys = [e["key"] for e in listed["entries"]]
    read = await call(read_tool, context, {"keys": keys})
    assert read["entries"]["shared:plan"]["value"] == ["a", "b"]
    assert read["entries"]["shared:plan"]["source"] == "agent-1"


async def test_overwrite_through_the_tool_keeps_created_at(context, clock):
    first = await call(MemoryWriteTool(), context, {"key": "k", "value": 1})
    clock.advance(60)
    second = await call(MemoryWriteTool(), context, {"key": "k", "value": 2})
    assert first["createdAt"] == second["createdAt"] == "2026-05-07T14:00:01.234Z"
    assert context.memory.get_value("shared:k") == 2


BAD_ARGUMENTS = [
    (MemoryListTool, {"kind": "task_result"}, ("kind",), "must be of type array"),
    (MemoryListTool, {"kind": ["bogus"]}, ("kind[0]",), "must be one of"),
    (MemoryListTool, {"key_prefix": 3}, ("key_prefix",), "must be of type string"),
    (MemoryListTool, {"limit": 5}, ("limit",), "unknown field `limit`"),
    (MemoryReadTool, {}, ("keys",), "missing required field `keys`"),
    (MemoryReadTool, {"keys": "task:a"}, ("keys",), "must be of type array"),
    (MemoryReadTool, {"keys": ["a", 2]}, ("keys[1]",), "got number"),
    (MemoryWriteTool, {"value": 1}, ("key",), "missing required field `key`"),
    (MemoryWriteTool, {"key": "k"}, ("value",), "missing required field `value`"),
    (MemoryWriteTool, {"key": "", "value": 1}, ("key",), "`key`"),
    (MemoryWriteTool, {"key": "shared:", "value": 1}, ("key",), "after"),
    (MemoryWriteTool, {"key": "k", "value": 1, "title": 5}, ("title",), "type string"),
    (MemoryWriteTool, {"key": "k", "value": 1, "kind": "task_result"}, ("kind",), "unknown"),
    (MemoryWriteTool, {"key": "k", "value": "x" * (MAX_WRITE_BYTES + 1)}, ("value",), "limit"),
]


@pytest.mark.parametrize(("tool_cls", "params", "fields", "message"), BAD_ARGUMENTS)
async def test_bad_arguments_raise_tool_input_error(context, tool_cls, params, fields, message):
    context.memory.set(key="shared:k", kind="shared", value="before")
    with pytest.raises(ToolInputError) as excinfo:
        await call(tool_cls(), context, params)
    error = excinfo.value
    assert error.fields == fields
    assert message in str(error)
    assert error.tool == tool_cls.name
    assert context.memory.get_value("shared:k") == "before"
    assert len(context.memory) == 1


@pytest.mark.parametrize("params", [None, [], "keys", 3])
async def test_arguments_must_be_an_object(context, params):
    with pytest.raises(ToolInputError, match="must be a JSON object"):
        await call(MemoryReadTool(), context, params)


@pytest.mark.parametrize(
    ("tool", "params", "message"),
    [
        (MemoryListTool(), {}, "Listing memory"),
        (
            MemoryListTool(),
            {"kind": ["shared"], "key_prefix": "x"},
            "Listing memory (kinds=shared prefix=x)",
        ),
        (MemoryReadTool(), {"keys": ["task:a"]}, "Reading memory: task:a"),
        (MemoryReadTool(), {"keys": ["a", "b"]}, "Reading memory: 2 entries"),
        (MemoryWriteTool(), {"key": "k"}, "Publishing to memory: shared:k"),
    ],
)
def test_user_messages(tool, params, message):
    assert tool.user_message(params) == message
