"""The FastAPI application: routes, errors and the body limit over the services."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager

from fastapi import FastAPI

from memstack import __version__
from memstack.inspector import inspector_router
from memstack.mcp.http import mount_mcp
from memstack.server.docs import mount_docs
from memstack.server.errors import BodyLimit, install_error_handlers
from memstack.server.routes import api_routes, health_route
from memstack.server.services import Services, services_from_settings
from memstack.server.settings import ServerSettings

__all__ = ["create_app", "create_app_from_env"]


def create_app(
    services: Services, *, max_body_bytes: int = 1_048_576, owns_services: bool = False
) -> FastAPI:
    """The REST API over ``services``.

    The caller owns and closes the services, unless ``owns_services``: then the app
    closes them when it shuts down.
    """

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        try:
            yield
        finally:
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
    mount_docs(app)
    app.include_router(inspector_router())  # /ui: the web inspector's static page
    mount_mcp(app, services)  # /mcp: the MCP server, behind the same Bearer keys
    app.add_middleware(BodyLimit, max_bytes=max_body_bytes)
    return app


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
    return create_app(services, max_body_bytes=settings.max_body_bytes, owns_services=True)
