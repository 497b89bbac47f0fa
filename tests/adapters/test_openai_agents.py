"""MemstackSession and memstack's tools in the real OpenAI Agents SDK.

The Runner is the SDK's own; the model is ScriptedResponsesModel, which answers with
Responses API payloads parsed by the openai SDK's ``Response`` type.
"""

from __future__ import annotations

import asyncio
import builtins
import json
import subprocess
import sys
import threading
import time
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
from memstack.storage import Record, RecordStore, WriteResult

OFFLINE = RunConfig(tracing_disabled=True)


def user(text: str) -> TResponseInputItem:
    return {"role": "user", "content": text}


def texts(items: list[TResponseInputItem]) -> list[str]:
    """The text of each message item."""
    return [cast(str, cast(dict[str, Any], i)["content"]) for i in items]


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


# -- as the SDK's own sessions behave (issue 34) --------------------------------------------


def _in_threads(*calls: Any) -> list[Any]:
    """Run each coroutine function in its own thread and event loop (as two processes
    would); their results, in order."""
    results: list[Any] = [None] * len(calls)

    def run(i: int) -> None:
        results[i] = asyncio.run(calls[i]())

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(len(calls))]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 60  # a deadlock fails the test instead of hanging it
    for thread in threads:
        thread.join(timeout=max(0.0, deadline - time.monotonic()))
    assert not [t for t in threads if t.is_alive()], "threads stuck: a deadlock"
    return results


def test_one_session_serves_threads_that_each_run_an_event_loop(records: RecordStore) -> None:
    """An asyncio.Lock shared by several event loops deadlocked here: one thread's loop
    waited on a future that another thread's release never woke."""
    session = MemstackSession("threads", records)

    async def turn(n: int) -> None:
        await session.add_items([user(f"q{n}"), user(f"a{n}")])
        await session.get_items(limit=2)
        await session.add_items([user(f"q{n}b"), user(f"a{n}b")])

    _in_threads(*[lambda n=n: turn(n) for n in range(6)])
    contents = texts(asyncio.run(session.get_items()))
    assert sorted(contents) == sorted(
        f"{k}{n}{b}" for k in "qa" for n in range(6) for b in ("", "b")
    )
    # each add_items call's items stay together, in their order
    assert all(contents[i + 1] == "a" + contents[i][1:] for i in range(0, len(contents), 2))


class _BothRead(RecordStore):
    """The store under test with a rendezvous: the first two listings (two writers'
    reads) wait for each other, so both writers read before either writes: the race
    that the database, not a lock in one process, has to settle."""

    def __init__(self, store: RecordStore) -> None:
        super().__init__(store.backend, clock=store.clock)
        self._meet = threading.Barrier(2, timeout=30)
        self._arrived = 0
        self._guard = threading.Lock()

    def list(self, *args: Any, **kwargs: Any) -> builtins.list[Record]:
        rows = super().list(*args, **kwargs)
        with self._guard:
            self._arrived += 1
            first_two = self._arrived <= 2
        if first_two:
            self._meet.wait()
        return rows


def test_two_writers_appending_at_once_never_interleave(records: RecordStore) -> None:
    """Two session objects (two processes: no lock in common) append at the same moment;
    each call's items stay together, nothing is lost."""
    racing = _BothRead(records)
    one, two = MemstackSession("s", racing), MemstackSession("s", racing)
    _in_threads(
        lambda: one.add_items([user("one-1"), user("one-2"), user("one-3")]),
        lambda: two.add_items([user("two-1"), user("two-2"), user("two-3")]),
    )
    assert texts(asyncio.run(one.get_items())) in (
        ["one-1", "one-2", "one-3", "two-1", "two-2", "two-3"],
        ["two-1", "two-2", "two-3", "one-1", "one-2", "one-3"],
    )


def test_two_writers_popping_at_once_pop_different_items(records: RecordStore) -> None:
    asyncio.run(MemstackSession("s", records).add_items([user("first"), user("second")]))
    racing = _BothRead(records)
    one, two = MemstackSession("s", racing), MemstackSession("s", racing)
    popped = _in_threads(one.pop_item, two.pop_item)
    assert sorted(texts(popped)) == ["first", "second"]
    assert asyncio.run(one.get_items()) == []


class _PausedWrite(RecordStore):
    """The store under test, whose writes wait until the test lets them go on."""

    def __init__(self, store: RecordStore) -> None:
        super().__init__(store.backend, clock=store.clock)
        self.entered = threading.Event()
        self.go_on = threading.Event()

    def write(self, **batch: Any) -> WriteResult:
        self.entered.set()
        assert self.go_on.wait(30)
        return super().write(**batch)


async def test_a_cancelled_write_finishes_before_the_cancellation_arrives(
    records: RecordStore,
) -> None:
    """As the SDK's sessions: the caller sees CancelledError only once the write is done,
    so it knows the item is stored and does not add it twice."""
    store = _PausedWrite(records)
    session = MemstackSession("c", store)
    task = asyncio.create_task(session.add_items([user("once")]))
    try:
        assert await asyncio.to_thread(store.entered.wait, 30)
        task.cancel()
        for _ in range(3):
            await asyncio.sleep(0)
        assert not task.done()  # still waiting for the write
    finally:
        store.go_on.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await session.get_items() == [user("once")]


async def test_a_closed_session_refuses_every_call(records: RecordStore) -> None:
    session = MemstackSession("c", records)
    await session.add_items([user("kept")])
    session.close()
    calls = (
        lambda: session.add_items([]),
        lambda: session.add_items([user("refused")]),
        session.get_items,
        session.pop_item,
        session.clear_session,
    )
    for call in calls:
        with pytest.raises(RuntimeError, match="MemstackSession is closed"):
            await call()
    assert await MemstackSession("c", records).get_items() == [user("kept")]


async def test_session_settings_may_be_a_dict(records: RecordStore) -> None:
    session = MemstackSession("d", records, session_settings={"limit": 1})
    assert session.session_settings == SessionSettings(limit=1)
    await session.add_items([user("a"), user("b")])
    assert await session.get_items() == [user("b")]
    with pytest.raises(TypeError, match="Unknown session settings: limitt"):
        MemstackSession("d", records, session_settings={"limitt": 1})


async def test_an_item_that_is_not_json_is_a_type_error(records: RecordStore) -> None:
    """The SDK's sessions raise TypeError (from json.dumps); memstack's error is both
    that and an InvalidInput naming the field."""
    session = MemstackSession("c", records)
    bad = cast(TResponseInputItem, {"role": "user", "content": {"not", "json"}})
    with pytest.raises(TypeError) as caught:
        await session.add_items([user("fine"), bad])
    assert isinstance(caught.value, InvalidInput)
    assert caught.value.field == "items[1]['content']"
    with pytest.raises(TypeError, match=r"items\[0\] must be a Responses API input item"):
        await session.add_items([cast(TResponseInputItem, "just text")])
    assert await session.get_items() == []


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
