"""changes(): working memory as an async stream of entries, from any writing thread."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator

from memstack.clock import ManualClock
from memstack.working.changes import changes
from memstack.working.memory import AgentMemory, MemoryEntry


def memory_with(*keys: str) -> AgentMemory:
    memory = AgentMemory(clock=ManualClock(1_000))
    for key in keys:
        memory.set(key=key, kind="shared", value=key.upper())
    return memory


async def take(stream: AsyncIterator[MemoryEntry], n: int) -> list[MemoryEntry]:
    return [await stream.__anext__() for _ in range(n)]


async def test_the_current_entries_come_first_then_each_write():
    memory = memory_with("shared:a", "shared:b")
    stream = changes(memory)
    first = await take(stream, 2)
    memory.set(key="shared:c", kind="shared", value={"n": 3}, source="step-1")
    [written] = await take(stream, 1)
    await stream.aclose()
    assert [e.key for e in first] == ["shared:a", "shared:b"]
    assert (written.key, written.value, written.source) == ("shared:c", {"n": 3}, "step-1")


async def test_without_replay_only_new_writes_come():
    memory = memory_with("shared:old")
    stream = changes(memory, replay=False)
    pending = asyncio.ensure_future(stream.__anext__())
    await asyncio.sleep(0)
    memory.set(key="shared:new", kind="shared", value=1)
    assert (await pending).key == "shared:new"
    await stream.aclose()


async def test_writes_from_another_thread_arrive_in_order():
    memory = memory_with()
    stream = changes(memory)
    pending = asyncio.ensure_future(take(stream, 3))
    await asyncio.sleep(0)

    def write() -> None:
        for i in range(3):
            memory.set(key=f"step:s{i}:result", kind="step_result", value=i)

    writer = threading.Thread(target=write)
    writer.start()
    writer.join()
    assert [e.value for e in await pending] == [0, 1, 2]
    await stream.aclose()


async def test_the_stream_ends_after_until_once_earlier_writes_are_out():
    memory = memory_with("shared:a")
    done = asyncio.Event()
    seen: list[str] = []

    async def consume() -> None:
        async for entry in changes(memory, until=done):
            seen.append(entry.key)

    consumer = asyncio.ensure_future(consume())
    await asyncio.sleep(0)
    memory.set(key="shared:b", kind="shared", value=2)
    done.set()
    await asyncio.wait_for(consumer, timeout=10)
    assert seen == ["shared:a", "shared:b"]


async def test_closing_the_stream_unsubscribes():
    memory = memory_with("shared:a")
    stream = changes(memory)
    await take(stream, 1)
    await stream.aclose()
    memory.set(key="shared:b", kind="shared", value=2)  # no subscriber left to call
    assert memory._subscribers == []


async def test_a_write_handed_over_just_before_until_is_not_lost():
    """The consumer is already due to resume when a thread's write and ``until`` come."""
    memory = memory_with("shared:a")
    done, gate = asyncio.Event(), asyncio.Event()
    seen: list[str] = []

    async def consume() -> None:
        async for entry in changes(memory, until=done):
            seen.append(entry.key)
            await gate.wait()

    consumer = asyncio.ensure_future(consume())
    await asyncio.sleep(0)
    assert seen == ["shared:a"]
    gate.set()  # the consumer resumes before the write below is handed to the loop
    writer = threading.Thread(
        target=memory.set, kwargs={"key": "shared:b", "kind": "shared", "value": 2}
    )
    writer.start()
    writer.join()
    done.set()
    await asyncio.wait_for(consumer, timeout=10)
    assert seen == ["shared:a", "shared:b"]
