"""A lean HTTP/1.1 keep-alive connection for ``memstack bench server``'s load generator.

The load generator shares the machine's cores with the server it measures, so every
millisecond of its own CPU is one the server cannot have, and a general-purpose client
such as httpx spends CPU, per request, on a pool, redirects and header models the bench
never uses (measured by ``bench server`` itself, its client CPU per request). This
writes each request as one pre-built byte string and reads the response by its
``Content-Length`` (or chunks): one connection per client, no pool, no redirects,
nothing the bench does not use.
"""

from __future__ import annotations

import asyncio
import ssl
from typing import Final
from urllib.parse import urlsplit

__all__ = ["Connection", "WireError"]

_MAX_HEAD: Final = 64 * 1024
_MAX_BODY: Final = 16 * 1024 * 1024


class WireError(Exception):
    """The connection broke or the server's answer was not HTTP/1.1 the bench can read."""


class Connection:
    """One keep-alive connection to ``url``'s server; reconnects after a failure. A
    request that takes longer than ``timeout`` seconds fails."""

    def __init__(self, url: str, headers: dict[str, str], *, timeout: float = 60.0) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"url must be http(s)://host[:port], not {url!r}")
        self._host = parts.hostname
        self._tls = parts.scheme == "https"
        self._port = parts.port or (443 if self._tls else 80)
        self._prefix = parts.path.rstrip("/")
        host = parts.netloc.rsplit("@", 1)[-1]
        lines = [f"Host: {host}", *(f"{k}: {v}" for k, v in headers.items())]
        self._headers = "".join(f"{line}\r\n" for line in lines).encode("latin-1")
        self._timeout = timeout
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None

    async def request(self, method: str, path: str, body: bytes | None = None) -> tuple[int, bytes]:
        """``(status, body)``; ``WireError`` when the exchange failed (the connection is
        dropped, the next request opens a new one)."""
        head = f"{method} {self._prefix}{path} HTTP/1.1\r\n".encode("latin-1") + self._headers
        if body is not None:
            head += b"Content-Type: application/json\r\nContent-Length: %d\r\n" % len(body)
        message = head + b"\r\n" + (body or b"")
        try:
            async with asyncio.timeout(self._timeout):
                reader, writer = await self._open()
                writer.write(message)
                status, answer, keep_alive = await _response(reader)
        except (
            OSError,  # TimeoutError too
            EOFError,
            ValueError,  # a malformed length
            asyncio.IncompleteReadError,
            asyncio.LimitOverrunError,
        ) as exc:
            await self.close()
            raise WireError(f"{method} {path}: {exc!r}") from exc
        except WireError:
            await self.close()
            raise
        if not keep_alive:
            await self.close()
        return status, answer

    async def close(self) -> None:
        writer, self._reader, self._writer = self._writer, None, None
        if writer is not None:
            writer.close()
            try:
                await writer.wait_closed()
            except OSError:
                pass

    async def _open(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        if self._reader is None or self._writer is None:
            context = ssl.create_default_context() if self._tls else None
            self._reader, self._writer = await asyncio.open_connection(
                self._host, self._port, ssl=context, limit=_MAX_HEAD
            )
        return self._reader, self._writer


async def _response(reader: asyncio.StreamReader) -> tuple[int, bytes, bool]:
    """Status, body, and whether the connection stays open."""
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
        raise WireError(f"not an HTTP/1.x status line: {lines[0][:80]!r}")
    fields = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if sep:
            fields[name.strip().lower()] = value.strip()
    if fields.get("transfer-encoding", "").lower() == "chunked":
        body = await _chunked(reader)
    else:
        length = int(fields.get("content-length", "0"))
        if not 0 <= length <= _MAX_BODY:
            raise WireError(f"a response body of {length} bytes")
        body = await reader.readexactly(length)
    return int(parts[1]), body, fields.get("connection", "").lower() != "close"


async def _chunked(reader: asyncio.StreamReader) -> bytes:
    chunks: list[bytes] = []
    total = 0
    while True:
        size = int((await reader.readuntil(b"\r\n")).split(b";", 1)[0].strip(), 16)
        total += size
        if total > _MAX_BODY:
            raise WireError(f"a chunked response body of more than {_MAX_BODY} bytes")
        if size == 0:
            await reader.readuntil(b"\r\n")  # no trailers from this server
            return b"".join(chunks)
        chunks.append(await reader.readexactly(size))
        await reader.readexactly(2)
