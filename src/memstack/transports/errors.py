"""One place where errors become HTTP responses, and the request-size guard.

Every error body is ``{"error": {"code", "message", "field"}}`` (``ErrorResponse``); a
bad request never reaches the services, so it never changes stored data. Routes declare
which of these statuses they answer with ``error_responses``, so ``/openapi.json`` lists
them with the real body. A 503 (a backing store is down) carries ``Retry-After``
(``RETRY_AFTER_S``).
"""

from __future__ import annotations

import logging
from typing import Any, Final

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match, Mount
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memstack.errors import ConfigError, InvalidInput, NotFound, StoreUnavailable
from memstack.service.principal import Forbidden
from memstack.transports.schemas import ErrorResponse

__all__ = [
    "RETRY_AFTER_DOC",
    "RETRY_AFTER_S",
    "SERVICE_ERRORS",
    "BodyLimit",
    "error_response",
    "error_responses",
    "http_error_response",
    "install_error_handlers",
    "service_error_response",
    "validation_error_response",
]

_NOT_JSON = "the request body is not valid JSON; send a JSON object."
_EMPTY = "the request body is empty; send a JSON object."
_NOT_JSON_TYPE = (
    "the request body was not read as JSON; send a JSON object with Content-Type: application/json."
)
_TOO_DEEP = (
    "the request body is nested too deeply to read; send a JSON object nested at most "
    "200 levels deep."
)
_NOT_UTF8 = "the request body is not UTF-8; send a JSON object encoded as UTF-8."
_LONG_NUMBER = (
    "a number in the request body has more than 4300 digits; send numbers within the "
    "ranges the fields take."
)

RETRY_AFTER_S: Final = 1
"""The ``Retry-After`` of a 503, in seconds: the PostgreSQL pool tries to reconnect about
once a second (``storage.postgres.RECONNECT_TIMEOUT_S``), and a request answers 503
within ``storage.postgres.REQUEST_TIMEOUT_S`` while the store stays down."""
RETRY_AFTER_DOC: Final[dict[str, Any]] = {
    "Retry-After": {
        "description": "Seconds to wait before trying again.",
        "schema": {"type": "integer", "example": RETRY_AFTER_S},
    }
}
"""The OpenAPI ``headers`` of a 503 answer."""
ALLOW_DOC: Final[dict[str, Any]] = {
    "Allow": {
        "description": "The methods the path answers.",
        "schema": {"type": "string", "example": "GET, HEAD, POST"},
    }
}
"""The OpenAPI ``headers`` of a 405 answer."""
_HEADERS: Final = {
    401: {"WWW-Authenticate": "Bearer"},
    503: {"Retry-After": str(RETRY_AFTER_S)},
}
"""The headers of an error answer, by status."""

# status: (code, when it is answered, an example message, the example's field)
_DOCUMENTED: dict[int, tuple[str, str, str, str | None]] = {
    400: ("malformed_json", "The body is not a JSON document.", _NOT_JSON, "body"),
    401: (
        "unauthorized",
        "No API key, or a revoked one.",
        "missing Bearer token: send the header `Authorization: Bearer <api key>`.",
        None,
    ),
    403: (
        "forbidden",
        "The API key is limited to other agents, or may not change global memories and "
        "knowledge (created without `--global-write`).",
        "this API key may not act for agent 'billing'; it is limited to support-bot.",
        "agent_id",
    ),
    404: ("not_found", "No such memory or document for this tenant.", "no memory 'x'.", "id"),
    405: (
        "method_not_allowed",
        "The path does not answer this method.",
        "Method Not Allowed",
        None,
    ),
    413: (
        "too_large",
        "The body is over the server's limit.",
        "the request body is over 1048576 bytes; send less.",
        "body",
    ),
    422: (
        "invalid_input",
        "A field is invalid; the message names it and the fix.",
        "limit: Input should be less than or equal to 100",
        "limit",
    ),
    503: (
        "unavailable",
        "A backing store (database, Redis) is unreachable; try again after `Retry-After` "
        "seconds. `/healthz` says which.",
        "a backing store is unavailable: PostgreSQL is unavailable: no connection within "
        "1.5 s (...)",
        None,
    ),
}


