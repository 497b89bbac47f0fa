"""``/ui`` of ``memstack serve``: the inspector's static files, from the package."""

from __future__ import annotations

from typing import Final

from fastapi import APIRouter
from fastapi.responses import RedirectResponse, Response

from memstack.transports.inspector.assets import static_file

__all__ = ["inspector_router"]

_SERVED: Final = frozenset({"index.html", "inspector.js", "users.js", "inspector.css"})


def inspector_router() -> APIRouter:
    """The routes of ``/ui``; left out of the OpenAPI document (they are a page, not API)."""
    router = APIRouter(prefix="/ui", include_in_schema=False)

    @router.get("")
    async def ui_root() -> RedirectResponse:
        return RedirectResponse("/ui/", status_code=308)

    @router.get("/")
    async def index() -> Response:
        return static_file("index.html", _SERVED, home="/ui/")

    @router.get("/{name}")
    async def asset(name: str) -> Response:
        return static_file(name, _SERVED, home="/ui/")

    return router
