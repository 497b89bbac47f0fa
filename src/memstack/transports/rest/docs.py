"""``/docs`` (Swagger UI) and ``/redoc`` (ReDoc) from assets shipped in the package.

FastAPI's default pages load their JavaScript and CSS from a CDN, so they are blank
offline; these pages load the same libraries from ``/docs/assets/`` (see
``static/docs/README.md`` for versions and licences)."""

from __future__ import annotations

from pathlib import Path
from typing import Final

from fastapi import FastAPI
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

__all__ = ["ASSETS_URL", "mount_docs"]

ASSETS_URL: Final = "/docs/assets"
_ASSETS_DIR: Final = Path(__file__).parent / "static" / "docs"


def mount_docs(app: FastAPI) -> None:
    """Serve ``/docs`` and ``/redoc`` for ``app.openapi_url`` from the packaged assets.

    Create the app with ``docs_url=None, redoc_url=None`` so FastAPI's CDN pages are off."""
    openapi_url = app.openapi_url or "/openapi.json"
    title = f"{app.title} API"
    app.mount(ASSETS_URL, StaticFiles(directory=_ASSETS_DIR), name="docs-assets")

    @app.get("/docs", include_in_schema=False)
    async def swagger_ui() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=openapi_url,
            title=title,
            swagger_js_url=f"{ASSETS_URL}/swagger-ui-bundle.js",
            swagger_css_url=f"{ASSETS_URL}/swagger-ui.css",
            swagger_favicon_url=f"{ASSETS_URL}/favicon-32x32.png",
        )

    @app.get("/redoc", include_in_schema=False)
    async def redoc() -> HTMLResponse:
        return get_redoc_html(
            openapi_url=openapi_url,
            title=title,
            redoc_js_url=f"{ASSETS_URL}/redoc.standalone.js",
            redoc_favicon_url=f"{ASSETS_URL}/favicon-32x32.png",
            with_google_fonts=False,
        )
