"""One run of ``memstack bench server``: a server under load, then the same calls in
process, summed up in one JSON-ready report.

The server is a throwaway one (``bench.spawn``) unless a running one is given by URL and
key; then the memories the load stored there are deleted afterwards, as a spawned
server's tenant is erased with it. The floor (``bench.inprocess``) is measured after the
server has stopped, so the two never share the cores.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import uuid
from collections.abc import Sequence

from memstack.bench.inprocess import CpuFloor, replay_in_process
from memstack.bench.load import Call, LoadReport, delete_memories
from memstack.bench.progress import progress_bar
from memstack.bench.saturation import CpuProbe, postgres_probe, process_probe, redis_probe
from memstack.bench.serverbench import CpuUse, LoadOptions, measure_load, server_summary
from memstack.bench.spawn import ServerShape, SpawnedServer, spawned_server
from memstack.embeddings import EmbeddingSettings

__all__ = ["run_server_bench"]


def run_server_bench(
    options: LoadOptions,
    *,
    embedder_kind: str,
    url: str | None = None,
    api_key: str | None = None,
    server_pid: int | None = None,
    durable: bool = False,
    shape: ServerShape | None = None,
) -> dict[str, object]:
    """The load against the server at ``url`` (with ``api_key``), or against one spawned
    in the given ``shape`` when either is missing; ``server_pid`` lets the CPU of a
    server at ``url`` be read."""
    extra: dict[str, object] = {"mode": "url" if url else "spawn", "embedder": embedder_kind}
    extra["durable"] = durable
    spawned = None
    with contextlib.ExitStack() as stack:
        if url is None or api_key is None:
            server_args = ["--durable"] if durable else []
            spawned = stack.enter_context(
                spawned_server(embedder_kind, shape=shape, server_args=server_args)
            )
            url, api_key, server_pid = spawned.url, spawned.api_key, spawned.pid
            extra |= _spawned_fields(spawned, shape)
        workers = spawned.workers if spawned else 1
        probes = _probes(server_pid, shape if spawned else None)
        report, cpu = _load(options, url, api_key, server_pid, workers, probes)
        if spawned is None:
            cleanup = delete_memories(url=url, api_key=api_key, ids=report.stored_ids)
            extra["cleanup"] = {"created": len(report.stored_ids), **asyncio.run(cleanup)}
    if spawned is not None and spawned.erased:
        extra["erased"] = {"stored": len(report.stored_ids), **spawned.erased}
    floor = _floor(report.calls, embedder_kind)
    summary = server_summary(report, options=options, cpu=cpu, floor=floor)
    return {"url": url, **extra, **summary}


def _spawned_fields(spawned: SpawnedServer, shape: ServerShape | None) -> dict[str, object]:
    """What the report says of a spawned server: where it ran and in what shape."""
    return {
        "spawned": {"tenant": spawned.tenant, "db": str(spawned.db), "pid": spawned.pid},
        "store": spawned.store,
        "workers": spawned.workers,
        "short_term": "redis" if shape and shape.redis_url else "in-process",
        "replicas": len(shape.postgres_read_urls) if shape else 0,
    }


def _probes(pid: int | None, shape: ServerShape | None) -> list[CpuProbe]:
    """The parts whose CPU the load is measured against: the server (with its pid), and
    the PostgreSQL servers and Redis a spawned server was given (a PostgreSQL on another
    host is left out: its CPU cannot be read from here)."""
    cores = float(os.cpu_count() or 1)
    probes = [process_probe("memstack server", pid, cores)] if pid is not None else []
    if shape is None:
        return probes
    urls = [("PostgreSQL primary", shape.postgres_url)] if shape.postgres_url else []
    urls += [(f"PostgreSQL standby {n}", u) for n, u in enumerate(shape.postgres_read_urls, 1)]
    for name, url in urls:
        probe = postgres_probe(name, url, cores)
        probes += [probe] if probe else []
    probes += [redis_probe(shape.redis_url)] if shape.redis_url else []
    return probes


def _load(
    options: LoadOptions,
    url: str,
    api_key: str,
    pid: int | None,
    workers: int,
    probes: list[CpuProbe],
) -> tuple[LoadReport, CpuUse]:
    """The load, as agents named after a random run id, with a bar ticking each second."""
    run_id = uuid.uuid4().hex[:8]
    label = "load" if workers == 1 else f"load, {workers} workers"
    with progress_bar(int(options.duration), label) as bar:
        measured = measure_load(
            options,
            url=url,
            api_key=api_key,
            pid=pid,
            agent_prefix=f"bench-{run_id}",
            tick=bar.update,
            warm_connections=2 * workers,
            probes=probes,
        )
        return asyncio.run(measured)


def _floor(calls: Sequence[Call], embedder_kind: str) -> CpuFloor:
    """The CPU the load's calls take in process, replayed in the order they were sent."""
    embedding = EmbeddingSettings(provider=embedder_kind)
    with progress_bar(len(calls), "floor") as bar:
        replay = replay_in_process(calls, embedding=embedding, progress=bar.update)
        return asyncio.run(replay)
