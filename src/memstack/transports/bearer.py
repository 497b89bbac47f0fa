"""The API key of a request's ``Authorization: Bearer <key>`` header, read one way for
every door: the REST fast path, MCP over HTTP, and as FastAPI's ``HTTPBearer`` reads it
for the REST routes (the first such header; the scheme in any case; spaces around the
key dropped)."""

from __future__ import annotations

from starlette.types import Scope

__all__ = ["bearer_token"]


def bearer_token(scope: Scope) -> str | None:
    """The key the request's first ``Authorization`` header carries as ``Bearer <key>``;
    None without one (another scheme, or no key)."""
    for name, value in scope.get("headers") or ():
        if name == b"authorization":
            scheme, _, credentials = value.decode("latin-1").partition(" ")
            key = credentials.strip()
            return key if scheme.lower() == "bearer" and key else None
    return None
