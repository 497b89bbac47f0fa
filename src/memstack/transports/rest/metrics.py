"""``GET /metrics``: requests, latencies, tier health and queue depths in Prometheus's
text format.

Requests are counted by an ASGI middleware around the whole app (``RequestMetrics``), so
the requests ``hot_routes`` answers without FastAPI's routing are counted too. Each is
labelled with its route template (``/api/memories/{memory_id}``), never the path it was
sent to, and with its method only when it is a standard one: ids and made-up paths or
methods cannot grow a series each. Tier health (the probes of ``/healthz``) and queue
depths are read when a scrape arrives.

The counters live in a registry of the app's own (``ServerMetrics``), not the library's
process-wide one: two apps in one process (tests, an embedding host) count apart. So
the numbers are per process: with ``--workers N`` each worker counts the requests it
answered, and a scrape is answered by one worker with its own numbers; the tier health
and the documents waiting to be indexed come from the shared tiers, the whole server's
(docs/operations.md says how to read them).

Who may read them: a client on the loopback interface always (``memstack serve`` listens
on loopback by default); any other only with ``Authorization: Bearer <token>`` where the
server has ``MEMSTACK_METRICS_TOKEN``. The numbers name no tenant, agent or memory, but
request volumes and failures are an operator's business, not every API key's.
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import re
import time
from collections.abc import Mapping
from typing import Final

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import Response
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, ProcessCollector
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.exposition import generate_latest
from prometheus_client.registry import Collector
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memstack.errors import StoreUnavailable
from memstack.service.knowledge_index import INDEXING
from memstack.transports.bearer import bearer_token
from memstack.transports.rest.health import HealthCheck
from memstack.transports.rest.hot_routes import ANSWERED
from memstack.wiring import Services

__all__ = [
    "CONTENT_TYPE",
    "LATENCY_BUCKETS",
    "UNMATCHED",
    "RequestMetrics",
    "ServerMetrics",
    "metrics_route",
]

LATENCY_BUCKETS: Final = (
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
)  # fmt: skip
"""Upper bounds (seconds) of the latency histogram: a store or search served from memory
takes milliseconds, one waiting for a store that is down up to a few seconds."""
UNMATCHED: Final = "unmatched"
"""The ``route`` label of a request no route answered: a 404 for an unknown path, or a
413 for a body over the limit, refused before routing."""
CONTENT_TYPE: Final = "text/plain; version=0.0.4; charset=utf-8"
"""The classic text format, which every Prometheus reads."""
_PARAMETER: Final = re.compile(r"\{(\w+)(?::\w+)?\}")
_METHODS: Final = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


class ServerMetrics:
    """The request counters of one app, in a registry of its own."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "memstack_http_requests",
            "HTTP requests answered by this process, by method, route template and status.",
            ["method", "route", "status"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "memstack_http_request_duration_seconds",
            "Seconds from a request's arrival to the end of its answer, by method and route.",
            ["method", "route"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.in_progress = Gauge(
            "memstack_http_requests_in_progress",
            "Requests this process is answering now.",
            registry=self.registry,
        )
        # process_start_time_seconds tells the workers of one server apart.
        ProcessCollector(registry=self.registry)

    def observe(self, method: str, route: str, status: int, seconds: float) -> None:
        method = method if method in _METHODS else "other"
        self.requests.labels(method, route, str(status)).inc()
        self.latency.labels(method, route).observe(seconds)


class RequestMetrics:
    """ASGI middleware: every HTTP request counted and timed in ``metrics``, labelled with
    the template of the route that answered it."""

    def __init__(self, app: ASGIApp, *, metrics: ServerMetrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope["path"]
        status = 500  # what the client gets when the app raises before it answers

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        start = time.perf_counter()
        self.metrics.in_progress.inc()
        try:
            await self.app(scope, receive, sending)
        finally:
            self.metrics.in_progress.dec()
            seconds = time.perf_counter() - start
            self.metrics.observe(scope["method"], _template(scope, path), status, seconds)


def _template(scope: Scope, path: str) -> str:
    """The template of the route that answered the request to ``path``: the one routing
    chose, or a path ``hot_routes`` answers; a request answered before routing (a body
    over the limit, refused with 413 before any route reads it) has none."""
    route = getattr(scope.get("route"), "path", None)
    if isinstance(route, str):
        return _prefixed(route, path, scope.get("path_params") or {})
    if (scope["method"], path) in ANSWERED:
        return str(path)
    return UNMATCHED


def _prefixed(template: str, path: str, params: Mapping[str, object]) -> str:
    """``template`` with the prefixes of the routers it was included under: a route of a
    router included with ``prefix="/api"`` is ``/users/{user_id}``, sent to
    ``/api/users/u1``."""
    filled = _PARAMETER.sub(lambda m: str(params.get(m.group(1), m.group(0))), template)
    if path.endswith(filled):
        return path[: len(path) - len(filled)] + template
    return template


class _Snapshot(Collector):
    """Families computed for one scrape."""

    def __init__(self, families: list[Metric]) -> None:
        self.families = families

    def collect(self) -> list[Metric]:
        return self.families


async def _tiers(health: HealthCheck) -> tuple[GaugeMetricFamily, bool]:
    """``memstack_tier_up``, and whether the long-term tier is up."""
    found = await health.health()
    tiers = GaugeMetricFamily(
        "memstack_tier_up",
        "1 while the tier answers its probe, 0 while it is down (as /healthz, probed at "
        "most once a second); the short-term tier is in-process unless Redis is configured.",
        labels=["tier"],
    )
    tiers.add_metric(["long_term"], 1.0 if found.long_term == "up" else 0.0)
    tiers.add_metric(["short_term"], 0.0 if found.short_term == "down" else 1.0)
    return tiers, found.long_term == "up"


async def _queues(services: Services, *, long_term_up: bool) -> GaugeMetricFamily:
    """``memstack_queue_depth``: what waits in this process, and the documents of the
    whole server waiting to be indexed (left out while the long-term tier is down)."""
    queues = GaugeMetricFamily(
        "memstack_queue_depth",
        "Work waiting. embedding: texts waiting for the embedding model in this process; "
        "extraction_jobs: users' extraction jobs this process runs; knowledge_indexing: "
        "large documents this process is indexing; knowledge_backlog: documents of the "
        "whole server not yet indexed.",
        labels=["queue"],
    )
    batching = services.batching
    queues.add_metric(["embedding"], float(batching.queued() if batching else 0))
    queues.add_metric(["extraction_jobs"], float(services.users.jobs.running()))
    queues.add_metric(["knowledge_indexing"], float(len(services.knowledge.indexer.indexing())))
    if long_term_up:
        try:
            backlog = await asyncio.to_thread(services.records.count, INDEXING)
        except StoreUnavailable:
            pass  # went down since the probe: the tier gauge says so at the next scrape
        else:
            queues.add_metric(["knowledge_backlog"], float(backlog))
    return queues


def _is_loopback(request: Request) -> bool:
    host = request.client.host if request.client else ""
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _check_reader(request: Request, token: str | None) -> None:
    """Loopback clients read freely; others need the token (401), or, where the server
    has none, cannot read at all (403, naming the setting)."""
    if _is_loopback(request):
        return
    if token is None:
        raise HTTPException(
            403,
            "/metrics answers clients on the server's loopback interface only; to scrape "
            "it from elsewhere, set MEMSTACK_METRICS_TOKEN on the server and send "
            "`Authorization: Bearer <that token>`.",
        )
    given = bearer_token(request.scope)
    if given is None or not hmac.compare_digest(given.encode(), token.encode()):
        raise HTTPException(
            401,
            "/metrics needs the server's metrics token: send "
            "`Authorization: Bearer <MEMSTACK_METRICS_TOKEN>`.",
        )


def metrics_route(services: Services, metrics: ServerMetrics, *, token: str | None) -> APIRouter:
    """``GET /metrics`` over ``services`` and ``metrics`` (a page for Prometheus, not API:
    left out of the OpenAPI document, whose answers are JSON)."""
    router = APIRouter(include_in_schema=False)
    health = HealthCheck(services)

    @router.get("/metrics")
    async def scrape(request: Request) -> Response:
        _check_reader(request, token)
        tiers, long_term_up = await _tiers(health)
        queues = await _queues(services, long_term_up=long_term_up)
        live = CollectorRegistry(auto_describe=False)
        live.register(_Snapshot([tiers, queues]))
        body = generate_latest(metrics.registry) + generate_latest(live)
        return Response(body, media_type=CONTENT_TYPE)

    return router
