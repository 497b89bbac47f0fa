from pathlib import Path
from typing import Any

import pytest

from memstack import ConfigError, ProcessingContext, ToolInputError
from memstack.embeddings import HashEmbedder
from memstack.longterm import (
    LongTermMemory,
    LtmRecallTool,
    LtmRememberTool,
    create_default_long_term_memory,
    long_term_memory_tools,
)
from memstack.storage import InMemoryRecordStore


async def run(tool: Any, params: dict[str, Any]) -> Any:
    return await tool.process(ProcessingContext(), params)


async def test_ltm_remember_then_recall(memory: LongTermMemory):
    (remember,) = [t for t in long_term_memory_tools(memory) if t.name == "ltm_remember"]
    recall = LtmRecallTool(memory)
    stored = await run(
        remember, {"text": "The user drinks oat milk", "kind": "preference", "importance": 0.7}
    )
    assert stored["ok"] is True and isinstance(stored["id"], str)
    result = await run(recall, {"query": "oat milk", "k": 3})
    (item,) = result["memories"]
    assert item["id"] == stored["id"]
    assert item["text"] == "The user drinks oat milk"
    assert item["kind"] == "preference"
    assert set(item) == {
        "id",
        "text",
        "kind",
        "importance",
        "score",
        "similarity",
        "recency",
        "createdAt",
    }
    assert item["createdAt"].endswith("Z")


async def test_ltm_remember_says_truthfully_why_it_refused(memory: LongTermMemory):
    tool = LtmRememberTool(memory)
    secret = await run(tool, {"text": "password: hunter22"})
    assert secret["ok"] is False and secret["reason"] == "secret"
    first = await run(tool, {"text": "The user runs marathons"})
    dup = await run(tool, {"text": "The user runs marathons"})
    assert dup == {
        "ok": False,
        "reason": "duplicate",
        "duplicate_of": first["id"],
        "message": "Not stored: a near-identical memory already exists.",
    }
    assert await memory.count() == 1


async def test_ltm_remember_supersedes_a_recalled_memory(memory: LongTermMemory):
    remember, recall = LtmRememberTool(memory), LtmRecallTool(memory)
    old = await run(remember, {"text": "The user lives in Lisbon"})
    new = await run(remember, {"text": "The user lives in Berlin", "supersedes": [old["id"]]})
    assert new == {"ok": True, "id": new["id"], "supersedes": [old["id"]]}
    result = await run(recall, {"query": "Where does the user live?", "k": 5})
    assert [m["id"] for m in result["memories"]] == [new["id"]]
    assert [v.id for v in await memory.history(new["id"])] == [old["id"], new["id"]]


@pytest.mark.parametrize(
    ("tool_cls", "params", "field"),
    [
        (LtmRecallTool, {}, "query"),
        (LtmRecallTool, {"query": "x", "k": 0}, "k"),
        (LtmRecallTool, {"query": "x", "k": "5"}, "k"),
        (LtmRememberTool, {"text": "x", "kind": "gossip"}, "kind"),
        (LtmRememberTool, {"text": "x", "importance": 3}, "importance"),
        (LtmRememberTool, {"text": "x", "extra": 1}, "extra"),
        (LtmRememberTool, {"text": "y" * 5000}, "text"),
        (LtmRecallTool, {"query": "   "}, "query"),
        (LtmRememberTool, {"text": "x", "supersedes": "abc"}, "supersedes"),
        (LtmRememberTool, {"text": "x", "supersedes": ["not-a-stored-id"]}, "supersedes"),
    ],
)
async def test_bad_tool_arguments(memory, tool_cls, params, field):
    with pytest.raises(ToolInputError) as excinfo:
        await run(tool_cls(memory), params)
    assert field in excinfo.value.fields


ON = {"MEMSTACK_MEMORY_ENABLED": "1"}
OFF = {"MEMSTACK_MEMORY_ENABLED": "0"}


@pytest.mark.parametrize(
    ("enabled", "env", "created"),
    [
        (None, {}, False),  # default-off
        (True, {}, True),  # explicit opt-in
        (False, ON, False),  # caller veto
        (None, ON, True),  # operator default-on
        (None, {"MEMSTACK_MEMORY_ENABLED": "yes"}, True),
        (True, OFF, False),  # operator veto
        (None, OFF, False),
    ],
)
def test_create_default_returns_none_exactly_when_the_spec_says(enabled, env, created, clock):
    memory = create_default_long_term_memory(
        user_id="u1",
        enabled=enabled,
        env={**env, "MEMSTACK_VECTOR_PROVIDER": "memory"},
        embedder=HashEmbedder(),
        clock=clock,
    )
    assert (memory is not None) == created
    if memory is not None:
        assert memory.is_ready()
        assert memory.namespace == "ltm/u1/chat"
        memory.close()


def test_create_default_wires_the_sqlite_file_and_settings(tmp_path: Path, clock):
    db = tmp_path / "ltm.db"
    memory = create_default_long_term_memory(
        user_id="u1",
        namespace="chat",
        workspace_id="thread-9",
        enabled=True,
        env={"MEMSTACK_DB": str(db), "MEMSTACK_MEMORY_MAX_ITEMS": "7"},
        embedder=HashEmbedder(),
        clock=clock,
    )
    assert memory is not None
    try:
        assert memory.namespace == "ltm/u1/chat/thread-9"
        assert memory.max_items == 7
        assert db.exists()
    finally:
        memory.close()


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"MEMSTACK_MEMORY_ENABLED": "maybe"}, "MEMSTACK_MEMORY_ENABLED"),
        ({"MEMSTACK_MEMORY_MAX_ITEMS": "-3"}, "MEMSTACK_MEMORY_MAX_ITEMS"),
        ({"MEMSTACK_MEMORY_MAX_ITEMS": "lots"}, "MEMSTACK_MEMORY_MAX_ITEMS"),
        ({"MEMSTACK_VECTOR_PROVIDER": "pinecone"}, "MEMSTACK_VECTOR_PROVIDER"),
        ({"MEMSTACK_VECTOR_PROVIDER": "postgres"}, "MEMSTACK_POSTGRES_URL"),
    ],
)
def test_bad_settings_are_clear_errors(env, message):
    with pytest.raises(ConfigError, match=message):
        create_default_long_term_memory(user_id="u", enabled=True, env=env, embedder=HashEmbedder())


def test_unresolvable_embedder_means_no_memory(clock):
    env = {"MEMSTACK_VECTOR_PROVIDER": "memory", "MEMSTACK_MEMORY_EMBEDDING_PROVIDER": "nonsense"}
    assert create_default_long_term_memory(user_id="u", enabled=True, env=env, clock=clock) is None


def test_given_store_is_not_closed_by_the_memory(clock):
    store = InMemoryRecordStore(clock=clock)
    store.setup()
    memory = create_default_long_term_memory(
        user_id="u", enabled=True, env={}, store=store, embedder=HashEmbedder()
    )
    assert memory is not None and memory.store is store
    memory.close()
    store.count("anything")  # still usable
    store.close()
