"""Streamable HTTP at ``/mcp`` of ``memstack serve``, behind the REST API's Bearer keys.

Every request to ``/mcp`` must carry ``Authorization: Bearer <api key>``, resolved by the
same ``ApiKeys`` as REST to the tenant's ``Principal``, or it is refused with REST's 401
body before the SDK sees it (a key that cannot be looked up, the store being down, is
REST's 503 with ``Retry-After``: the route sits inside the app's error handlers; a tool
call that finds the store down is a tool error saying so). The principal reaches the
tools through a context variable set for that request only, so every call is scoped by
the key that made it.

The server is stateless (a fresh transport per request, JSON answers, no session ids):
any worker of ``memstack serve --workers N`` can answer any request. DNS-rebinding
checks are off because no request is served without a key a browser page cannot know.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from contextvars import ContextVar
from typing import Any, Final

from fastapi import FastAPI
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from memstack.errors import ConfigError
from memstack.mcp import require_sdk
from memstack.server.errors import error_response
from memstack.server.services import Services
from memstack.service.api_keys import ApiKeys
from memstack.service.principal import Principal

__all__ = ["MCP_PATH", "mount_mcp"]

MCP_PATH: Final = "/mcp"


def mount_mcp(app: FastAPI, services: Services, *, path: str = MCP_PATH) -> None:
    """Serve MCP over streamable HTTP at ``path`` of ``app``. Without the SDK installed,
    ``path`` answers 501 with the extra to install."""
    try:
        require_sdk()
    except ConfigError as exc:
        app.router.routes.append(Route(path, endpoint=_Missing(str(exc)), methods=None))
        return
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
    from mcp.server.transport_security import TransportSecuritySettings

    from memstack.mcp.server import build_server

    current: ContextVar[Principal] = ContextVar("memstack_mcp_principal")

    async def caller() -> Principal:
        try:
            return current.get()
        except LookupError:
            raise ToolError("no authenticated caller for this request.") from None

    server = build_server(services, caller)
    server.streamable_http_app(
        streamable_http_path=path,
        stateless_http=True,
        json_response=True,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    manager = server.session_manager
    gate = _BearerGate(StreamableHTTPASGIApp(manager), services.keys, current)
    app.router.routes.append(Route(path, endpoint=gate, methods=None))
    _run_during(app, manager.run)


class _BearerGate:
    """Admit a request with a valid Bearer key, its principal set for the request."""

    def __init__(self, app: ASGIApp, keys: ApiKeys, current: ContextVar[Principal]) -> None:
        self.app = app
        self.keys = keys
        self.current = current

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = dict(scope.get("headers") or [])
        scheme, _, token = headers.get(b"authorization", b"").decode("latin-1").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            message = "missing Bearer token: send the header `Authorization: Bearer <api key>`."
            await error_response(401, "unauthorized", message)(scope, receive, send)
            return
        found = await self.keys.principal(token.strip())
        if found is None:
            await error_response(401, "unauthorized", "invalid or revoked API key.")(
                scope, receive, send
            )
            return
        reset = self.current.set(found)
        try:
            await self.app(scope, receive, send)
        finally:
            self.current.reset(reset)


class _Missing:
    def __init__(self, message: str) -> None:
        self.message = message

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await error_response(501, "not_implemented", self.message)(scope, receive, send)


def _run_during(app: FastAPI, context: Callable[[], AbstractAsyncContextManager[None]]) -> None:
    """Enter ``context()`` for as long as the app runs, around its own lifespan."""
    inner = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(application: Any) -> AsyncIterator[Any]:
        async with context(), inner(application) as state:
            yield state

    app.router.lifespan_context = lifespan
