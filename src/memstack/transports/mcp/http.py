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

A ``GET`` opens the SSE stream of server-initiated messages, which a stateless server
never sends: left alone it would stay open for ever, past its key's revocation. The gate
ends it after ``max_stream_s`` (``MAX_STREAM_S`` unless the server says otherwise; a
client opens another), and as soon as a recheck of the key, every ``KEY_RECHECK_S``,
finds it revoked. A ``405`` names the methods ``/mcp`` answers in ``Allow``.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from contextvars import ContextVar
from typing import Any, Final

import anyio
from fastapi import FastAPI
from starlette.datastructures import MutableHeaders
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memstack.errors import ConfigError, StoreUnavailable
from memstack.service.api_keys import ApiKeys
from memstack.service.principal import Principal
from memstack.transports.bearer import bearer_token
from memstack.transports.errors import error_response
from memstack.transports.mcp import require_sdk
from memstack.wiring import Services

__all__ = ["KEY_RECHECK_S", "MAX_STREAM_S", "MCP_PATH", "mount_mcp"]

MCP_PATH: Final = "/mcp"
MAX_STREAM_S: Final = 300
"""How long a ``GET /mcp`` stream stays open: it never carries anything (the server is
stateless), and a client that wants one opens another."""
KEY_RECHECK_S: Final = 5.0
"""How often an open stream's key is looked up again (a revoked key ends the stream): at
most one store read per open stream every 5 s (``ApiKeys`` reads the store again once its
``RECHECK_S`` has passed)."""
_ALLOW: Final = "GET, POST"
"""The methods ``/mcp`` answers: stateless, it has no session for ``DELETE`` to end."""

_log = logging.getLogger("memstack.transports.mcp")


def mount_mcp(
    app: FastAPI,
    services: Services,
    *,
    path: str = MCP_PATH,
    max_stream_s: float = MAX_STREAM_S,
    key_recheck_s: float = KEY_RECHECK_S,
) -> None:
    """Serve MCP over streamable HTTP at ``path`` of ``app``. Without the SDK installed,
    ``path`` answers 501 with the extra to install. A ``GET`` stream ends after
    ``max_stream_s``, or within ``key_recheck_s`` of its key being revoked."""
    try:
        require_sdk()
    except ConfigError as exc:
        app.router.routes.append(Route(path, endpoint=_Missing(str(exc)), methods=None))
        return
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
    from mcp.server.transport_security import TransportSecuritySettings

    from memstack.transports.mcp.server import build_server

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
    gate = _BearerGate(
        StreamableHTTPASGIApp(manager),
        services.keys,
        current,
        bounds=_StreamBounds(max_s=max_stream_s, recheck_s=key_recheck_s),
    )
    app.router.routes.append(Route(path, endpoint=gate, methods=None))
    _run_during(app, manager.run)


class _StreamBounds:
    """How long a ``GET`` stream may last, and how often its key is checked."""

    def __init__(self, *, max_s: float, recheck_s: float) -> None:
        if not (max_s > 0 and recheck_s > 0):
            raise ConfigError(
                f"the MCP stream bounds must be positive seconds; got max_stream_s={max_s!r}, "
                f"key_recheck_s={recheck_s!r}."
            )
        self.max_s = max_s
        self.recheck_s = recheck_s


class _BearerGate:
    """Admit a request with a valid Bearer key, its principal set for the request; end a
    ``GET`` stream within its bounds."""

    def __init__(
        self, app: ASGIApp, keys: ApiKeys, current: ContextVar[Principal], *, bounds: _StreamBounds
    ) -> None:
        self.app = app
        self.keys = keys
        self.current = current
        self.bounds = bounds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        token = bearer_token(scope)
        if token is None:
            message = "missing Bearer token: send the header `Authorization: Bearer <api key>`."
            await error_response(401, "unauthorized", message)(scope, receive, send)
            return
        found = await self.keys.principal(token)
        if found is None:
            await error_response(401, "unauthorized", "invalid or revoked API key.")(
                scope, receive, send
            )
            return
        reset = self.current.set(found)
        try:
            if scope["method"] == "GET":
                await self._stream(scope, receive, _allow_on_405(send), token)
            else:
                await self.app(scope, receive, _allow_on_405(send))
        finally:
            self.current.reset(reset)

    async def _stream(self, scope: Scope, receive: Receive, send: Send, token: str) -> None:
        """The app's answer, cut off after ``max_s`` or once the key no longer
        authenticates; a response cut off is ended properly, so the connection stays
        usable."""
        started = ended = False

        async def tracked(message: Message) -> None:
            nonlocal started, ended
            if message["type"] == "http.response.start":
                started = True
            elif message["type"] == "http.response.body" and not message.get("more_body"):
                ended = True
            await send(message)

        async with anyio.create_task_group() as group:
            group.start_soon(self._end_when_due, group.cancel_scope, token)
            await self.app(scope, receive, tracked)
            group.cancel_scope.cancel()
        if started and not ended:
            await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _end_when_due(self, scope: anyio.CancelScope, token: str) -> None:
        """Cancel ``scope`` after ``max_s``, or when a recheck finds the key revoked (or
        cannot look it up: the store is down)."""
        deadline = anyio.current_time() + self.bounds.max_s
        while (left := deadline - anyio.current_time()) > 0:
            await anyio.sleep(min(self.bounds.recheck_s, left))
            try:
                if await self.keys.principal(token) is None:
                    break
            except StoreUnavailable as exc:
                _log.warning("an MCP stream ends: its key cannot be checked: %s", exc)
                break
        scope.cancel()


def _allow_on_405(send: Send) -> Send:
    """``send``, with ``Allow`` on a 405 (the SDK's has none, or names ``DELETE``)."""

    async def allowing(message: Message) -> None:
        if message["type"] == "http.response.start" and message["status"] == 405:
            headers = MutableHeaders(raw=list(message.get("headers", [])))
            headers["Allow"] = _ALLOW
            message = {**message, "headers": headers.raw}
        await send(message)

    return allowing


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
