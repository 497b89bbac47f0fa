"""The CPU floor of ``memstack bench server``: the same calls, in process, no HTTP.

The calls a load run sent are replayed one by one, in the order they were sent,
against ``MemoryService`` opened by ``open_services`` on a temporary SQLite file with
the server's own wiring (its embedder stack, from the same embedding settings), and
``time.process_time()`` (every thread of this process) is read around each. What the
server spends per request above this is HTTP, auth, serialization and concurrency.
"""

from __future__ import annotations

import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from memstack.bench.load import Call
from memstack.embeddings import EmbeddingSettings
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
        finally:
            services.close()
    every = [ms for values in spent.values() for ms in values]
    return CpuFloor(
        calls=len(every),
        cpu_ms={op: round(sum(v) / len(v), 3) for op, v in sorted(spent.items())},
        cpu_ms_per_request=round(sum(every) / len(every), 3) if every else 0.0,
    )


async def _apply(memories: MemoryService, principal: Principal, call: Call) -> None:
    if call.op == "store":
        await memories.store(principal, agent_id=call.agent_id, key=call.key, value=call.value)
    elif call.op == "search":
        await memories.search(principal, call.query, agent_id=call.agent_id)
    else:
        await memories.list(principal, agent_id=call.agent_id, limit=call.limit)
