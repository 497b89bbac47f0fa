"""The FastAPI application: routes, errors and the body limit over the services."""

from __future__ import annotations

from fastapi import FastAPI

from memstack import __version__
from memstack.server.errors import BodyLimit, install_error_handlers
from memstack.server.routes import api_routes, health_route
from memstack.server.services import Services

__all__ = ["create_app"]


def create_app(services: Services, *, max_body_bytes: int = 1_048_576) -> FastAPI:
    """The REST API over ``services``; the caller owns and closes the services."""
    app = FastAPI(
        title="memstack",
        version=__version__,
        description="Two-tier agent memory: scopes, TTL, caps, search, knowledge.",
    )
    install_error_handlers(app)
    app.include_router(health_route(services))
    app.include_router(api_routes(services))
    app.add_middleware(BodyLimit, max_bytes=max_body_bytes)
    return app
