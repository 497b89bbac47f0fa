"""The three busiest routes, answered without FastAPI's per-request machinery.

``POST /api/memories``, ``POST /api/memories/search`` and ``GET /api/memories`` are half,
a third and a fifth of a memory server's requests in ``memstack bench server``'s default
mix. For each, FastAPI resolves the route and its dependencies, validates the body or
query, then validates and serializes the answer again through its response model: in a
``py-spy --gil`` profile under that load, uvicorn, Starlette and FastAPI held the GIL
about half the time.

``HotRoutes`` answers these directly over ASGI, with what the FastAPI routes use: the
same Bearer keys (``ApiKeys.principal``), the same request models, the same service calls
and answers (``routes.stored``, ``routes.searched``, ``routes.listed``) and the same
error bodies (``errors.service_error_response``), also when the key lookup fails (a 503
with ``Retry-After`` while the store is down). A request it cannot be sure to answer
as FastAPI would goes on to the FastAPI app unchanged, its body included, and is
answered there as before:

- another method or path, or a ``root_path``;
- a body without ``Content-Type: application/json``;
- no Bearer key, or one that does not authenticate (FastAPI answers the 401);
- a body that is not JSON, or that the request model refuses (FastAPI answers the
  400 or 422 with every field's error), or with more than 200 brackets, which might
  nest deeper than ``json.loads`` recurses (FastAPI answers);
- a listing with any query parameter but ``agent_id``, ``limit`` and ``offset``, one of
  them twice, or a value the route's own parameter types refuse (FastAPI answers, a 422).

The Bearer key is read as every door reads it (``transports.bearer``), and the listing's
parameters are checked by the types the FastAPI route declares (``transports.schemas``).

It sits inside ``BodyLimit``, so an oversized body is refused with 413 while it reads.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Final
from urllib.parse import parse_qsl

from pydantic import BaseModel, ConfigDict, ValidationError
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memstack.service.api_keys import ApiKeys
from memstack.service.memories import MemoryService
from memstack.service.principal import Principal
from memstack.transports.bearer import bearer_token
from memstack.transports.errors import service_error_response
from memstack.transports.rest.routes import listed, searched, stored
from memstack.transports.schemas import (
    DEFAULT_LIST_LIMIT,
    AgentId,
    ListLimit,
    ListOffset,
    MemoryCreate,
    SearchRequest,
)
from memstack.wiring import Services

__all__ = ["ANSWERED", "HotRoutes"]

_Answer = Callable[[MemoryService, Principal, BaseModel], Awaitable[BaseModel]]


async def _store(memories: MemoryService, caller: Principal, body: BaseModel) -> BaseModel:
    assert isinstance(body, MemoryCreate)
    return await stored(memories, caller, body)


async def _search(memories: MemoryService, caller: Principal, body: BaseModel) -> BaseModel:
    assert isinstance(body, SearchRequest)
    return await searched(memories, caller, body)


# (method, path): the request model, the answer, its status.
_ROUTES: Final[dict[tuple[str, str], tuple[type[BaseModel], _Answer, int]]] = {
    ("POST", "/api/memories"): (MemoryCreate, _store, 201),
    ("POST", "/api/memories/search"): (SearchRequest, _search, 200),
}
_LIST: Final = ("GET", "/api/memories")
ANSWERED: Final = frozenset({*_ROUTES, _LIST})
"""The (method, path) pairs answered here, not by FastAPI's routing; each path is its own
route template (``/metrics`` labels their requests with it)."""
_MAX_OPENINGS: Final = 200
"""Brackets (``{`` and ``[``, in strings too) a body answered here may hold: far more than
a memory or a search takes, far fewer than the ~1,000 levels ``json.loads`` can nest."""


class _ListQuery(BaseModel):
    """The listing's query parameters, typed as the FastAPI route types them."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    agent_id: AgentId | None = None
    limit: ListLimit = DEFAULT_LIST_LIMIT
    offset: ListOffset = 0


class HotRoutes:
    """ASGI middleware: the routes of ``_ROUTES`` over ``services``; the rest to ``app``."""

    def __init__(self, app: ASGIApp, *, services: Services) -> None:
        self.app = app
        self.keys: ApiKeys = services.keys
        self.memories: MemoryService = services.memories

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if _is_list(scope):
            await self._list(scope, receive, send)
            return
        route = _route(scope)
        token = bearer_token(scope) if route is not None else None
        if route is None or token is None or not _sends_json(scope):
            await self.app(scope, receive, send)
            return
        model, answer, status = route
        body = await _read_body(receive)
        if body is None:  # the client went away: nobody to answer, nothing to store
            return
        again = _replay(body)
        # The body first: it costs no I/O, and one FastAPI refuses goes there without
        # a key lookup here that FastAPI would make again.
        request = _parsed(model, body)
        caller = None if request is None else await self._principal(token)
        if isinstance(caller, JSONResponse):  # the key could not be looked up
            await caller(scope, again, send)
            return
        if request is None or caller is None:
            await self.app(scope, again, send)
            return
        try:
            out = await answer(self.memories, caller, request)
        except Exception as exc:
            response = service_error_response(exc)
            if response is None:
                raise
        else:
            response = JSONResponse(out.model_dump(mode="json"), status_code=status)
        await response(scope, again, send)

    async def _list(self, scope: Scope, receive: Receive, send: Send) -> None:
        query = _list_query(scope.get("query_string", b""))
        token = bearer_token(scope) if query is not None else None
        caller = None if token is None else await self._principal(token)
        if isinstance(caller, JSONResponse):  # the key could not be looked up
            await caller(scope, receive, send)
            return
        if query is None or caller is None:
            await self.app(scope, receive, send)
            return
        try:
            out = await listed(
                self.memories,
                caller,
                agent_id=query.agent_id,
                limit=query.limit,
                offset=query.offset,
            )
        except Exception as exc:
            response = service_error_response(exc)
            if response is None:
                raise
        else:
            response = JSONResponse(out.model_dump(mode="json"))
        await response(scope, receive, send)

    async def _principal(self, token: str) -> Principal | JSONResponse | None:
        """The key's principal, None for a key that does not authenticate (FastAPI
        answers the 401), or the error answer when it could not be looked up (the
        store is down: 503, as FastAPI's dependency would answer)."""
        try:
            return await self.keys.principal(token)
        except Exception as exc:
            response = service_error_response(exc)
            if response is None:
                raise
            return response


def _is_list(scope: Scope) -> bool:
    return (
        scope["type"] == "http"
        and not scope.get("root_path")
        and (scope["method"], scope["path"]) == _LIST
    )


def _list_query(raw: bytes) -> _ListQuery | None:
    """The listing's parameters, read as Starlette reads a query string and checked by
    the route's own types; None for any the FastAPI route should read itself."""
    pairs = parse_qsl(raw.decode("latin-1"), keep_blank_values=True)
    if len({name for name, _ in pairs}) != len(pairs):
        return None
    try:
        return _ListQuery.model_validate(dict(pairs))
    except ValidationError:
        return None


def _route(scope: Scope) -> tuple[type[BaseModel], _Answer, int] | None:
    if scope["type"] != "http" or scope.get("root_path"):
        return None
    return _ROUTES.get((scope["method"], scope["path"]))


def _sends_json(scope: Scope) -> bool:
    for name, value in scope["headers"]:
        if name == b"content-type":
            header: str = value.decode("latin-1")
            return header.partition(";")[0].strip().lower() == "application/json"
    return False


async def _read_body(receive: Receive) -> bytes | None:
    """The whole body, or None if the client disconnected before sending it all."""
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return None
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)


def _replay(body: bytes) -> Receive:
    """A ``receive`` that gives ``body`` once, then says the client disconnected."""
    given = False

    async def receive() -> Message:
        nonlocal given
        if given:
            return {"type": "http.disconnect"}
        given = True
        return {"type": "http.request", "body": body, "more_body": False}

    return receive


def _parsed(model: type[BaseModel], body: bytes) -> BaseModel | None:
    """``body`` read as FastAPI reads a JSON body (``json.loads``, then the model), or
    None if FastAPI would refuse it, or might: a body with more than ``_MAX_OPENINGS``
    objects and arrays could be nested deeper than ``json.loads`` can recurse from here,
    and FastAPI, deeper in the stack, would give up sooner."""
    if body.count(b"{") + body.count(b"[") > _MAX_OPENINGS:
        return None
    try:
        return model.model_validate(json.loads(body))
    except (ValueError, ValidationError, RecursionError):  # JSONDecodeError, UnicodeDecodeError
        return None
