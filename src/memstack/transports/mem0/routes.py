"""mem0's REST routes on memstack's server (tag ``mem0``): the paths, bodies and answers
mem0's own clients use, thin over ``Mem0Dialect``.

Authentication is mem0's header, ``Authorization: Token <key>`` (``Bearer`` too), with a
memstack API key; every call is that key's tenant's. Errors carry mem0's ``detail`` (the
message its clients raise) beside memstack's ``error`` object, with mem0's statuses: its
clients turn a 400/422 into ``ValidationError``, a 401/403 into ``AuthenticationError``,
a 404 into ``MemoryNotFoundError``. The routes of mem0's platform that memstack has no
counterpart for (organizations, projects, webhooks, exports, ...) answer 404
``not_served`` saying what to use instead.

No ``from __future__ import annotations`` here: FastAPI reads the handler signatures.
"""

import json
import re
from collections.abc import Awaitable, Callable, Coroutine
from typing import Annotated, Any, Final

from fastapi import APIRouter, Depends, Header, HTTPException, Path, Query, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from starlette.exceptions import HTTPException as StarletteHTTPException

from memstack._json import JSON
from memstack.errors import InvalidInput
from memstack.secrets import refuse_secrets
from memstack.service.api_keys import ApiKeys
from memstack.service.principal import Principal
from memstack.transports.errors import (
    SERVICE_ERRORS,
    error_response,
    http_error_response,
    service_error_response,
    validation_error_response,
)
from memstack.transports.mem0.dialect import Entity, Mem0Dialect, Message
from memstack.transports.mem0.filters import (
    ENTITY_FIELDS,
    Condition,
    Node,
    all_of,
    names_entities_only,
    parse_filters,
    wanted,
)
from memstack.transports.mem0.schemas import (
    MAX_PAGE_SIZE,
    AddBody,
    BatchDeleteBody,
    BatchUpdateBody,
    ListBody,
    SearchBody,
    UpdateBody,
)
from memstack.transports.mem0.subjects import memory_out
from memstack.transports.schemas import MAX_RESOURCE_ID_CHARS

__all__ = ["MEM0_PATHS", "NOT_SERVED_PATHS", "mem0_routes"]

MEM0_PATHS: Final = ("/v1/", "/v2/", "/v3/", "/api/v1/")
"""Where mem0's routes are: their errors (a 413 too) carry mem0's ``detail``."""

DEFAULT_THRESHOLD: Final = 0.1
"""mem0's own default ``threshold`` of a search."""
DEFAULT_PAGE_SIZE: Final = 100
"""mem0's own default page of ``get_all``."""
_Endpoint = Callable[..., Awaitable[Any]]
_MemoryId = Annotated[str, Path(min_length=1, max_length=1_000)]
_EntityParam = Annotated[str | None, Query(min_length=1, max_length=MAX_RESOURCE_ID_CHARS)]


