"""MemstackSession and memstack's tools in the real OpenAI Agents SDK.

The Runner is the SDK's own; the model is ScriptedResponsesModel, which answers with
Responses API payloads parsed by the openai SDK's ``Response`` type.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any, cast

import pytest
from agents import Agent, RunConfig, Runner
from agents.items import TResponseInputItem
from agents.memory import Session, SessionSettings

from memstack import memory_tools
from memstack.adapters.openai_agents import (
    MemstackSession,
    ScriptedResponsesModel,
    function_call_item,
    function_tools,
    message_item,
    response_payload,
)
from memstack.clock import ManualClock
from memstack.context import ProcessingContext
from memstack.embeddings import HashEmbedder
from memstack.errors import ConfigError, InvalidInput
from memstack.longterm import LongTermMemory, long_term_memory_tools
from memstack.longterm.collection import Collection
from memstack.storage import RecordStore

OFFLINE = RunConfig(tracing_disabled=True)


def user(text: str) -> TResponseInputItem:
    return {"role": "user", "content": text}


def output_of(item: TResponseInputItem) -> Any:
    """The JSON a function_call_output item carries back to the model."""
    return json.loads(cast(str, cast(dict[str, Any], item)["output"]))


# -- the Session protocol -------------------------------------------------------------------


async def test_session_keeps_items_in_order(records: RecordStore) -> None:
    session = MemstackSession("chat-1", records)
    assert isinstance(session, Session)
    assert await session.get_items() == [] and await session.pop_item() is None
    await session.add_items([user("one"), user("two")])
    await session.add_items([user("three")])
    assert [i["content"] for i in await session.get_items()] == ["one", "two", "three"]  # type: ignore[typeddict-item]
    assert [i["content"] for i in await session.get_items(limit=2)] == ["two", "three"]  # type: ignore[typeddict-item]
    assert await session.get_items(limit=0) == []
    assert await session.pop_item() == user("three")
    assert [i["content"] for i in await session.get_items()] == ["one", "two"]  # type: ignore[typeddict-item]
    await session.clear_session()
    assert await session.get_items() == []


async def test_order_holds_when_the_clock_goes_back(
    records: RecordStore, clock: ManualClock
) -> None:
    session = MemstackSession("c", records)
    await session.add_items([user("first")])
    clock.advance(-3600)  # another process, another clock
    await session.add_items([user("second"), user("third")])
    assert [i["content"] for i in await session.get_items()] == ["first", "second", "third"]  # type: ignore[typeddict-item]
    assert (await session.pop_item()) == user("third")


async def test_sessions_are_separate_and_settings_limit_reads(records: RecordStore) -> None:
    a = MemstackSession("a", records, session_settings=SessionSettings(limit=1))
    b = MemstackSession("b", records)
    await a.add_items([user("a1"), user("a2")])
    await b.add_items([user("b1")])
    assert await a.get_items() == [user("a2")]
    assert await a.get_items(limit=5) == [user("a1"), user("a2")]
    assert await b.get_items() == [user("b1")]


async def test_a_bad_item_is_refused_and_nothing_is_stored(records: RecordStore) -> None:
    session = MemstackSession("c", records)
    with pytest.raises(InvalidInput) as caught:
        bad = cast(TResponseInputItem, {"role": "user", "content": object()})
        await session.add_items([user("fine"), bad])
    assert caught.value.field == "items[1]['content']"
    assert await session.get_items() == []


async def test_a_credential_in_a_run_is_redacted_and_the_run_goes_on(records: RecordStore) -> None:
    """Issue 30: the session stores ``[REDACTED:<kind>]`` where a credential was, so the
    next run's model never sees it replayed, and no run breaks on it."""
    key = "sk-proj-" + "A1b2C3d4" * 6
    model = ScriptedResponsesModel(
        [response_payload(message_item("Noted.")), response_payload(message_item("Hello."))]
    )
    agent = Agent(name="assistant", model=model)
    session = MemstackSession("redacted-chat", records)
    first = await Runner.run(agent, f"my key is {key}", session=session, run_config=OFFLINE)
    assert first.final_output == "Noted."
    assert (await session.get_items())[0] == user("my key is [REDACTED:openai_key]")
    await Runner.run(agent, "hi", session=session, run_config=OFFLINE)
    replayed = model.calls[1].input
    assert replayed[0] == user("my key is [REDACTED:openai_key]")
    assert key not in json.dumps(replayed)
    with pytest.raises(InvalidInput) as refused:
        MemstackSession(f"ghp_{'a1B2' * 9}", records)
    assert refused.value.field == "session_id"


