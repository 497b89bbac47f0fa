"""Run several message streams at once and yield their messages as they come."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Hashable
from dataclasses import dataclass
from typing import Generic, TypeVar

__all__ = ["Finished", "StreamPool"]

M = TypeVar("M")
K = TypeVar("K", bound=Hashable)


@dataclass(frozen=True)
class Finished(Generic[K]):
    """The stream started under ``key`` ended; ``error`` is what it raised, if anything."""

    key: K
    error: BaseException | None = None


class StreamPool(Generic[K, M]):
    """Streams started under keys, pumped concurrently into one queue.

    ``events()`` yields each message as it arrives and a ``Finished`` when a stream
    ends, so the caller can start streams that were waiting on it. An exception in one
    stream ends that stream only and is handed over in its ``Finished``; the caller
    decides whether to re-raise it. ``close()`` cancels whatever is still running.
    """

    def __init__(self) -> None:
        self._queue: asyncio.Queue[M | Finished[K]] = asyncio.Queue()
        self._running: dict[K, asyncio.Task[None]] = {}

    def start(self, key: K, stream: Callable[[], AsyncIterator[M]]) -> None:
        self._running[key] = asyncio.create_task(self._pump(key, stream))

    @property
    def busy(self) -> bool:
        return bool(self._running)

    async def events(self) -> AsyncIterator[M | Finished[K]]:
        """Messages and ends, until no stream is running (streams may be started
        while iterating)."""
        while self._running:
            item = await self._queue.get()
            if isinstance(item, Finished):
                self._running.pop(item.key, None)
            yield item

    async def close(self) -> None:
        tasks = list(self._running.values())
        self._running.clear()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _pump(self, key: K, stream: Callable[[], AsyncIterator[M]]) -> None:
        try:
            async for message in stream():
                await self._queue.put(message)
        except Exception as exc:
            await self._queue.put(Finished(key, exc))
        else:
            await self._queue.put(Finished(key))
