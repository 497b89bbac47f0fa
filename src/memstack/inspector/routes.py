"""``/ui``: the inspector's three static files, served from the package.

Only the files named in ``_FILES`` are served (no directory lookups), each with a
Content-Security-Policy that allows this origin's script, style and API only: stored
memories are untrusted text, and the policy is a second wall behind the page's own
escaping (it renders data with ``textContent`` only).
"""

from __future__ import annotations

from functools import cache
from importlib.resources import files
from typing import Final

from fastapi import APIRouter, HTTPException
from fastapi.responses import RedirectResponse, Response

__all__ = ["SECURITY_HEADERS", "inspector_router"]

_FILES: Final = {
    "index.html": "text/html; charset=utf-8",
    "inspector.js": "text/javascript; charset=utf-8",
    "inspector.css": "text/css; charset=utf-8",
}

SECURITY_HEADERS: Final = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
        "img-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}


@cache
def _read(name: str) -> bytes:
    return files("memstack.inspector").joinpath("static", name).read_bytes()


def _asset(name: str) -> Response:
    media_type = _FILES.get(name)
    if media_type is None:
        raise HTTPException(404, f"no inspector file {name!r}; open /ui/ for the inspector.")
    return Response(_read(name), media_type=media_type, headers=SECURITY_HEADERS)


def inspector_router() -> APIRouter:
    """The routes of ``/ui``; left out of the OpenAPI document (they are a page, not API)."""
    router = APIRouter(prefix="/ui", include_in_schema=False)

    @router.get("")
    async def ui_root() -> RedirectResponse:
        return RedirectResponse("/ui/", status_code=308)

    @router.get("/")
    async def index() -> Response:
        return _asset("index.html")

    @router.get("/{name}")
    async def asset(name: str) -> Response:
        return _asset(name)

    return router
