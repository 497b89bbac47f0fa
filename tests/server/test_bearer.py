"""bearer_token reads a request's key exactly as FastAPI's HTTPBearer does."""

from __future__ import annotations

import pytest
from fastapi.security import HTTPBearer
from starlette.requests import Request

from memstack.transports.bearer import bearer_token

HEADERS = [
    [],
    [(b"authorization", b"Bearer key-1")],
    [(b"authorization", b"bearer key-1")],
    [(b"authorization", b"BEARER   key-1  ")],
    [(b"authorization", b"Basic a2V5")],
    [(b"authorization", b"Bearer")],
    [(b"authorization", b"Bearer ")],
    [(b"authorization", b"key-1")],
    [(b"authorization", b"Bearer key-1"), (b"authorization", b"Bearer key-2")],
    [(b"x-other", b"Bearer key-1")],
]


@pytest.mark.parametrize("headers", HEADERS)
async def test_the_key_is_the_one_httpbearer_reads(headers: list[tuple[bytes, bytes]]) -> None:
    scope = {"type": "http", "method": "GET", "path": "/", "headers": headers}
    credentials = await HTTPBearer(auto_error=False)(Request(scope))
    expected = None
    if credentials is not None and credentials.scheme.lower() == "bearer":
        expected = credentials.credentials or None
    assert bearer_token(scope) == expected