class Mem0Route(APIRoute):
    """A route whose every error answers in mem0's shape: ``detail`` beside memstack's
    ``error`` object."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def answer(request: Request) -> Response:
            try:
                return await handler(request)
            except RequestValidationError as exc:
                return _mem0_error(validation_error_response(exc))
            except StarletteHTTPException as exc:
                return _mem0_error(http_error_response(request, exc))
            except SERVICE_ERRORS as exc:
                response = service_error_response(exc)
                if response is None:  # pragma: no cover - every one of them has an answer
                    raise
                return _mem0_error(response)

        return answer


_INDEX: Final = re.compile(r"(?<=[A-Za-z_\]])\.(\d+)(?=[.:\s]|$)")


def _mem0_error(response: JSONResponse) -> JSONResponse:
    """memstack's error answer with mem0's ``detail``, fields named as mem0's documents
    name them (``messages[0].content``, not ``messages.0.content``)."""
    body = json.loads(bytes(response.body))
    error = body["error"]
    for item in [error, *error.get("details", [])]:
        for name in ("field", "message"):
            if isinstance(item.get(name), str):
                item[name] = _INDEX.sub(r"[\1]", item[name])
    body["detail"] = error["message"]
    headers = {k: v for k, v in response.headers.items() if k.lower() != "content-length"}
    return JSONResponse(body, status_code=response.status_code, headers=headers)


def _token_principal(keys: ApiKeys) -> Callable[..., Awaitable[Principal]]:
    async def principal(authorization: Annotated[str | None, Header()] = None) -> Principal:
        scheme, _, key = (authorization or "").partition(" ")
        if scheme.lower() not in ("token", "bearer") or not key.strip():
            raise HTTPException(
                401,
                "missing API key: send the header `Authorization: Token <memstack API key>` "
                "(mem0's clients do, given api_key=); `memstack keys create` makes a key.",
            )
        found = await keys.principal(key.strip())
        if found is None:
            raise HTTPException(401, "invalid or revoked API key.")
        return found

    return principal


def mem0_routes(dialect: Mem0Dialect, keys: ApiKeys) -> APIRouter:
    """mem0's routes, at the root of the app (mem0's paths: ``/v1/...``, ``/v3/...``)."""
    router = APIRouter(route_class=Mem0Route, tags=["mem0"])
    caller = Depends(_token_principal(keys))
    for path, methods, instead in _NOT_SERVED:
        router.add_api_route(path, _not_served(instead), methods=methods, include_in_schema=False)
    for method, path, make in _ROUTES:
        router.add_api_route(
            path,
            make(dialect, caller),
            methods=[method],
            response_model=None,
            include_in_schema=False,  # mem0's API, documented by mem0 and docs/mem0.md
        )
    return router


def _ping(d: Mem0Dialect, auth: Any) -> _Endpoint:
    async def ping(caller: Annotated[Principal, auth]) -> dict[str, JSON]:
        """mem0's key check: the key's tenant stands for mem0's organization and project."""
        return {
            "status": "ok",
            "org_id": caller.tenant,
            "project_id": caller.tenant,
            "user_email": None,
        }

    return ping


def _add(d: Mem0Dialect, auth: Any) -> _Endpoint:
    async def add_memories(body: AddBody, caller: Annotated[Principal, auth]) -> dict[str, JSON]:
        """Store messages: a user's as turns of their conversation, kept verbatim (facts
        extracted from them too when the server has a model and ``infer`` is true)."""
        messages = [Message(**m.model_dump()) for m in body.messages]
        return await d.add(
            caller,
            _entity(body),
            messages,
            metadata=body.metadata,
            infer=body.infer,
            timestamp=body.timestamp,
        )

    return add_memories


def _list(d: Mem0Dialect, auth: Any) -> _Endpoint:
    async def get_all_memories(
        body: ListBody,
        request: Request,
        caller: Annotated[Principal, auth],
        page: Annotated[int | None, Query(ge=1)] = None,
        page_size: Annotated[int | None, Query(ge=1, le=MAX_PAGE_SIZE)] = None,
    ) -> dict[str, JSON]:
        """A page of the memories the filters match, newest first."""
        node = parse_filters(body.filters)
        extra = [
            None
            if body.start_date is None
            else Condition(field="created_at", op="gte", value=body.start_date),
            None
            if body.end_date is None
            else Condition(field="created_at", op="lte", value=body.end_date),
            None
            if not body.categories
            else Condition(field="categories", op="in", value=list(body.categories)),
            None
            if body.keywords is None
            else Condition(field="keywords", op="icontains", value=body.keywords),
        ]
        found = await d.listed(caller, all_of(node, *extra), wanted(node))
        number = page or body.page or 1
        size = page_size or body.page_size or DEFAULT_PAGE_SIZE
        chosen = found[(number - 1) * size : number * size]
        return {
            "count": len(found),
            "next": _page_url(request, number + 1, size) if number * size < len(found) else None,
            "previous": _page_url(request, number - 1, size) if number > 1 else None,
            "results": [memory_out(s) for s in chosen],
        }

    return get_all_memories


