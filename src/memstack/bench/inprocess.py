"""The CPU floor of ``memstack bench server``: the same calls, in process, no HTTP.

The calls a load run sent are replayed one by one, in the order they were sent,
against ``MemoryService`` opened by ``open_services`` on a temporary SQLite file with
the server's own wiring (its embedder stack, from the same embedding settings), and
``time.process_time()`` (every thread of this process) is read around each. What the
server spends per request above this is HTTP, auth, serialization and concurrency.

The embedder's part of it is measured apart, after the replay: the texts the calls
embed (a store's ``key: value``, a search's query), in the same order, through the same
model behind a fresh cache, as the server's model and cache see them.
"""

from __future__ import annotations

import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from memstack.bench.load import Call
from memstack.embeddings import Embedder, EmbeddingSettings
from memstack.embeddings.cache import CachedEmbedder
from memstack.service.memories import MemoryService
from memstack.service.principal import Principal
from memstack.wiring import open_services

__all__ = ["CpuFloor", "replay_in_process"]


@dataclass(frozen=True, kw_only=True)
class CpuFloor:
    calls: int
    cpu_ms: dict[str, float]
    """Mean CPU milliseconds per call, by operation."""
    cpu_ms_per_request: float
    embed_cpu_ms_per_request: float = 0.0
    """The embedder's share of ``cpu_ms_per_request``."""


async def replay_in_process(
    calls: Sequence[Call],
    *,
    embedding: EmbeddingSettings,
    progress: Callable[[int], None] = lambda n: None,
) -> CpuFloor:
    """CPU time of ``calls`` against a fresh in-process ``MemoryService``."""
    spent: dict[str, list[float]] = defaultdict(list)
    with tempfile.TemporaryDirectory(prefix="memstack-bench-floor-") as tmp:
        services = open_services(
            store_url=f"sqlite:///{Path(tmp) / 'floor.db'}",
            redis_url=None,
            embedding_settings=embedding,
        )
        try:
            services.embedder.embed_batch(["warm up"])  # as memstack serve does
            principal = Principal(tenant="bench-floor")
            for call in calls:
                started = time.process_time()
                await _apply(services.memories, principal, call)
                spent[call.op].append((time.process_time() - started) * 1000)
                progress(1)
            embed_ms = _embedding_cpu_ms(services.batching or services.embedder, calls)
        finally:
            services.close()
    every = [ms for values in spent.values() for ms in values]
    return CpuFloor(
        calls=len(every),
        cpu_ms={op: round(sum(v) / len(v), 3) for op, v in sorted(spent.items())},
        cpu_ms_per_request=round(sum(every) / len(every), 3) if every else 0.0,
        embed_cpu_ms_per_request=round(embed_ms / len(every), 3) if every else 0.0,
    )


def _embedding_cpu_ms(model: Embedder, calls: Sequence[Call]) -> float:
    """CPU milliseconds of embedding what ``calls`` embed, one text at a time, through
    ``model`` behind a fresh cache, as the server's cache sees them."""
    fresh = CachedEmbedder(model)
    texts = [_embedded_text(call) for call in calls]
    started = time.process_time()
    for text in texts:
        if text is not None:
            fresh.embed_batch([text])
    return (time.process_time() - started) * 1000


def _embedded_text(call: Call) -> str | None:
    """What the service embeds for ``call``: a store's ``key: value``, a search's query."""
    if call.op == "store":
        return f"{call.key}: {call.value}"
    return call.query if call.op == "search" else None


async def _apply(memories: MemoryService, principal: Principal, call: Call) -> None:
    if call.op == "store":
        await memories.store(principal, agent_id=call.agent_id, key=call.key, value=call.value)
    elif call.op == "search":
        await memories.search(principal, call.query, agent_id=call.agent_id)
    else:
        await memories.list(principal, agent_id=call.agent_id, limit=call.limit)
