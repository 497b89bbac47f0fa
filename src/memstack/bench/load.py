"""``memstack bench server``: concurrent clients against a running memory server.

Each client loops over a fixed mix (by default 50% store, 30% search, 20% list) for
``duration`` seconds or ``max_requests`` requests, whichever comes first, against the
server at ``url`` (loopback in the project's own runs). Latency is measured per request
from send to full response.
"""

from __future__ import annotations

import asyncio
import random
import statistics
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Final

import httpx

__all__ = ["LoadReport", "run_load"]

_TOPICS: Final = (
    "deployments",
    "coding style",
    "the database",
    "code review",
    "on-call",
    "release notes",
    "testing",
    "the roadmap",
    "customer feedback",
    "incidents",
)


@dataclass(kw_only=True)
class LoadReport:
    clients: int
    seconds: float
    requests: int
    errors: int
    latencies: dict[str, list[float]] = field(default_factory=dict)

    @property
    def per_second(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0

    def summary(self) -> dict[str, object]:
        every = [ms for values in self.latencies.values() for ms in values]
        return {
            "clients": self.clients,
            "seconds": round(self.seconds, 2),
            "requests": self.requests,
            "errors": self.errors,
            "requests_per_s": round(self.per_second, 1),
            "latency_ms": _percentiles(every),
            "by_operation": {
                op: {"count": len(v), **_percentiles(v)} for op, v in sorted(self.latencies.items())
            },
        }


def _percentiles(values: list[float]) -> dict[str, float]:
    if len(values) < 2:
        only = round(values[0], 2) if values else 0.0
        return {"p50": only, "p95": only, "p99": only}
    cuts = statistics.quantiles(values, n=100, method="inclusive")
    return {"p50": round(cuts[49], 2), "p95": round(cuts[94], 2), "p99": round(cuts[98], 2)}


async def run_load(
    *,
    url: str,
    api_key: str,
    clients: int,
    duration: float,
    max_requests: int,
    mix: tuple[float, float, float] = (0.5, 0.3, 0.2),
    seed: int = 11,
    transport: httpx.AsyncBaseTransport | None = None,
) -> LoadReport:
    latencies: dict[str, list[float]] = defaultdict(list)
    counts = {"requests": 0, "errors": 0}
    deadline = time.monotonic() + duration
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    headers = {"Authorization": f"Bearer {api_key}"}
    async with httpx.AsyncClient(
        base_url=url, headers=headers, timeout=60.0, limits=limits, transport=transport
    ) as http:

        async def client(n: int) -> None:
            rng = random.Random(seed * 1000 + n)
            agent = f"bench-agent-{n % 8}"
            while time.monotonic() < deadline and counts["requests"] < max_requests:
                counts["requests"] += 1
                call = _request(rng, agent, mix)
                started = time.perf_counter()
                try:
                    response = await http.request(
                        call.method, call.path, json=call.body, params=call.params
                    )
                    ok = response.status_code < 400
                except httpx.HTTPError:
                    ok = False
                latencies[call.op].append((time.perf_counter() - started) * 1000)
                counts["errors"] += not ok

        started = time.monotonic()
        await asyncio.gather(*(client(n) for n in range(clients)))
        seconds = time.monotonic() - started
    return LoadReport(
        clients=clients,
        seconds=seconds,
        requests=counts["requests"],
        errors=counts["errors"],
        latencies=dict(latencies),
    )


@dataclass(frozen=True, kw_only=True)
class _Call:
    op: str
    method: str
    path: str
    body: dict[str, str] | None = None
    params: dict[str, str | int] | None = None


def _request(rng: random.Random, agent: str, mix: tuple[float, float, float]) -> _Call:
    roll = rng.random()
    topic = rng.choice(_TOPICS)
    if roll < mix[0]:
        body = {
            "agent_id": agent,
            "key": f"note-{rng.randrange(500)}",
            "value": f"The team agreed on {topic}: decision {rng.randrange(10_000)}.",
        }
        return _Call(op="store", method="POST", path="/api/memories", body=body)
    if roll < mix[0] + mix[1]:
        body = {"query": topic, "agent_id": agent}
        return _Call(op="search", method="POST", path="/api/memories/search", body=body)
    params: dict[str, str | int] = {"agent_id": agent, "limit": 20}
    return _Call(op="list", method="GET", path="/api/memories", params=params)