def _search(d: Mem0Dialect, auth: Any) -> _Endpoint:
    async def search_memories(
        body: SearchBody, caller: Annotated[Principal, auth]
    ) -> dict[str, JSON]:
        """The best memories for a query among those the filters match, each with its
        ``score``: the calibrated relevance ``threshold`` applies to (memstack's
        ``min_score``)."""
        node = parse_filters(body.filters)
        extra: list[Node | None] = [
            Condition(field="metadata", op="eq", value=v, key=k)
            for k, v in (body.metadata or {}).items()
        ]
        if body.categories:
            extra.append(Condition(field="categories", op="in", value=list(body.categories)))
        found = await d.search(
            caller,
            body.query,
            all_of(node, *extra),
            wanted(node),
            top_k=body.top_k,
            threshold=DEFAULT_THRESHOLD if body.threshold is None else body.threshold,
            narrowed=bool(extra) or not names_entities_only(node),
        )
        return {"results": [memory_out(s.subject, score=s.score) for s in found]}

    return search_memories


def _get(d: Mem0Dialect, auth: Any) -> _Endpoint:
    async def get_memory(
        memory_id: _MemoryId, caller: Annotated[Principal, auth]
    ) -> dict[str, JSON]:
        """A memory as it is now (an updated memory answers to its first id too)."""
        return memory_out(await d.get(caller, memory_id))

    return get_memory


def _update(d: Mem0Dialect, auth: Any) -> _Endpoint:
    async def update_memory(
        memory_id: _MemoryId, body: UpdateBody, caller: Annotated[Principal, auth]
    ) -> dict[str, JSON]:
        """A new text (a new version; history keeps the old) or new metadata."""
        if body.text is None and body.metadata is None:
            raise InvalidInput("give text or metadata to change.", field="text")
        return memory_out(await d.update(caller, memory_id, text=body.text, metadata=body.metadata))

    return update_memory


def _delete(d: Mem0Dialect, auth: Any) -> _Endpoint:
    async def delete_memory(
        memory_id: _MemoryId,
        caller: Annotated[Principal, auth],
        delete_linked: Annotated[bool, Query()] = False,
    ) -> dict[str, JSON]:
        """Close a user's memory (its history shows the DELETE), erase an agent's."""
        await d.delete(caller, memory_id)
        return {"message": "Memory deleted successfully!"}

    return delete_memory


def _history(d: Mem0Dialect, auth: Any) -> _Endpoint:
    async def memory_history(
        memory_id: _MemoryId, caller: Annotated[Principal, auth]
    ) -> list[JSON]:
        """Every change of a memory, oldest first, as mem0's ADD / UPDATE / DELETE events."""
        return await d.history(caller, memory_id)

    return memory_history


def _delete_all(d: Mem0Dialect, auth: Any) -> _Endpoint:
    async def delete_all_memories(
        caller: Annotated[Principal, auth],
        user_id: _EntityParam = None,
        agent_id: _EntityParam = None,
        app_id: _EntityParam = None,
        run_id: _EntityParam = None,
        org_id: Annotated[str | None, Query(max_length=MAX_RESOURCE_ID_CHARS)] = None,
        project_id: Annotated[str | None, Query(max_length=MAX_RESOURCE_ID_CHARS)] = None,
    ) -> dict[str, JSON]:
        """Erase every memory of a user, agent or app (``*``: of every user or agent)."""
        entity = Entity(user_id=user_id, agent_id=agent_id, app_id=app_id, run_id=run_id)
        deleted = await d.delete_all(caller, entity)
        return {"message": "Memories deleted successfully!", "deleted": deleted}

    return delete_all_memories


def _list_v1(d: Mem0Dialect, auth: Any) -> _Endpoint:
    async def list_memories_v1(
        caller: Annotated[Principal, auth],
        user_id: _EntityParam = None,
        agent_id: _EntityParam = None,
        app_id: _EntityParam = None,
        run_id: _EntityParam = None,
    ) -> list[JSON]:
        """mem0's first listing: the memories of the entities named, newest first."""
        given = {"user_id": user_id, "agent_id": agent_id, "app_id": app_id, "run_id": run_id}
        node = parse_filters({k: v for k, v in given.items() if v is not None} or None)
        return [memory_out(s) for s in await d.listed(caller, node, wanted(node))]

    return list_memories_v1


