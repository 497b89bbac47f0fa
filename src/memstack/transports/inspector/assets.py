"""The packaged static files (``static/``), served by name with one security policy.

Only names a router lists are served (no directory lookups). The Content-Security-Policy
allows this origin's script, style and requests only: stored text is untrusted, and the
policy is a second wall behind the pages' own escaping (they render data with
``textContent`` only).
"""

from __future__ import annotations

from collections.abc import Collection
from functools import cache
from importlib.resources import files
from typing import Final

from fastapi import HTTPException
from fastapi.responses import Response

__all__ = ["SECURITY_HEADERS", "static_file"]

_MEDIA_TYPES: Final = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
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
    return files("memstack.transports.inspector").joinpath("static", name).read_bytes()


def static_file(name: str, served: Collection[str], *, home: str) -> Response:
    """``name`` from ``static/`` if it is one of ``served``; else 404 pointing to ``home``."""
    if name not in served:
        raise HTTPException(404, f"no inspector file {name!r}; open {home} for the inspector.")
    media_type = _MEDIA_TYPES[name[name.rindex(".") :]]
    return Response(_read(name), media_type=media_type, headers=SECURITY_HEADERS)
