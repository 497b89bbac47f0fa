"""OpenAIEmbedder: any OpenAI-compatible ``POST {base_url}/embeddings`` endpoint.

OpenAI itself, Azure-style gateways, vLLM, LiteLLM, llama.cpp's server, and others.
Up to ``batch_size`` (default 2048, OpenAI's limit) texts go in one request.
"""

from __future__ import annotations

from typing import Final

import httpx

from memstack._json import JSON
from memstack.embeddings._http import DEFAULT_TIMEOUT, RemoteEmbedder, parse_vectors
from memstack.embeddings.base import Vectors
from memstack.errors import StoreUnavailable

__all__ = ["DEFAULT_OPENAI_BASE_URL", "DEFAULT_OPENAI_MODEL", "OpenAIEmbedder"]

DEFAULT_OPENAI_BASE_URL: Final = "https://api.openai.com/v1"
DEFAULT_OPENAI_MODEL: Final = "text-embedding-3-small"
MAX_INPUTS_PER_REQUEST: Final = 2048

# Native widths of OpenAI's models, so ``dim`` needs no request when they are used.
_KNOWN_DIMS: Final = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}


class OpenAIEmbedder(RemoteEmbedder):
    """Embeddings from an OpenAI-compatible API; ``model_id`` is ``"openai:<model>"``.

    ``dimensions`` is sent to the API (text-embedding-3 models shorten their vectors
    to it) and is then ``dim``. Without it, ``dim`` is the model's native width when
    the model is one of OpenAI's, else learnt from the first reply. ``api_key`` may be
    ``None`` for a self-hosted server that needs none. ``client`` is used as given
    (and not closed); without one, the embedder opens its own and ``close()`` closes it.
    """

    service = "OpenAI embeddings"

    def __init__(
        self,
        *,
        api_key: str | None,
        model: str = DEFAULT_OPENAI_MODEL,
        base_url: str = DEFAULT_OPENAI_BASE_URL,
        dimensions: int | None = None,
        batch_size: int = MAX_INPUTS_PER_REQUEST,
        client: httpx.Client | None = None,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        super().__init__(
            model=model,
            dim=dimensions if dimensions is not None else _KNOWN_DIMS.get(model),
            batch_size=batch_size,
            client=client,
            timeout=timeout,
        )
        self.dimensions = dimensions
        self.base_url = base_url.rstrip("/")
        self._api_key = api_key

    @property
    def model_id(self) -> str:
        return f"openai:{self.model}"

    def _request(self, texts: list[str]) -> Vectors:
        body: dict[str, JSON] = {
            "model": self.model,
            "input": list[JSON](texts),
            "encoding_format": "float",
        }
        if self.dimensions is not None:
            body["dimensions"] = self.dimensions
        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        reply = self._post(f"{self.base_url}/embeddings", body, headers)
        return parse_vectors(self._rows_in_order(reply, len(texts)), service=self.service)

    def _rows_in_order(self, reply: object, count: int) -> list[object]:
        """The ``data[].embedding`` lists sorted by ``index``: replies may come out of order."""
        data = reply.get("data") if isinstance(reply, dict) else None
        if not isinstance(data, list) or not all(
            isinstance(item, dict) and isinstance(item.get("index"), int) for item in data
        ):
            raise StoreUnavailable(
                f"{self.service} at {self.base_url} replied without a data list of indexed "
                "embeddings; check that base_url points at an OpenAI-compatible API."
            )
        ordered = sorted(data, key=lambda item: int(item["index"]))
        if [item["index"] for item in ordered] != list(range(count)):
            raise StoreUnavailable(
                f"{self.service} returned indexes {[item['index'] for item in ordered]} "
                f"for {count} texts; the server is misbehaving, check its logs."
            )
        return [item.get("embedding") for item in ordered]

    def _fix_auth(self) -> str:
        return "set OPENAI_API_KEY (or pass api_key) to a valid key for this base_url."

    def _fix_model(self) -> str:
        return "Set MEMSTACK_MEMORY_EMBEDDING_MODEL to a model the API serves."