def error_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` for ``statuses``, each with the error body and an example."""
    out: dict[int | str, dict[str, Any]] = {}
    for status in statuses:
        code, when, message, field = _DOCUMENTED[status]
        example = {"error": {"code": code, "message": message, "field": field}}
        out[status] = {
            "model": ErrorResponse,
            "description": f"`{code}`: {when}",
            "content": {"application/json": {"example": example}},
        }
        if status == 503:
            out[status]["headers"] = RETRY_AFTER_DOC
        if status == 405:
            out[status]["headers"] = ALLOW_DOC
    return out


_log = logging.getLogger("memstack.transports.rest")


def error_response(
    status: int, code: str, message: str, field: str | None = None, **extra: Any
) -> JSONResponse:
    body: dict[str, Any] = {"code": code, "message": message, "field": field, **extra}
    headers = _HEADERS.get(status)
    return JSONResponse({"error": body}, status_code=status, headers=headers)


SERVICE_ERRORS: tuple[type[Exception], ...] = (
    Forbidden,
    NotFound,
    InvalidInput,
    StoreUnavailable,
    ConfigError,
)
"""The errors of the services that have an answer of their own; any other is a 500."""


def service_error_response(exc: Exception) -> JSONResponse | None:
    """The answer to an error the services raised, or None if it is not one of
    ``SERVICE_ERRORS``. The most specific class decides: ``Forbidden`` and ``NotFound``
    are ``InvalidInput`` too."""
    if isinstance(exc, Forbidden):
        return error_response(403, "forbidden", str(exc), exc.field)
    if isinstance(exc, NotFound):
        return error_response(404, "not_found", str(exc), exc.field)
    if isinstance(exc, InvalidInput):
        return error_response(422, "invalid_input", str(exc), exc.field)
    if isinstance(exc, StoreUnavailable):
        _log.error("store unavailable: %s", exc)
        return error_response(503, "unavailable", f"a backing store is unavailable: {exc}")
    if isinstance(exc, ConfigError):
        _log.error("configuration error: %s", exc)
        return error_response(500, "config_error", str(exc))
    return None


def validation_error_response(exc: RequestValidationError) -> JSONResponse:
    """The answer to a request FastAPI could not read into a route's parameters: a 400
    for a body that is not a JSON document, else a 422 naming each field."""
    errors = exc.errors()
    unparsed = _unparsed_body(errors[0] if errors else {})
    if unparsed is not None:
        return error_response(400, "malformed_json", unparsed, "body")
    details = [
        {"field": _field(e.get("loc", ())), "message": str(e.get("msg", ""))} for e in errors
    ]
    field = details[0]["field"] if details else None
    message = "; ".join(f"{d['field']}: {d['message']}" for d in details[:5])
    return error_response(422, "invalid_input", message, field, details=details)


def http_error_response(request: Request, exc: StarletteHTTPException) -> JSONResponse:
    """The answer to an ``HTTPException`` (a body that could not be decoded, a missing
    key, an unknown path, a method the path does not answer)."""
    if exc.status_code == 400:  # the body could not be decoded at all
        return error_response(400, "malformed_json", _unreadable(exc.__cause__), "body")
    code = {401: "unauthorized", 404: "not_found", 405: "method_not_allowed"}.get(
        exc.status_code, "http_error"
    )
    response = error_response(exc.status_code, code, str(exc.detail))
    if exc.status_code == 405:
        response.headers["Allow"] = _allowed(request, exc)
    return response


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        return validation_error_response(exc)

    async def service_error(request: Request, exc: Exception) -> JSONResponse:
        response = service_error_response(exc)
        if response is None:  # registered only for the classes it answers
            raise exc
        return response

    for error in SERVICE_ERRORS:
        app.add_exception_handler(error, service_error)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        return http_error_response(request, exc)


_METHODS: Final = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


def _unreadable(cause: BaseException | None) -> str:
    """Why FastAPI could not read the body as JSON: ``json.loads`` raised ``cause``."""
    if isinstance(cause, RecursionError):
        return _TOO_DEEP
    if isinstance(cause, UnicodeDecodeError):
        return _NOT_UTF8
    if isinstance(cause, ValueError) and "integer string conversion" in str(cause):
        return _LONG_NUMBER
    return _NOT_JSON


def _allowed(request: Request, exc: StarletteHTTPException) -> str:
    """Every method a route of the request's path answers, asked of the routes as the
    router asks them: Starlette's own ``Allow`` names those of the first route that
    matched the path only (``/api/memories`` has three)."""
    routes = [r for r in request.app.router.routes if not isinstance(r, Mount)]
    methods = [
        method
        for method in _METHODS
        if any(r.matches({**request.scope, "method": method})[0] is Match.FULL for r in routes)
    ]
    if methods:
        return ", ".join(methods)
    # No route but a mount's: the mounted app's own 405 (the docs' static assets answer
    # GET and HEAD).
    return (exc.headers or {}).get("Allow", "GET, HEAD")


def _unparsed_body(error: Any) -> str | None:
    """The message for a body that was not a JSON document, or None for any other error."""
    if error.get("type") == "json_invalid":
        return _NOT_JSON
    if tuple(error.get("loc", ())) != ("body",):
        return None
    if error.get("type") == "missing":
        return _EMPTY
    if isinstance(error.get("input"), bytes):  # a JSON string is a document: a 422
        return _NOT_JSON_TYPE
    return None


def _field(loc: Any) -> str:
    """``("body", "ttl")`` → ``ttl``; the first element only says where the field was."""
    parts = [str(p) for p in loc]
    if parts and parts[0] in ("body", "query", "path", "header"):
        parts = parts[1:]
    return ".".join(parts) or "body"


class BodyLimit:
    """Refuse request bodies over ``max_bytes`` with 413: a declared ``Content-Length``
    before the app runs, a chunked body as soon as it has sent more.

    Reading past the limit raises in the app, and the app may catch that (FastAPI turns
    any error reading a body into a 400); so once the limit is passed, whatever the app
    answers is dropped and the 413 is sent instead."""

    def __init__(self, app: ASGIApp, *, max_bytes: int, detail_paths: tuple[str, ...] = ()) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.detail_paths = detail_paths
        """Paths (by prefix) whose clients read an error's message as ``detail``: mem0's."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            await self._too_large(scope, receive, send)
            return
        counted = _Counted(receive, send, self.max_bytes)
        try:
            await self.app(scope, counted.receive, counted.send)
        except Exception:
            if not counted.over or counted.started:
                raise
        if counted.over and not counted.started:
            await self._too_large(scope, receive, send)

    async def _too_large(self, scope: Scope, receive: Receive, send: Send) -> None:
        message = f"the request body is over {self.max_bytes} bytes; send less."
        detail = {"detail": message} if scope["path"].startswith(self.detail_paths) else {}
        body = {"error": {"code": "too_large", "message": message, "field": "body"}, **detail}
        await JSONResponse(body, status_code=413)(scope, receive, send)


class _Counted:
    """A request's ``receive`` that raises ``_TooLarge`` past ``max_bytes``, and its
    ``send``, which drops whatever the app answers after that."""

    def __init__(self, receive: Receive, send: Send, max_bytes: int) -> None:
        self._receive = receive
        self._send = send
        self.max_bytes = max_bytes
        self.seen = 0
        self.over = False
        self.started = False

    async def receive(self) -> Message:
        if self.over:
            raise _TooLarge
        message = await self._receive()
        if message["type"] == "http.request":
            self.seen += len(message.get("body", b""))
            self.over = self.seen > self.max_bytes
            if self.over:
                raise _TooLarge
        return message

    async def send(self, message: Message) -> None:
        if self.over:  # the app's answer to a body it could not read: the 413 replaces it
            return
        self.started = self.started or message["type"] == "http.response.start"
        await self._send(message)


class _TooLarge(Exception):
    pass
