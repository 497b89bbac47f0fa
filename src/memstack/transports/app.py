"""The FastAPI application: routes, errors and the body limits over the services, and
the knowledge indexer's lifetime (started and stopped with the app)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from typing import Final

from fastapi import FastAPI

from memstack import __version__
from memstack.settings import ServerSettings
from memstack.transports.errors import install_error_handlers
from memstack.transports.inspector import inspector_router
from memstack.transports.mcp.http import MAX_STREAM_S, mount_mcp
from memstack.transports.mem0 import MEM0_PATHS, Mem0Dialect, mem0_routes
from memstack.transports.rest.body_limits import RouteBodyLimits
from memstack.transports.rest.docs import mount_docs
from memstack.transports.rest.hot_routes import HotRoutes
from memstack.transports.rest.metrics import RequestMetrics, ServerMetrics, metrics_route
from memstack.transports.rest.routes import api_routes, health_route
from memstack.transports.rest.store_wait import StoreWaitBudget
from memstack.wiring import Services, services_from_settings

__all__ = ["REQUEST_THREADS", "create_app", "create_app_from_env"]


REQUEST_THREADS: Final = 32
"""The threads ``memstack serve`` runs request work on (``create_app(request_threads=)``).

Every route runs its store and model work on the event loop's default executor, and a
store request holds its thread while its text waits for the embedding model. Python's
default pool (cores + 4) then kept searches and listings waiting behind stores. 32
gives 16 clients' requests and their authentication a thread each with room to spare;
the threads are idle, not spinning, while they wait."""


def create_app(
    services: Services,
    *,
    max_body_bytes: int = 1_048_576,
    owns_services: bool = False,
    request_threads: int | None = None,
    hot_routes: bool = True,
    mcp_stream_s: float = MAX_STREAM_S,
    metrics_token: str | None = None,
) -> FastAPI:
    """The REST API over ``services``.

    The caller owns and closes the services, unless ``owns_services``: then the app
    closes them when it shuts down. ``request_threads`` gives the event loop the app
    runs on a default executor of that many threads when it starts (``memstack serve``
    passes ``REQUEST_THREADS``); None leaves the loop's own. ``hot_routes`` answers
    storing and searching memories without FastAPI's per-request machinery, with the
    same answers (``memstack.transports.rest.hot_routes``); False sends them through FastAPI.
    ``mcp_stream_s`` bounds a ``GET /mcp`` stream (``memstack.transports.mcp.http``).
    ``metrics_token``: the Bearer token of ``/metrics`` off loopback (``rest.metrics``).
    """

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if request_threads is not None:
            # The loop shuts its default executor down when it closes (asyncio.run).
            asyncio.get_running_loop().set_default_executor(
                ThreadPoolExecutor(request_threads, thread_name_prefix="memstack-request")
            )
        services.knowledge.indexer.start()  # and carry on with unfinished documents
        try:
            yield
        finally:
            await services.knowledge.indexer.stop()
            await services.users.stop_jobs()
            if owns_services:
                services.close()

    app = FastAPI(
        title="memstack",
        version=__version__,
        description="Two-tier agent memory: scopes, TTL, caps, search, knowledge.",
        lifespan=lifespan,
        docs_url=None,  # /docs and /redoc come from packaged assets (mount_docs)
        redoc_url=None,
    )
    app.state.services = services  # what the app serves from, for operators and tests
    install_error_handlers(app)
    app.include_router(health_route(services))
    app.include_router(api_routes(services))
    dialect = Mem0Dialect(users=services.users, memories=services.memories)
    app.include_router(mem0_routes(dialect, services.keys))  # mem0's clients, by host=
    mount_docs(app)
    app.include_router(inspector_router())  # /ui: the web inspector's static page
    mount_mcp(app, services, max_stream_s=mcp_stream_s)  # /mcp: MCP, behind the same keys
    if hot_routes:
        app.add_middleware(HotRoutes, services=services)  # inside BodyLimit: added first
    app.add_middleware(RouteBodyLimits, max_bytes=max_body_bytes, detail_paths=MEM0_PATHS)
    app.add_middleware(StoreWaitBudget)  # one budget for the whole request
    _count_requests(app, services, metrics_token)  # outermost
    return app


def _count_requests(app: FastAPI, services: Services, token: str | None) -> None:
    """``/metrics``, and the middleware that counts every request for it: added last, so
    it sees each request whole, from its arrival to the end of its answer."""
    metrics = ServerMetrics()
    app.include_router(metrics_route(services, metrics, token=token))
    app.add_middleware(RequestMetrics, metrics=metrics)


def create_app_from_env(env: Mapping[str, str] | None = None) -> FastAPI:
    """The REST API over services opened from ``env`` (default ``os.environ``).

    The factory each worker process of ``memstack serve --workers N`` calls:
    ``serve`` puts its settings in the environment (``ServerSettings.to_env``),
    creates the first API key and warms the short-term tier once, then uvicorn
    starts the workers. Each loads its embedding model before taking requests.
    """
    settings = ServerSettings.from_env(os.environ if env is None else env)
    services = services_from_settings(settings)
    try:
        services.embedder.embed_batch(["warm up"])
    except BaseException:
        services.close()
        raise
    return create_app(
        services,
        max_body_bytes=settings.max_body_bytes,
        owns_services=True,
        request_threads=REQUEST_THREADS,
        mcp_stream_s=settings.mcp_stream_s,
        metrics_token=settings.metrics_token,
    )
