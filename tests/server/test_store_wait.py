"""``StoreWaitBudget``: the store calls of one HTTP request share one wait budget, in
whatever threads the request's work runs (``asyncio.to_thread``, Starlette's pool)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from memstack.errors import StoreUnavailable
from memstack.storage import Namespace
from memstack.storage.postgres import PostgresRecordStore
from memstack.transports.rest.store_wait import StoreWaitBudget
from tests.servers import free_port


@pytest.fixture
def nowhere() -> Iterator[PostgresRecordStore]:
    """A store whose server refuses every connection (nothing listens on its port)."""
    store = PostgresRecordStore(f"postgresql://postgres@127.0.0.1:{free_port()}/postgres")
    yield store
    store.close()


def _errors_of_three_calls(store: PostgresRecordStore) -> Starlette:
    async def three_calls(request: Request) -> JSONResponse:
        errors = []
        for _ in range(3):
            try:
                await asyncio.to_thread(store.count, Namespace("mem", "a"))
            except StoreUnavailable as exc:
                errors.append(str(exc))
        return JSONResponse(errors)

    def one_call(request: Request) -> JSONResponse:  # sync: Starlette's thread pool
        try:
            store.count(Namespace("mem", "a"))
        except StoreUnavailable as exc:
            return JSONResponse([str(exc)])
        return JSONResponse([])

    return Starlette(routes=[Route("/three", three_calls), Route("/one", one_call)])


async def _get(app: Starlette, path: str) -> list[str]:
    budgeted = StoreWaitBudget(app, seconds=0.3)
    transport = httpx.ASGITransport(app=budgeted)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        response = await client.get(path)
    errors: list[str] = response.json()
    return errors


def test_the_calls_of_one_request_share_its_budget(nowhere: PostgresRecordStore) -> None:
    first, *later = asyncio.run(_get(_errors_of_three_calls(nowhere), "/three"))
    assert "no connection within 0.3 s" in first
    assert len(later) == 2
    assert all("already waited as long as it may" in error for error in later), later


def test_each_request_has_a_budget_of_its_own(nowhere: PostgresRecordStore) -> None:
    app = _errors_of_three_calls(nowhere)
    for _ in range(2):  # the second request's budget is whole again
        assert ["no connection within 0.3 s" in e for e in asyncio.run(_get(app, "/one"))] == [True]
