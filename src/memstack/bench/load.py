"""``memstack bench server``: concurrent clients against a memory server.

Each client loops over a fixed mix (by default 50% store, 30% search, 20% list) for
``duration`` seconds or ``max_requests`` requests, whichever comes first, against the
server at ``url`` (loopback in the project's own runs). Latency is measured per request
from send to full response. Every call is kept, in the order it was sent, so the same
mix can be replayed in process (``bench.inprocess``); every memory stored is kept by
id, so a run against a server that outlives it can delete what it wrote.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final, Literal
from urllib.parse import urlencode

import httpx

from memstack._json import JSON, dumps
from memstack.bench.report import percentiles
from memstack.bench.wire import Connection, WireError

__all__ = ["Call", "LoadReport", "Mix", "Operation", "delete_memories", "run_load"]

Operation = Literal["store", "search", "list"]

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
_AGENTS: Final = 8


@dataclass(frozen=True, kw_only=True)
class Mix:
    """Shares of each operation; they need not add up to 1 (they are normalized)."""

    store: float = 0.5
    search: float = 0.3
    list: float = 0.2

    def as_json(self) -> dict[str, float]:
        total = self.store + self.search + self.list
        return {
            "store": round(self.store / total, 3),
            "search": round(self.search / total, 3),
            "list": round(self.list / total, 3),
        }


@dataclass(frozen=True, kw_only=True)
class Call:
    """One request of the mix: what ``bench.inprocess`` replays against the service."""

    op: Operation
    agent_id: str
    key: str = ""
    value: str = ""
    query: str = ""
    limit: int = 20


@dataclass(kw_only=True)
class LoadReport:
    clients: int
    seconds: float
    requests: int
    errors: int
    latencies: dict[str, list[float]] = field(default_factory=dict)
    calls: list[Call] = field(default_factory=list)
    """Every call, in the order the clients sent them."""
    stored_ids: set[str] = field(default_factory=set)
    """Ids of the memories the run stored (a repeated key updates the same id)."""

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
            "latency_ms": percentiles(every),
            "by_operation": {
                op: {"count": len(v), **percentiles(v)} for op, v in sorted(self.latencies.items())
            },
        }


async def run_load(
    *,
    url: str,
    api_key: str,
    clients: int,
    duration: float,
    max_requests: int,
    mix: Mix | None = None,
    agent_prefix: str = "bench-agent",
    seed: int = 11,
) -> LoadReport:
    """Drive the server; agents are named ``<agent_prefix>-<n>`` (eight of them). Each
    client keeps one lean keep-alive connection (``bench.wire``)."""
    mix = mix or Mix()
    report = LoadReport(clients=clients, seconds=0.0, requests=0, errors=0)
    latencies: dict[str, list[float]] = defaultdict(list)
    deadline = time.monotonic() + duration
    headers = {"Authorization": f"Bearer {api_key}"}

    async def client(n: int) -> None:
        rng = random.Random(seed * 1000 + n)
        agent = f"{agent_prefix}-{n % _AGENTS}"
        connection = Connection(url, headers)
        try:
            while time.monotonic() < deadline and report.requests < max_requests:
                report.requests += 1
                call = _call(rng, agent, mix)
                report.calls.append(call)
                started = time.perf_counter()
                ok = await _send(connection, call, report.stored_ids)
                latencies[call.op].append((time.perf_counter() - started) * 1000)
                report.errors += not ok
        finally:
            await connection.close()

    started = time.monotonic()
    await asyncio.gather(*(client(n) for n in range(clients)))
    report.seconds = time.monotonic() - started
    report.latencies = dict(latencies)
    return report


def _client(
    url: str, api_key: str, clients: int, transport: httpx.AsyncBaseTransport | None
) -> httpx.AsyncClient:
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    headers = {"Authorization": f"Bearer {api_key}"}
    return httpx.AsyncClient(
        base_url=url, headers=headers, timeout=60.0, limits=limits, transport=transport
    )


async def _send(connection: Connection, call: Call, stored: set[str]) -> bool:
    try:
        if call.op == "store":
            body: JSON = {"agent_id": call.agent_id, "key": call.key, "value": call.value}
            status, answer = await connection.request("POST", "/api/memories", dumps(body).encode())
            if status < 400:
                stored.add(str(json.loads(answer)["id"]))
        elif call.op == "search":
            body = {"query": call.query, "agent_id": call.agent_id}
            status, _ = await connection.request(
                "POST", "/api/memories/search", dumps(body).encode()
            )
        else:
            query = urlencode({"agent_id": call.agent_id, "limit": call.limit})
            status, _ = await connection.request("GET", f"/api/memories?{query}")
    except (WireError, ValueError, KeyError):
        return False
    return status < 400


def _call(rng: random.Random, agent: str, mix: Mix) -> Call:
    roll = rng.random() * (mix.store + mix.search + mix.list)
    topic = rng.choice(_TOPICS)
    if roll < mix.store:
        return Call(
            op="store",
            agent_id=agent,
            key=f"note-{rng.randrange(500)}",
            value=f"The team agreed on {topic}: decision {rng.randrange(10_000)}.",
        )
    if roll < mix.store + mix.search:
        return Call(op="search", agent_id=agent, query=topic)
    return Call(op="list", agent_id=agent, limit=20)


async def delete_memories(
    *,
    url: str,
    api_key: str,
    ids: Iterable[str],
    transport: httpx.AsyncBaseTransport | None = None,
) -> dict[str, int]:
    """DELETE each memory; ``{"deleted": n, "gone": m}`` (gone: evicted or deleted before)."""
    counts = {"deleted": 0, "gone": 0}
    async with _client(url, api_key, 4, transport) as http:
        for memory_id in sorted(ids):
            response = await http.delete(f"/api/memories/{memory_id}")
            if response.status_code == 404:
                counts["gone"] += 1
            else:
                response.raise_for_status()
                counts["deleted"] += 1
    return counts
