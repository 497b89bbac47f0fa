"""MemoryClient and AsyncMemoryClient: the memory server's REST API from Python, over httpx.

Both classes share one set of request builders; ``MemoryClient`` returns the decoded
JSON, ``AsyncMemoryClient`` returns an awaitable of it. Server errors become memstack
errors: 404 ``NotFound``, 400/413/422 ``InvalidInput`` (with the server's ``field``),
401/403 ``ConfigError`` (a missing, wrong or limited key), 5xx and network failures
``StoreUnavailable``.

    client = MemoryClient("http://127.0.0.1:8765", api_key="msk_...")
    client.store("agent-1", "coding-style", "Type hints everywhere.")
    client.search("coding style", agent_id="agent-1")
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass, field
from typing import Any

import httpx

from memstack.errors import ConfigError, InvalidInput, NotFound, StoreUnavailable

__all__ = ["AsyncMemoryClient", "MemoryClient"]

_UNSET: Any = object()


@dataclass(frozen=True, kw_only=True)
class _Call:
    method: str
    path: str
    body: dict[str, Any] | None = None
    params: dict[str, Any] = field(default_factory=dict)

    def query(self) -> dict[str, Any]:
        return {k: v for k, v in self.params.items() if v is not None}


class _Api:
    """The API's calls; subclasses decide how a call is sent."""

    def _send(self, call: _Call) -> Any:
        raise NotImplementedError

    # -- memories --------------------------------------------------------------------

    def store(
        self,
        agent_id: str,
        key: str,
        value: str,
        *,
        scope: str = "agent",
        session_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        ttl: str | float | None = None,
    ) -> Any:
        """Store (or update) a memory; returns it."""
        body: dict[str, Any] = {"agent_id": agent_id, "key": key, "value": value, "scope": scope}
        for name, item in (("session_id", session_id), ("metadata", metadata), ("ttl", ttl)):
            if item is not None:
                body[name] = item
        return self._send(_Call(method="POST", path="/api/memories", body=body))

    def get(self, memory_id: str) -> Any:
        return self._send(_Call(method="GET", path=f"/api/memories/{_segment(memory_id)}"))

    def update(
        self,
        memory_id: str,
        *,
        value: str | None = None,
        metadata: dict[str, Any] | None = None,
        ttl: Any = _UNSET,
    ) -> Any:
        """Change a memory; ``ttl=None`` removes its TTL, leaving ``ttl`` out keeps it."""
        body: dict[str, Any] = {}
        if value is not None:
            body["value"] = value
        if metadata is not None:
            body["metadata"] = metadata
        if ttl is not _UNSET:
            body["ttl"] = ttl
        return self._send(
            _Call(method="PUT", path=f"/api/memories/{_segment(memory_id)}", body=body)
        )

    def delete(self, memory_id: str) -> Any:
        return self._send(_Call(method="DELETE", path=f"/api/memories/{_segment(memory_id)}"))

    def list(
        self,
        *,
        agent_id: str | None = None,
        scope: str | None = None,
        session_id: str | None = None,
        key: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> Any:
        """A page: ``{"memories": [...], "total", "limit", "offset"}``."""
        params = {
            "agent_id": agent_id,
            "scope": scope,
            "session_id": session_id,
            "key": key,
            "limit": limit,
            "offset": offset,
        }
        return self._send(_Call(method="GET", path="/api/memories", params=params))

    def search(
        self,
        query: str,
        *,
        agent_id: str | None = None,
        scope: str | None = None,
        session_id: str | None = None,
        key: str | None = None,
        mode: str = "hybrid",
        limit: int = 10,
    ) -> Any:
        """``{"results": [{"memory", "score", "similarity", "keyword"}, ...]}``."""
        body = {"query": query, "mode": mode, "limit": limit}
        for name, item in (
            ("agent_id", agent_id),
            ("scope", scope),
            ("session_id", session_id),
            ("key", key),
        ):
            if item is not None:
                body[name] = item
        return self._send(_Call(method="POST", path="/api/memories/search", body=body))

    def context(
        self, agent_id: str, *, session_id: str | None = None, query: str | None = None
    ) -> Any:
        """What to inject before an agent runs: memories and the ``<memories>`` block."""
        params = {"agent_id": agent_id, "session_id": session_id, "query": query}
        return self._send(_Call(method="GET", path="/api/context", params=params))

    # -- knowledge -------------------------------------------------------------------

    def add_document(
        self,
        title: str,
        text: str,
        *,
        tags: builtins.list[str] | None = None,
        source: str | None = None,
    ) -> Any:
        body: dict[str, Any] = {"title": title, "text": text}
        if tags is not None:
            body["tags"] = tags
        if source is not None:
            body["source"] = source
        return self._send(_Call(method="POST", path="/api/knowledge", body=body))

    def list_documents(self, *, limit: int = 50, offset: int = 0) -> Any:
        params = {"limit": limit, "offset": offset}
        return self._send(_Call(method="GET", path="/api/knowledge", params=params))

    def search_knowledge(self, query: str, *, limit: int = 5) -> Any:
        body = {"query": query, "limit": limit}
        return self._send(_Call(method="POST", path="/api/knowledge/search", body=body))

    def delete_document(self, document_id: str) -> Any:
        return self._send(_Call(method="DELETE", path=f"/api/knowledge/{_segment(document_id)}"))

    def health(self) -> Any:
        return self._send(_Call(method="GET", path="/healthz"))


class MemoryClient(_Api):
    """Synchronous client; use as a context manager or call ``close()``."""

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str,
        timeout: float = 30.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self._http = httpx.Client(
            base_url=base_url, headers=_headers(api_key), timeout=timeout, transport=transport
        )

    def _send(self, call: _Call) -> Any:
        try:
            response = self._http.request(
                call.method, call.path, json=call.body, params=call.query()
            )
        except httpx.HTTPError as exc:
            raise StoreUnavailable(f"cannot reach the memory server: {exc}") from exc
        return _decode(response)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> MemoryClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncMemoryClient(_Api):
    """Asynchronous client: every method returns an awaitable. ``await client.aclose()``."""

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str,
        timeout: float = 30.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._http = httpx.AsyncClient(
            base_url=base_url, headers=_headers(api_key), timeout=timeout, transport=transport
        )

    async def _send(self, call: _Call) -> Any:
        try:
            response = await self._http.request(
                call.method, call.path, json=call.body, params=call.query()
            )
        except httpx.HTTPError as exc:
            raise StoreUnavailable(f"cannot reach the memory server: {exc}") from exc
        return _decode(response)

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncMemoryClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def _headers(api_key: str) -> dict[str, str]:
    if not isinstance(api_key, str) or not api_key:
        raise ConfigError("api_key is required: create one with `memstack keys create`.")
    return {"Authorization": f"Bearer {api_key}"}


def _segment(value: str) -> str:
    if not isinstance(value, str) or not value or "/" in value:
        raise InvalidInput(f"{value!r} is not an id.", field="id")
    return value


def _decode(response: httpx.Response) -> Any:
    try:
        payload = response.json()
    except ValueError:
        payload = None
    if response.is_success:
        return payload
    error = payload.get("error", {}) if isinstance(payload, dict) else {}
    message = str(error.get("message") or response.text or response.reason_phrase)
    field = error.get("field")
    status = response.status_code
    if status == 404:
        raise NotFound(message, field=field)
    if status in (400, 413, 422):
        raise InvalidInput(message, field=field)
    if status in (401, 403):
        raise ConfigError(f"the memory server refused the API key ({status}): {message}")
    raise StoreUnavailable(f"the memory server failed ({status}): {message}")