def _batch_update(d: Mem0Dialect, auth: Any) -> _Endpoint:
    async def batch_update(
        body: BatchUpdateBody, caller: Annotated[Principal, auth]
    ) -> dict[str, JSON]:
        """Update up to 1,000 memories; every id and text is checked before any changes."""
        items: list[JSON] = [{"text": m.text, "metadata": m.metadata} for m in body.memories]
        refuse_secrets({"memories": items}, where="memory")
        for i, m in enumerate(body.memories):
            if m.text is None and m.metadata is None:
                raise InvalidInput("give text or metadata to change.", field=f"memories[{i}].text")
        await _resolve(d, caller, [m.memory_id for m in body.memories])
        for m in body.memories:
            await d.update(caller, m.memory_id, text=m.text, metadata=m.metadata)
        return {"message": f"Successfully updated {len(body.memories)} memories"}

    return batch_update


def _batch_delete(d: Mem0Dialect, auth: Any) -> _Endpoint:
    async def batch_delete(
        body: BatchDeleteBody, caller: Annotated[Principal, auth]
    ) -> dict[str, JSON]:
        """Delete up to 1,000 memories; every id is checked before any goes."""
        ids = [m.memory_id for m in body.memories]
        await _resolve(d, caller, ids)
        for memory_id in dict.fromkeys(ids):
            await d.delete(caller, memory_id)
        return {"message": f"Successfully deleted {len(set(ids))} memories"}

    return batch_delete


async def _resolve(d: Mem0Dialect, caller: Principal, ids: list[str]) -> None:
    for i, memory_id in enumerate(ids):
        try:
            await d.get(caller, memory_id)
        except InvalidInput as exc:  # NotFound and Forbidden are InvalidInput too
            raise type(exc)(
                f"memories[{i}].memory_id: {exc} Nothing was changed.",
                field=f"memories[{i}].memory_id",
            ) from exc


def _entities(d: Mem0Dialect, auth: Any) -> _Endpoint:
    async def list_entities(caller: Annotated[Principal, auth]) -> dict[str, JSON]:
        """The key's users and agents that hold memories."""
        found = await d.entities(caller)
        kinds = [e["type"] for e in found if isinstance(e, dict)]
        return {
            "count": len(found),
            "next": None,
            "previous": None,
            "results": found,
            "total_users": kinds.count("user"),
            "total_agents": kinds.count("agent"),
            "total_apps": 0,
            "total_runs": 0,
        }

    return list_entities


def _delete_entity(d: Mem0Dialect, auth: Any) -> _Endpoint:
    async def delete_entity(
        entity_type: Annotated[str, Path(max_length=10)],
        entity_id: Annotated[str, Path(min_length=1, max_length=MAX_RESOURCE_ID_CHARS)],
        caller: Annotated[Principal, auth],
    ) -> dict[str, JSON]:
        """Erase an entity's memories: ``user``, ``agent`` or ``app``."""
        if entity_type not in ("user", "agent", "app"):
            raise InvalidInput(
                f"entity_type must be user, agent or app; got {entity_type[:10]!r} (a run's "
                "memories go with DELETE /v1/memories/?user_id=...&run_id=...).",
                field="entity_type",
            )
        await d.delete_all(caller, Entity(**{f"{entity_type}_id": entity_id}))
        return {"message": "Entity deleted successfully."}

    return delete_entity


def _event(d: Mem0Dialect, auth: Any) -> _Endpoint:
    async def get_event(
        event_id: Annotated[str, Path(min_length=1, max_length=1_000)],
        caller: Annotated[Principal, auth],
    ) -> dict[str, JSON]:
        """The extraction that an add started, as mem0's event."""
        return await d.event(caller, event_id)

    return get_event


def _entity(body: AddBody) -> Entity:
    """The entity ids of an add: top-level, or in ``filters`` as mem0's clients may send
    them; the same id given both ways must agree."""
    given = dict(body.filters or {})
    unknown = sorted(set(given) - set(ENTITY_FIELDS))
    if unknown:
        raise InvalidInput(
            f"filters.{unknown[0][:40]}: an add's filters hold only {', '.join(ENTITY_FIELDS)}.",
            field=f"filters.{unknown[0][:40]}",
        )
    ids: dict[str, str | None] = {}
    for name in ENTITY_FIELDS:
        top, inner = getattr(body, name), given.get(name)
        if inner is not None and not isinstance(inner, str):
            raise InvalidInput(f"filters.{name} must be a string.", field=f"filters.{name}")
        if top is not None and inner is not None and top != inner:
            raise InvalidInput(f"{name} is given twice with two values; give it once.", field=name)
        ids[name] = top if top is not None else inner
    return Entity(**ids)


