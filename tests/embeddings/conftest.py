"""Embedding tests talk HTTP only through httpx.MockTransport.

The root conftest already refuses non-loopback sockets; here httpx's real transport is
refused too, so an embedder built without an injected client (which could reach a
local Ollama on loopback) fails instead of reaching a real server.
"""

from collections.abc import Callable, Iterator

import httpx
import pytest

from memstack.embeddings import LocalEmbedder

Handler = Callable[[httpx.Request], httpx.Response]


@pytest.fixture(autouse=True)
def _forbid_real_http(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(self: httpx.HTTPTransport, request: httpx.Request) -> httpx.Response:
        raise RuntimeError(f"tests must use httpx.MockTransport (tried {request.url})")

    monkeypatch.setattr(httpx.HTTPTransport, "handle_request", refuse)


@pytest.fixture
def mock_client() -> Iterator[Callable[[Handler], httpx.Client]]:
    """Builds httpx clients that answer through a handler; closes them afterwards."""
    clients: list[httpx.Client] = []

    def make(handler: Handler) -> httpx.Client:
        client = httpx.Client(transport=httpx.MockTransport(handler))
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.close()


@pytest.fixture(scope="session")
def local_embedder() -> LocalEmbedder:
    """The real local model, loaded once for the session."""
    return LocalEmbedder()
