"""Working memory as an async stream: the entries already there, then each write.

``AgentMemory.subscribe`` calls a callback from whichever thread wrote; ``changes``
hands those entries to one asyncio consumer through a queue on its own loop, so a
server can send them on as they happen (the ``--inspect`` panel of ``memstack agent run``).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator

from memstack.working.memory import AgentMemory, MemoryEntry

__all__ = ["changes"]


async def changes(
    memory: AgentMemory, *, replay: bool = True, until: asyncio.Event | None = None
) -> AsyncGenerator[MemoryEntry, None]:
    """Yield every entry in ``memory`` (unless ``replay`` is false), then each entry as it
    is written, until ``until`` is set (after the writes made before it) or the consumer
    stops. An entry written while the current ones are replayed may come twice: keep
    the latest per ``key``."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[MemoryEntry] = asyncio.Queue()

    def deliver(entry: MemoryEntry) -> None:
        loop.call_soon_threadsafe(queue.put_nowait, entry)

    unsubscribe = memory.subscribe(deliver)
    try:
        for entry in memory.snapshot() if replay else ():
            yield entry
        while (entry_or_end := await _next(queue, until)) is not None:
            yield entry_or_end
    finally:
        unsubscribe()


async def _next(
    queue: asyncio.Queue[MemoryEntry], until: asyncio.Event | None
) -> MemoryEntry | None:
    """The next entry, or ``None`` once ``until`` is set and the queue is drained."""
    if until is None:
        return await queue.get()
    if queue.empty() and not until.is_set():
        get = asyncio.ensure_future(queue.get())
        stop = asyncio.ensure_future(until.wait())
        done, pending = await asyncio.wait({get, stop}, return_when=asyncio.FIRST_COMPLETED)
        for task in pending:
            task.cancel()  # a cancelled get leaves its entry in the queue
        if get in done:
            return get.result()
    await asyncio.sleep(0)  # writes handed over before ``until`` was set land first
    return None if queue.empty() else queue.get_nowait()
