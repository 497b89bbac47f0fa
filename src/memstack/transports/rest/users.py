"""The per-user long-term memory routes (``/api/users/{user_id}/...``, tag ``users``):
thin adapters from HTTP to ``UserMemories``, so an agent that is not a Python process
stores a conversation and recalls from it as the library does in process.

A route table like ``routes``: each row names its method, path, handler and the error
statuses it answers, so ``/openapi.json`` says what the server does. Every user is one
of the caller's tenant: the same user id under another key's tenant is another user.

No ``from __future__ import annotations`` here: FastAPI reads the handler signatures,
whose caller dependency is built per app."""

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Annotated, Any, Final

from fastapi import APIRouter, Path, Query, Response

from memstack.errors import NotFound
from memstack.service.principal import Principal
from memstack.service.users import UserMemories
from memstack.transports.errors import error_responses
from memstack.transports.schemas import (
    CURSOR_HELP,
    DEFAULT_LIST_LIMIT,
    MAX_RESOURCE_ID_CHARS,
    Cursor,
    IncludeSuperseded,
    MinScore,
)
from memstack.transports.user_schemas import (
    CONTEXT_MIN_SCORE_HELP,
    BlockOut,
    ErasedOut,
    ExportOut,
    FactCreate,
    FactOut,
    ImportOut,
    ImportRequest,
    JobOut,
    RecallK,
    RecallOut,
    RecallRequest,
    TurnsOut,
    TurnsRequest,
    UserId,
    UserList,
    UserListLimit,
    UserMemoryPage,
    UserQuery,
    UserSession,
    VersionsOut,
    fact_out,
    job_out,
    recalled_out,
    turns_in,
    turns_out,
    user_memory_out,
)

__all__ = ["user_routes"]

_UserIdPath = Annotated[UserId, Path()]
_ItemIdPath = Annotated[str, Path(min_length=1, max_length=MAX_RESOURCE_ID_CHARS)]
_Endpoint = Callable[..., Awaitable[Any]]

_ALWAYS = (401, 403, 405, 422, 503)  # a key, long-term memory on for it, a valid user id
_BODY = (400, 413)  # a route that reads a JSON body


@dataclass(frozen=True)
class _Api:
    users: UserMemories
    auth: Any
    """``Depends`` on the app's keys (see ``routes._Api``)."""


@dataclass(frozen=True)
class _Route:
    method: str
    path: str
    handler: Callable[[_Api], _Endpoint]
    errors: tuple[int, ...] = _ALWAYS
    status_code: int | None = None


def user_routes(users: UserMemories, auth: Any) -> APIRouter:
    """The ``users`` routes, paths relative to the router that includes them (``/api``)."""
    router = APIRouter()
    api = _Api(users, auth)
    for route in _ROUTES:
        router.add_api_route(
            route.path,
            route.handler(api),
            methods=[route.method],
            tags=["users"],
            status_code=route.status_code,
            responses=error_responses(*sorted(route.errors)),
        )
    return router


def _add_turns(api: _Api) -> _Endpoint:
    async def add_turns(
        user_id: _UserIdPath, body: TurnsRequest, caller: Annotated[Principal, api.auth]
    ) -> TurnsOut:
        """Store conversation turns verbatim, each with its neighbours as context; with an
        extraction model, facts are extracted after the answer (``job_id``)."""
        result = await api.users.add_turns(
            caller, user_id, turns_in(body), memory_enabled=body.memory_enabled
        )
        return turns_out(result)

    return add_turns


def _job(api: _Api) -> _Endpoint:
    async def get_job(
        user_id: _UserIdPath, job_id: _ItemIdPath, caller: Annotated[Principal, api.auth]
    ) -> JobOut:
        """An extraction job's state and the memories it stored."""
        return job_out(await api.users.job(caller, user_id, job_id))

    return get_job


def _remember(api: _Api) -> _Endpoint:
    async def remember(
        user_id: _UserIdPath, body: FactCreate, caller: Annotated[Principal, api.auth]
    ) -> FactOut:
        """Store an explicit fact, optionally replacing current ones (``supersedes``)."""
        fact = await api.users.remember(
            caller,
            user_id,
            body.text,
            kind=body.kind,
            importance=body.importance,
            supersedes=body.supersedes,
            metadata=body.metadata,
            memory_enabled=body.memory_enabled,
        )
        return fact_out(fact)

    return remember


def _recall(api: _Api) -> _Endpoint:
    async def recall(
        user_id: _UserIdPath, body: RecallRequest, caller: Annotated[Principal, api.auth]
    ) -> RecallOut:
        """The best memories for a query, best first, each with the scores that ranked it."""
        found = await api.users.recall(
            caller,
            user_id,
            body.query,
            k=body.k,
            touch=body.touch,
            as_of=body.as_of,
            include_superseded=body.include_superseded,
            provenances=body.provenances,
            session_id=body.session_id,
            memory_enabled=body.memory_enabled,
            min_score=body.min_score,
        )
        return recalled_out(found)

    return recall


