"""The live panel of one agent run (``memstack agent run --inspect``).

A tiny server on a local port, in its own thread: ``/`` is a page that lists the run's
working memory, and ``/events`` streams it as server-sent events (``event: entry``
for each entry as it is written, then ``event: end`` once the run is over). It reads
the run's ``AgentMemory`` through ``working.changes``, so steps writing from any
thread appear as they write.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import asdict
from typing import Final

import uvicorn
from fastapi import FastAPI
from fastapi.responses import Response, StreamingResponse

from memstack.errors import ConfigError
from memstack.transports.inspector.assets import static_file
from memstack.working.changes import changes
from memstack.working.memory import AgentMemory, MemoryEntry

__all__ = ["RunPanel", "run_panel_app"]

_SERVED: Final = frozenset({"run.html", "run.js", "inspector.css"})


def sse_event(event: str, entry: MemoryEntry | None = None) -> str:
    """One server-sent event; the entry's fields as JSON (one line: no raw newlines)."""
    data = json.dumps(asdict(entry) if entry else {})
    return f"event: {event}\ndata: {data}\n\n"


async def _stream(memory: AgentMemory, finished: asyncio.Event) -> AsyncIterator[str]:
    async for entry in changes(memory, until=finished):
        yield sse_event("entry", entry)
    yield sse_event("end")


def run_panel_app(memory: AgentMemory, finished: asyncio.Event) -> FastAPI:
    """The panel's routes over ``memory``; streams end once ``finished`` is set."""
    app = FastAPI(openapi_url=None, docs_url=None, redoc_url=None)

    @app.get("/")
    async def index() -> Response:
        return static_file("run.html", _SERVED, home="/")

    @app.get("/events")
    async def events() -> StreamingResponse:
        return StreamingResponse(
            _stream(memory, finished),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff"},
        )

    @app.get("/{name}")
    async def asset(name: str) -> Response:
        return static_file(name, _SERVED, home="/")

    return app


class RunPanel:
    """The panel of one run: ``start()`` serves it, ``finish()`` says the run is over
    (every stream ends after the entries written so far), ``stop()`` shuts it down."""

    def __init__(self, memory: AgentMemory, *, host: str = "127.0.0.1", port: int = 0) -> None:
        self._memory = memory
        self._host = host
        self._port = port
        self._finished = asyncio.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    def start(self, *, timeout: float = 10.0) -> str:
        """Serve the panel and return its URL; a port in use is a ``ConfigError``."""
        sock = self._bind()
        app = run_panel_app(self._memory, self._finished)
        app.router.lifespan_context = self._lifespan
        config = uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=2)
        self._server = server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=server.run, kwargs={"sockets": [sock]}, name="memstack-run-panel", daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise ConfigError(f"the run panel did not start on port {self._port}.")
            time.sleep(0.02)
        return f"http://{self._host}:{sock.getsockname()[1]}/"

    def finish(self) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._finished.set)

    def stop(self) -> None:
        self.finish()
        if self._server is not None and self._thread is not None:
            self._server.should_exit = True
            self._thread.join(timeout=10)

    @asynccontextmanager
    async def _lifespan(self, app: FastAPI) -> AsyncIterator[None]:
        self._loop = asyncio.get_running_loop()
        yield

    def _bind(self) -> socket.socket:
        sock = socket.socket()
        try:
            sock.bind((self._host, self._port))
        except OSError as exc:
            sock.close()
            raise ConfigError(
                f"the run panel cannot listen on {self._host}:{self._port} ({exc.strerror}); "
                "choose another --inspect-port, or 0 for a free one."
            ) from exc
        return sock
