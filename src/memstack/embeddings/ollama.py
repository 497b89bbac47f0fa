"""OllamaEmbedder: ``POST {base_url}/api/embed`` on an Ollama server."""

from __future__ import annotations

from typing import Final

import httpx

from memstack._json import JSON
from memstack.embeddings._http import DEFAULT_TIMEOUT, RemoteEmbedder, parse_vectors
from memstack.embeddings.base import Vectors
from memstack.errors import StoreUnavailable

__all__ = ["DEFAULT_OLLAMA_MODEL", "DEFAULT_OLLAMA_URL", "OllamaEmbedder"]

DEFAULT_OLLAMA_URL: Final = "http://localhost:11434"
DEFAULT_OLLAMA_MODEL: Final = "nomic-embed-text"


class OllamaEmbedder(RemoteEmbedder):
    """Embeddings from Ollama; ``model_id`` is ``"ollama:<model>"``.

    ``dim`` is ``dim`` when given, else learnt from the first reply. ``client`` is used
    as given (and not closed); without one, the embedder opens its own and ``close()``
    closes it.
    """

    service = "Ollama"

    def __init__(
        self,
        *,
        model: str = DEFAULT_OLLAMA_MODEL,
        base_url: str = DEFAULT_OLLAMA_URL,
        dim: int | None = None,
        batch_size: int = 256,
        client: httpx.Client | None = None,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        super().__init__(
            model=model, dim=dim, batch_size=batch_size, client=client, timeout=timeout
        )
        self.base_url = base_url.rstrip("/")

    @property
    def model_id(self) -> str:
        return f"ollama:{self.model}"

    def _request(self, texts: list[str]) -> Vectors:
        body: dict[str, JSON] = {"model": self.model, "input": list[JSON](texts)}
        reply = self._post(f"{self.base_url}/api/embed", body, {})
        rows = reply.get("embeddings") if isinstance(reply, dict) else None
        if not isinstance(rows, list):
            raise StoreUnavailable(
                f"Ollama at {self.base_url} replied without an embeddings list; check that "
                "OLLAMA_API_URL points at an Ollama server (it serves /api/embed)."
            )
        return parse_vectors(rows, service=self.service)

    def _fix_auth(self) -> str:
        return "check the proxy in front of Ollama and its credentials."

    def _fix_model(self) -> str:
        return f"Pull the model first (`ollama pull {self.model}`) or set another model."