def _context(api: _Api) -> _Endpoint:
    async def recalled_context(
        user_id: _UserIdPath,
        caller: Annotated[Principal, api.auth],
        query: Annotated[UserQuery, Query()],
        k: Annotated[RecallK, Query()] = 10,
        session_id: Annotated[UserSession | None, Query()] = None,
        memory_enabled: Annotated[bool | None, Query()] = None,
        min_score: Annotated[MinScore, Query(description=CONTEXT_MIN_SCORE_HELP)] = None,
    ) -> BlockOut:
        """The ``<recalled-memories>`` block to inject before the user's message: the
        recalled memories whose calibrated relevance reaches ``min_score``."""
        block = await api.users.context(
            caller,
            user_id,
            query,
            k=k,
            session_id=session_id,
            memory_enabled=memory_enabled,
            min_score=min_score,
        )
        return BlockOut(block=block)

    return recalled_context


def _memories(api: _Api) -> _Endpoint:
    async def user_memories(
        user_id: _UserIdPath,
        caller: Annotated[Principal, api.auth],
        limit: UserListLimit = DEFAULT_LIST_LIMIT,
        cursor: Annotated[Cursor | None, Query(description=f"{CURSOR_HELP}.")] = None,
        include_superseded: Annotated[IncludeSuperseded, Query()] = False,
    ) -> UserMemoryPage:
        """A page of the user's turns and facts, newest first."""
        page = await api.users.memories(
            caller, user_id, limit=limit, cursor=cursor, include_superseded=include_superseded
        )
        return UserMemoryPage(
            memories=[user_memory_out(m) for m in page.items], next_cursor=page.next_cursor
        )

    return user_memories


def _users(api: _Api) -> _Endpoint:
    async def list_users(
        caller: Annotated[Principal, api.auth],
        limit: UserListLimit = DEFAULT_LIST_LIMIT,
        cursor: Annotated[Cursor | None, Query(description=f"{CURSOR_HELP}.")] = None,
    ) -> UserList:
        """The key's tenant's users that hold a memory, in id order."""
        page = await api.users.users(caller, limit=limit, cursor=cursor)
        return UserList(users=page.users, next_cursor=page.next_cursor)

    return list_users


def _history(api: _Api) -> _Endpoint:
    async def user_memory_history(
        user_id: _UserIdPath, memory_id: _ItemIdPath, caller: Annotated[Principal, api.auth]
    ) -> VersionsOut:
        """Every version of a memory, oldest first; 404 when it has none."""
        versions = await api.users.history(caller, user_id, memory_id)
        if not versions:
            raise _no_memory(memory_id)
        return VersionsOut(versions=[user_memory_out(v) for v in versions])

    return user_memory_history


def _forget(api: _Api) -> _Endpoint:
    async def forget(
        user_id: _UserIdPath, memory_id: _ItemIdPath, caller: Annotated[Principal, api.auth]
    ) -> Response:
        """Delete one memory of the user."""
        if not await api.users.forget(caller, user_id, memory_id):
            raise _no_memory(memory_id)
        return Response(status_code=204)

    return forget


def _erase(api: _Api) -> _Endpoint:
    async def erase_user(user_id: _UserIdPath, caller: Annotated[Principal, api.auth]) -> ErasedOut:
        """Erase the user: every turn, fact, version and job."""
        return ErasedOut(deleted=await api.users.erase(caller, user_id))

    return erase_user


def _export(api: _Api) -> _Endpoint:
    async def export_user(
        user_id: _UserIdPath, caller: Annotated[Principal, api.auth]
    ) -> ExportOut:
        """Everything stored of the user, as ``import`` takes it back."""
        return ExportOut(memories=await api.users.export(caller, user_id))

    return export_user


def _import(api: _Api) -> _Endpoint:
    async def import_user(
        user_id: _UserIdPath,
        body: ImportRequest,
        caller: Annotated[Principal, api.auth],
        replace: Annotated[bool, Query(description="Replace what is there already.")] = False,
    ) -> ImportOut:
        """Write back an export; an item the user holds already is skipped unless
        ``replace``."""
        done = await api.users.restore(caller, user_id, body.memories, replace=replace)
        return ImportOut(stored=done.stored, skipped=done.skipped)

    return import_user


def _no_memory(memory_id: str) -> NotFound:
    """The id is not echoed: a path may carry anything, a pasted secret too."""
    return NotFound(
        f"no memory with this id ({len(memory_id)} characters) for this user; list them "
        "with GET /api/users/{user_id}/memories.",
        field="memory_id",
    )


_USER: Final = "/users/{user_id}"
_ROUTES: Final = (
    _Route("GET", "/users", _users),
    _Route("POST", f"{_USER}/turns", _add_turns, (*_ALWAYS, *_BODY)),
    _Route("GET", f"{_USER}/jobs/{{job_id}}", _job, (*_ALWAYS, 404)),
    _Route("POST", f"{_USER}/memories", _remember, (*_ALWAYS, *_BODY), status_code=201),
    _Route("GET", f"{_USER}/memories", _memories),
    _Route("POST", f"{_USER}/recall", _recall, (*_ALWAYS, *_BODY)),
    _Route("GET", f"{_USER}/context", _context),
    _Route("GET", f"{_USER}/memories/{{memory_id}}/history", _history, (*_ALWAYS, 404)),
    _Route("DELETE", f"{_USER}/memories/{{memory_id}}", _forget, (*_ALWAYS, 404), 204),
    _Route("DELETE", _USER, _erase),
    _Route("GET", f"{_USER}/export", _export),
    _Route("POST", f"{_USER}/import", _import, (*_ALWAYS, *_BODY)),
)