def test_history_survives_the_process(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'sessions.db'}"
    script = (
        "import asyncio, sys\n"
        "from memstack.adapters.openai_agents import MemstackSession\n"
        "s = MemstackSession.from_url('chat', sys.argv[1])\n"
        "asyncio.run(s.add_items([{'role': 'user', 'content': sys.argv[2]}]))\n"
        "s.close()\n"
    )
    for text in ("from process one", "from process two"):
        subprocess.run([sys.executable, "-c", script, url, text], check=True, timeout=120)
    session = MemstackSession.from_url("chat", url)
    items = asyncio.run(session.get_items())
    session.close()
    assert items == [user("from process one"), user("from process two")]


# -- a Runner that calls a memstack tool, with the history in a MemstackSession -------------


def _memory(records: RecordStore, clock: ManualClock) -> LongTermMemory:
    return LongTermMemory(
        collection=Collection(user_id="alice", namespace="chat"),
        store=records,
        embedder=HashEmbedder(dim=512),
        clock=clock,
    )


def _recall_reply(items: list[TResponseInputItem]) -> dict[str, Any]:
    """The model's second turn: answer from what ltm_recall returned."""
    output = next(i for i in reversed(items) if i.get("type") == "function_call_output")
    recalled = output_of(output)["memories"]
    return response_payload(message_item(f"You like {recalled[0]['text'].split()[-1]}."))


async def test_runner_calls_memstack_tools_and_the_session_keeps_the_history(
    sqlite_records: RecordStore, clock: ManualClock
) -> None:
    memory = _memory(sqlite_records, clock)
    model = ScriptedResponsesModel(
        [
            response_payload(function_call_item("ltm_remember", {"text": "Alice likes green tea"})),
            response_payload(message_item("Noted.")),
            response_payload(function_call_item("ltm_recall", {"query": "what does Alice like"})),
            _recall_reply,
        ]
    )
    agent = Agent(
        name="assistant",
        instructions="Remember durable facts.",
        model=model,
        tools=function_tools(long_term_memory_tools(memory)),
    )
    session = MemstackSession("alice-chat", sqlite_records)

    first = await Runner.run(agent, "I like green tea", session=session, run_config=OFFLINE)
    assert first.final_output == "Noted."
    assert [m.text for m in await memory.recall("tea", 1)] == ["Alice likes green tea"]

    second = await Runner.run(agent, "What do I like?", session=session, run_config=OFFLINE)
    assert second.final_output == "You like tea."
    # the second run's first model call saw the first run's history, from the session
    replayed = model.calls[2].input
    assert replayed[0] == user("I like green tea")
    assert [i.get("type") for i in replayed[1:3]] == ["function_call", "function_call_output"]
    assert replayed[-1] == user("What do I like?")
    assert model.calls[0].tool_names == ["ltm_recall", "ltm_remember"]

    history = await session.get_items()
    kinds = [i.get("type", "message") for i in history]
    assert kinds == ["message", "function_call", "function_call_output", "message"] * 2


async def test_a_bad_tool_call_goes_back_to_the_model(
    sqlite_records: RecordStore, clock: ManualClock
) -> None:
    model = ScriptedResponsesModel(
        [
            response_payload(function_call_item("ltm_remember", {"txt": "typo"})),
            response_payload(message_item("Sorry.")),
        ]
    )
    agent = Agent(
        name="a",
        model=model,
        tools=function_tools(long_term_memory_tools(_memory(sqlite_records, clock))),
    )
    result = await Runner.run(agent, "remember this", run_config=OFFLINE)
    assert result.final_output == "Sorry."
    error = output_of(model.calls[1].input[-1])["error"]
    assert "missing required field `text`" in error and "unknown field `txt`" in error


async def test_streamed_runs_work_too(sqlite_records: RecordStore) -> None:
    model = ScriptedResponsesModel([response_payload(message_item("streamed hello"))])
    session = MemstackSession("s", sqlite_records)
    result = Runner.run_streamed(
        Agent(name="a", model=model), "hi", session=session, run_config=OFFLINE
    )
    async for _ in result.stream_events():
        pass
    assert result.final_output == "streamed hello"
    assert len(await session.get_items()) == 2


async def test_tools_use_the_runs_processing_context() -> None:
    context = ProcessingContext()
    model = ScriptedResponsesModel(
        [
            response_payload(function_call_item("memory_write", {"key": "k", "value": "v"})),
            response_payload(message_item("done")),
        ]
    )
    agent = Agent[ProcessingContext](
        name="a", model=model, tools=function_tools(memory_tools(source="agent"))
    )
    await Runner.run(agent, "write", context=context, run_config=OFFLINE)
    assert context.memory.get_value("shared:k") == "v"


async def test_running_out_of_script_says_so() -> None:
    agent = Agent(name="a", model=ScriptedResponsesModel([]))
    with pytest.raises(ConfigError, match="only 0 replies were scripted"):
        await Runner.run(agent, "hi", run_config=OFFLINE)
