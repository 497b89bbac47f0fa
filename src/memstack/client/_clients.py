"""``MemoryClient`` (blocking) and ``AsyncMemoryClient`` (every call a coroutine).

Each API method is one request builder of ``_calls`` bound to a client: the blocking
client returns the typed body, the async one a ``Coroutine`` of it, so mypy flags a
forgotten ``await`` (a coroutine has no ``["id"]``)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine, Iterator
from typing import IO, Any, Concatenate, ParamSpec, TypeVar

import httpx

from memstack.client import _calls as calls
from memstack.client import _jsonl as jsonl
from memstack.client._http import decode, resolve_settings, unreachable
from memstack.client.types import DocumentSummary, Memory, Scope

__all__ = ["AsyncMemoryClient", "MemoryClient"]

P = ParamSpec("P")
T = TypeVar("T")


def _blocking(
    build: Callable[P, calls.Call[T]],
) -> Callable[Concatenate[MemoryClient, P], T]:
    def method(self: MemoryClient, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return self.send(build(*args, **kwargs))

    method.__name__, method.__doc__ = build.__name__, build.__doc__
    return method


def _awaitable(
    build: Callable[P, calls.Call[T]],
) -> Callable[Concatenate[AsyncMemoryClient, P], Coroutine[Any, Any, T]]:
    async def method(self: AsyncMemoryClient, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return await self.send(build(*args, **kwargs))

    method.__name__, method.__doc__ = build.__name__, build.__doc__
    return method


class MemoryClient:
    """The memory server's REST API, blocking. ``base_url`` defaults to ``MEMSTACK_URL``
    (else ``http://127.0.0.1:8000``), ``api_key`` to ``MEMSTACK_API_KEY``. Use it as a
    context manager or call ``close()``.

    Errors: ``NotFound`` (404), ``InvalidInput`` (400/413/422, ``field`` names the
    culprit), ``AuthError`` (401/403), ``StoreUnavailable`` (5xx, no connection)."""

    def __init__(
        self,
        base_url: str | None = None,
        *,
        api_key: str | None = None,
        timeout: float = 30.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        url, headers = resolve_settings(base_url, api_key)
        self.base_url = url
        self._http = httpx.Client(
            base_url=url, headers=headers, timeout=timeout, transport=transport
        )

    def send(self, call: calls.Call[T]) -> T:
        """Send one request; its typed success body, or a memstack error."""
        try:
            response = self._http.request(
                call.method, call.path, json=call.body, params=call.query()
            )
        except httpx.HTTPError as exc:
            raise unreachable(self.base_url, exc) from exc
        return call.result(decode(response))

    store = _blocking(calls.store)
    store_many = _blocking(calls.store_many)
    get = _blocking(calls.get)
    history = _blocking(calls.history)
    update = _blocking(calls.update)
    delete = _blocking(calls.delete)
    delete_many = _blocking(calls.delete_many)
    list = _blocking(calls.list_memories)
    restore = _blocking(calls.restore)
    search = _blocking(calls.search)
    context = _blocking(calls.context)
    add_document = _blocking(calls.add_document)
    get_document = _blocking(calls.get_document)
    document_status = _blocking(calls.document_status)
    list_documents = _blocking(calls.list_documents)
    search_knowledge = _blocking(calls.search_knowledge)
    delete_document = _blocking(calls.delete_document)
    health = _blocking(calls.health)
    add_turns = _blocking(calls.add_turns)
    get_job = _blocking(calls.get_job)
    remember = _blocking(calls.remember)
    recall = _blocking(calls.recall)
    recalled_context = _blocking(calls.recalled_context)
    list_users = _blocking(calls.list_users)
    user_memories = _blocking(calls.user_memories)
    user_history = _blocking(calls.user_history)
    forget = _blocking(calls.forget)
    erase_user = _blocking(calls.erase_user)
    export_user = _blocking(calls.export_user)
    import_user = _blocking(calls.import_user)

    def wait_for_document(
        self, document_id: str, *, timeout: float = 600.0, every: float = 0.5
    ) -> DocumentSummary:
        """The document's status once it is no longer ``indexing``, polled ``every``
        seconds; after ``timeout`` seconds, whatever it is then (check ``status``)."""
        deadline = time.monotonic() + timeout
        while True:
            status = self.document_status(document_id)
            if status["status"] != "indexing" or time.monotonic() >= deadline:
                return status
            time.sleep(every)

    def iter_memories(
        self,
        *,
        agent_id: str | None = None,
        scope: Scope | None = None,
        session_id: str | None = None,
        include_superseded: bool = False,
    ) -> Iterator[Memory]:
        """Every memory these filters list (with ``include_superseded``, every version),
        newest first, page by page by cursor: each once, however many, while others
        are stored."""
        cursor: str | None = None
        while True:
            page = self.list(
                agent_id=agent_id,
                scope=scope,
                session_id=session_id,
                limit=jsonl.EXPORT_PAGE,
                include_superseded=include_superseded,
                cursor=cursor,
            )
            yield from page["memories"]
            if (cursor := page["next_cursor"]) is None:
                return

    def export_jsonl(
        self,
        out: IO[str],
        *,
        agent_id: str | None = None,
        scope: Scope | None = None,
        session_id: str | None = None,
    ) -> int:
        """Write every memory these filters list to ``out`` with every version of it,
        current and closed: one version a JSON line, with every field ``import_jsonl``
        needs; returns how many lines."""
        count = 0
        for memory in self.iter_memories(
            agent_id=agent_id, scope=scope, session_id=session_id, include_superseded=True
        ):
            out.write(jsonl.memory_line(memory))
            count += 1
        return count

    def import_jsonl(self, lines: IO[str], *, replace: bool = False) -> jsonl.ImportResult:
        """Write back every memory of a JSONL export with all its versions (same
        identities, so the same ids within a tenant). A memory the server holds already
        is left as it is and counted in ``skipped``, unless ``replace``: then what the
        server holds of it is replaced. Running it again changes nothing. Every line is
        checked before anything is written: a malformed one is ``InvalidInput`` naming
        its line number."""
        plan = jsonl.read_export(lines, replace=replace)
        return plan.tally([self.send(call) for call in plan.calls])

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> MemoryClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncMemoryClient:
    """The memory server's REST API for asyncio: every method returns a coroutine.
    Settings and errors as ``MemoryClient``; ``async with`` it or ``await aclose()``."""

    def __init__(
        self,
        base_url: str | None = None,
        *,
        api_key: str | None = None,
        timeout: float = 30.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        url, headers = resolve_settings(base_url, api_key)
        self.base_url = url
        self._http = httpx.AsyncClient(
            base_url=url, headers=headers, timeout=timeout, transport=transport
        )

    async def send(self, call: calls.Call[T]) -> T:
        """Send one request; its typed success body, or a memstack error."""
        try:
            response = await self._http.request(
                call.method, call.path, json=call.body, params=call.query()
            )
        except httpx.HTTPError as exc:
            raise unreachable(self.base_url, exc) from exc
        return call.result(decode(response))

    store = _awaitable(calls.store)
    store_many = _awaitable(calls.store_many)
    get = _awaitable(calls.get)
    history = _awaitable(calls.history)
    update = _awaitable(calls.update)
    delete = _awaitable(calls.delete)
    delete_many = _awaitable(calls.delete_many)
    list = _awaitable(calls.list_memories)
    restore = _awaitable(calls.restore)
    search = _awaitable(calls.search)
    context = _awaitable(calls.context)
    add_document = _awaitable(calls.add_document)
    get_document = _awaitable(calls.get_document)
    document_status = _awaitable(calls.document_status)
    list_documents = _awaitable(calls.list_documents)
    search_knowledge = _awaitable(calls.search_knowledge)
    delete_document = _awaitable(calls.delete_document)
    health = _awaitable(calls.health)
    add_turns = _awaitable(calls.add_turns)
    get_job = _awaitable(calls.get_job)
    remember = _awaitable(calls.remember)
    recall = _awaitable(calls.recall)
    recalled_context = _awaitable(calls.recalled_context)
    list_users = _awaitable(calls.list_users)
    user_memories = _awaitable(calls.user_memories)
    user_history = _awaitable(calls.user_history)
    forget = _awaitable(calls.forget)
    erase_user = _awaitable(calls.erase_user)
    export_user = _awaitable(calls.export_user)
    import_user = _awaitable(calls.import_user)

    async def wait_for_document(
        self, document_id: str, *, timeout: float = 600.0, every: float = 0.5
    ) -> DocumentSummary:
        """As ``MemoryClient.wait_for_document``."""
        deadline = time.monotonic() + timeout
        while True:
            status = await self.document_status(document_id)
            if status["status"] != "indexing" or time.monotonic() >= deadline:
                return status
            await asyncio.sleep(every)

    async def export_jsonl(
        self,
        out: IO[str],
        *,
        agent_id: str | None = None,
        scope: Scope | None = None,
        session_id: str | None = None,
    ) -> int:
        """As ``MemoryClient.export_jsonl``."""
        count, cursor = 0, None
        while True:
            page = await self.list(
                agent_id=agent_id,
                scope=scope,
                session_id=session_id,
                limit=jsonl.EXPORT_PAGE,
                include_superseded=True,
                cursor=cursor,
            )
            for memory in page["memories"]:
                out.write(jsonl.memory_line(memory))
                count += 1
            if (cursor := page["next_cursor"]) is None:
                return count

    async def import_jsonl(self, lines: IO[str], *, replace: bool = False) -> jsonl.ImportResult:
        """As ``MemoryClient.import_jsonl``."""
        plan = jsonl.read_export(lines, replace=replace)
        return plan.tally([await self.send(call) for call in plan.calls])

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncMemoryClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
