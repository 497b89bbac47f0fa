"""The load generator of ``memstack bench server`` against a real server, and its wire."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import httpx
import pytest

from memstack.bench.load import Mix, run_load
from memstack.bench.wire import Connection, WireError
from tests.server.conftest import Keys, LiveServer, auth


async def test_every_operation_of_the_mix_is_answered_and_what_it_stored_is_there(
    live: LiveServer, keys: Keys
) -> None:
    report = await asyncio.wait_for(
        run_load(
            url=live.url,
            api_key=keys.acme,
            clients=4,
            duration=30.0,
            max_requests=60,
            mix=Mix(store=0.5, search=0.3, list=0.2),
        ),
        timeout=60,
    )
    assert report.requests == 60 and report.errors == 0
    assert set(report.latencies) == {"store", "search", "list"}
    assert report.stored_ids
    async with httpx.AsyncClient(base_url=live.url, headers=auth(keys.acme)) as http:
        for memory_id in sorted(report.stored_ids)[:5]:
            assert (await http.get(f"/api/memories/{memory_id}")).status_code == 200


async def test_a_bad_key_counts_every_request_as_an_error(live: LiveServer) -> None:
    report = await run_load(
        url=live.url, api_key="msk_nope", clients=2, duration=30.0, max_requests=6
    )
    assert report.requests == 6 and report.errors == 6


Answer = Callable[[bytes], bytes]


async def _exchange(
    answer: bytes, requests: int = 1, *, close: bool = False, timeout: float = 10
) -> list[tuple[int, bytes] | str]:
    """``requests`` requests over one Connection to a server that answers ``answer``
    (and then hangs up, with ``close``)."""
    seen: list[bytes] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            try:
                seen.append(await reader.readuntil(b"\r\n\r\n"))
            except asyncio.IncompleteReadError:
                break
            writer.write(answer)
            await writer.drain()
            if close:
                break
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    connection = Connection(f"http://127.0.0.1:{port}/base/", {"X-Test": "1"}, timeout=timeout)
    out: list[tuple[int, bytes] | str] = []
    try:
        for _ in range(requests):
            try:
                out.append(await asyncio.wait_for(connection.request("GET", "/p?q=1"), 30))
            except WireError as exc:
                out.append(str(exc))
    finally:
        await connection.close()
        server.close()
        await server.wait_closed()
    assert all(head.startswith(b"GET /base/p?q=1 HTTP/1.1\r\n") for head in seen)
    assert all(b"X-Test: 1\r\n" in head for head in seen)
    return out


async def test_content_length_and_chunked_bodies_are_read_over_one_connection() -> None:
    plain = b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhello"
    assert await _exchange(plain, requests=2) == [(200, b"hello"), (200, b"hello")]
    chunked = (
        b"HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"3\r\nabc\r\n2;x=y\r\nde\r\n0\r\n\r\n"
    )
    assert await _exchange(chunked, requests=2) == [(201, b"abcde"), (201, b"abcde")]


async def test_a_connection_the_server_closes_is_opened_again() -> None:
    closing = b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
    assert await _exchange(closing, requests=2, close=True) == [(404, b""), (404, b"")]


@pytest.mark.parametrize(
    ("answer", "close", "says"),
    [
        (b"SMTP ready\r\n\r\n", False, "not an HTTP/1.x status line"),
        (b"HTTP/1.1 200 OK\r\ncontent-length: 99999999999\r\n\r\n", False, "a response body"),
        (b"HTTP/1.1 200 OK\r\ncontent-length: ten\r\n\r\n", False, "ValueError"),
        (b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nshort", True, "IncompleteReadError"),
        (b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nshort", False, "TimeoutError"),
    ],
)
async def test_an_answer_it_cannot_read_is_a_wire_error(
    answer: bytes, close: bool, says: str
) -> None:
    # Only the unfinished answer must wait out the timeout; the others fail on what
    # they read, so a busy machine gets all the time it needs for them.
    timeout = 0.5 if says == "TimeoutError" else 30.0
    (out,) = await _exchange(answer, close=close, timeout=timeout)
    assert isinstance(out, str) and says in out


def test_only_http_urls_are_taken() -> None:
    with pytest.raises(ValueError, match="http"):
        Connection("ftp://example.test/", {})