def _page_url(request: Request, page: int, size: int) -> str:
    return str(request.url.include_query_params(page=page, page_size=size))


def _not_served(instead: str) -> _Endpoint:
    async def not_served(request: Request) -> JSONResponse:
        message = f"memstack does not serve mem0's {request.url.path}: {instead}"
        response = error_response(404, "not_served", message)
        return _mem0_error(response)

    return not_served


_Make = Callable[[Mem0Dialect, Any], _Endpoint]
_ROUTES: Final[tuple[tuple[str, str, _Make], ...]] = (
    ("GET", "/v1/ping/", _ping),
    ("POST", "/v3/memories/add/", _add),
    ("POST", "/v3/memories/search/", _search),
    ("POST", "/v3/memories/", _list),
    ("GET", "/v1/memories/", _list_v1),
    ("DELETE", "/v1/memories/", _delete_all),
    ("GET", "/v1/memories/{memory_id}/history/", _history),
    ("GET", "/v1/memories/{memory_id}/", _get),
    ("PUT", "/v1/memories/{memory_id}/", _update),
    ("DELETE", "/v1/memories/{memory_id}/", _delete),
    ("PUT", "/v1/batch/", _batch_update),
    ("DELETE", "/v1/batch/", _batch_delete),
    ("GET", "/v1/entities/", _entities),
    ("DELETE", "/v1/entities/{entity_type}/{entity_id}/", _delete_entity),
    ("DELETE", "/v2/entities/{entity_type}/{entity_id}/", _delete_entity),
    ("GET", "/v1/event/{event_id}/", _event),
)
_ALL: Final = ["GET", "POST", "PUT", "PATCH", "DELETE"]
_NOT_SERVED: Final[tuple[tuple[str, list[str], str], ...]] = (
    (
        "/api/v1/orgs/{rest:path}",
        _ALL,
        "a memstack API key stands for one tenant; create keys with `memstack keys create`.",
    ),
    (
        "/api/v1/webhooks/{rest:path}",
        _ALL,
        "memstack sends no webhooks; poll GET /v1/event/{event_id}/ or /api/users/... instead.",
    ),
    (
        "/v1/exports/{rest:path}",
        _ALL,
        "export a user with GET /api/users/{user_id}/export (memstack users export).",
    ),
    ("/v1/summary/", _ALL, "recall with POST /v3/memories/search/ or /api/users/{user_id}/recall."),
    ("/v1/feedback/", _ALL, "memstack keeps no feedback on memories."),
    (
        "/v2/profiles/{rest:path}",
        _ALL,
        "memstack builds no profiles; recall a user's memories with POST /v3/memories/search/.",
    ),
    (
        "/v2/entities/{entity_type}/{entity_id}/profile/",
        _ALL,
        "memstack builds no profiles; recall a user's memories with POST /v3/memories/search/.",
    ),
    ("/v1/events/", _ALL, "follow one add's extraction with GET /v1/event/{event_id}/."),
    ("/v1/memories/events/", _ALL, "follow one add's extraction with GET /v1/event/{event_id}/."),
    ("/v1/memories/search/", _ALL, "use POST /v3/memories/search/ (mem0's clients do)."),
    ("/v2/memories/{rest:path}", _ALL, "use mem0's v3 routes (mem0's clients do)."),
    ("/v2/memories/", _ALL, "use POST /v3/memories/ (mem0's clients do)."),
    ("/v1/stats/", _ALL, "GET /v1/entities/ counts each user's and agent's memories."),
    ("/v1/entities/filters/", _ALL, "list entities with GET /v1/entities/."),
    ("/v1/users/", _ALL, "a user exists once a memory is added for it."),
    ("/v1/agents/", _ALL, "an agent exists once a memory is added for it."),
    ("/v1/apps/", _ALL, "an app exists once a memory is added for it."),
    ("/v1/runs/", _ALL, "a run exists once a memory is added for it."),
)
"""mem0's routes that have no meaning here, each with what to use instead."""
NOT_SERVED_PATHS: Final = tuple(path for path, _, _ in _NOT_SERVED)
"""The paths of mem0's platform answered 404 ``not_served``: nothing is stored there."""
