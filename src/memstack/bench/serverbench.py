"""Measuring a server under load: its CPU per request against the in-process floor.

``measure_load`` warms the server up (a search and a list on each of a few concurrent
connections, so every worker process gets some), reads the server's CPU time (its
processes together), runs the load (``bench.load``) and reads it again.
``server_summary`` puts that beside the floor (``bench.inprocess``) in one report
(printed, and compared across worker counts, by ``bench.server_report``).

The load generator runs on the same machine, so the report also gives its own CPU per
request and the throughput bound that follows: ``cores / (server + client CPU per
request)``, which no server at its floor can pass while the generator shares its cores.
Given ``probes`` (``bench.saturation``), the CPU of every other part of the deployment
(PostgreSQL, its standbys, Redis) is read around the load too, and the report says
which part saturates first.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import httpx

from memstack.bench.inprocess import CpuFloor
from memstack.bench.load import LoadReport, Mix, run_load
from memstack.bench.proc import cpu_seconds
from memstack.bench.report import ratio
from memstack.bench.saturation import CpuProbe, Spent, read_probes, saturation, spent_between

__all__ = ["CpuUse", "LoadOptions", "measure_load", "server_summary"]


@dataclass(frozen=True, kw_only=True)
class CpuUse:
    """CPU seconds spent during the load: the server's (None without its pid) and the
    load generator's (this process); ``parts``: every probe's reading before and after."""

    server_s: float | None
    client_s: float
    probes: Sequence[CpuProbe] = ()
    before: Mapping[str, float | None] = field(default_factory=dict)
    after: Mapping[str, float | None] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class LoadOptions:
    clients: int
    duration: float
    max_requests: int
    mix: Mix


async def measure_load(
    options: LoadOptions,
    *,
    url: str,
    api_key: str,
    pid: int | None,
    agent_prefix: str,
    tick: Callable[[int], None] = lambda n: None,
    warm_connections: int = 1,
    probes: Sequence[CpuProbe] = (),
) -> tuple[LoadReport, CpuUse]:
    """The load's report, and the CPU the server, this process and each of ``probes``
    spent during it; ``warm_connections``: at least twice the server's workers."""
    await _warm_up(url, api_key, agent_prefix, warm_connections)
    parts_before = read_probes(probes)
    before = cpu_seconds(pid) if pid is not None else None
    client_before = time.process_time()
    ticker = asyncio.create_task(_tick_every_second(options.duration, tick))
    try:
        report = await run_load(
            url=url,
            api_key=api_key,
            clients=options.clients,
            duration=options.duration,
            max_requests=options.max_requests,
            mix=options.mix,
            agent_prefix=agent_prefix,
        )
    finally:
        ticker.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await ticker
    client_s = time.process_time() - client_before
    server_s = None if pid is None or before is None else cpu_seconds(pid) - before
    parts_after = read_probes(probes)
    cpu = CpuUse(
        server_s=server_s,
        client_s=client_s,
        probes=probes,
        before=parts_before,
        after=parts_after,
    )
    return report, cpu


async def _warm_up(url: str, api_key: str, agent_prefix: str, connections: int) -> None:
    """A search and a list on each of ``connections`` at once, so first-use costs stay
    out of the measurement whichever worker process accepted which connection."""
    headers = {"Authorization": f"Bearer {api_key}"}
    agent = f"{agent_prefix}-0"

    async def one(http: httpx.AsyncClient) -> None:
        await http.post("/api/memories/search", json={"query": "warm up", "agent_id": agent})
        await http.get("/api/memories", params={"agent_id": agent, "limit": 20})

    clients = [
        httpx.AsyncClient(base_url=url, headers=headers, timeout=60.0)
        for _ in range(max(1, connections))
    ]
    try:
        await asyncio.gather(*(one(http) for http in clients))
    finally:
        await asyncio.gather(*(http.aclose() for http in clients))


async def _tick_every_second(duration: float, tick: Callable[[int], None]) -> None:
    started = time.monotonic()
    for second in range(1, int(duration) + 1):
        await asyncio.sleep(max(0.0, started + second - time.monotonic()))
        tick(1)


def server_summary(
    report: LoadReport,
    *,
    options: LoadOptions,
    cpu: CpuUse,
    floor: CpuFloor,
    cores: int | None = None,
) -> dict[str, object]:
    """The JSON report: latency and throughput, then CPU per request beside the floor."""
    summary = report.summary()
    by_op = summary["by_operation"]
    assert isinstance(by_op, dict)
    for op, stats in by_op.items():
        stats["floor_cpu_ms"] = floor.cpu_ms.get(op)
    server_ms = _per_request(cpu.server_s, report.requests)
    client_ms = _per_request(cpu.client_s, report.requests)
    cores = cores or os.cpu_count() or 1
    embedder_cores = floor.embed_cpu_ms_per_request * report.per_second / 1000
    client = Spent(name="load generator", capacity=float(cores), cpu_s=cpu.client_s)
    parts = saturation(
        [*spent_between(cpu.probes, cpu.before, cpu.after), client],
        seconds=report.seconds,
        cores=cores,
        embedder_cores=round(embedder_cores, 3) if cpu.probes else None,
    )
    bound = (
        round(cores * 1000 / (floor.cpu_ms_per_request + client_ms), 1)
        if client_ms is not None and floor.cpu_ms_per_request
        else None
    )
    return {
        **summary,
        "mix": options.mix.as_json(),
        "server_cpu_ms_per_request": server_ms,
        "floor_cpu_ms_per_request": floor.cpu_ms_per_request,
        "floor_embed_cpu_ms_per_request": floor.embed_cpu_ms_per_request,
        "cpu_ratio": ratio(server_ms, floor.cpu_ms_per_request),
        "client_cpu_ms_per_request": client_ms,
        "cores": cores,
        "requests_per_s_bound": bound,
        "saturation": parts,
    }


def _per_request(seconds: float | None, requests: int) -> float | None:
    return round(seconds * 1000 / requests, 3) if seconds is not None and requests else None
