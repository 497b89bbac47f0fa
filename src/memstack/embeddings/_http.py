"""What the HTTP embedders share: batching, the vector dimension, and error translation.

A subclass sends one batch (``_request``) and parses the reply; this base splits the
texts into batches, checks every reply against the dimension, normalizes the rows,
and owns the ``httpx.Client`` when the caller did not pass one.

HTTP failures become memstack errors here, in one place:

- cannot connect, timeout, 408, 429, 5xx, a malformed reply -> ``StoreUnavailable``
- 401 / 403 (bad or missing key), 404 (unknown model or wrong URL), other 4xx -> ``ConfigError``
- 400 / 413 / 422 (the server refused the texts)                      -> ``InvalidInput``
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any, Final, Self

import httpx
import numpy as np

from memstack._counts import check_whole
from memstack._json import JSON
from memstack.embeddings.base import Vectors, check_texts, l2_normalize
from memstack.errors import ConfigError, InvalidInput, StoreUnavailable

__all__ = ["DEFAULT_TIMEOUT", "RemoteEmbedder", "parse_vectors"]

DEFAULT_TIMEOUT: Final = 60.0
_PROBE_TEXT: Final = "dimension probe"
_MAX_DETAIL: Final = 300


class RemoteEmbedder(ABC):
    """An embedder behind an HTTP API.

    ``dim`` is the configured dimension when one is given (or known for the model);
    otherwise it is learnt from the first reply. Reading ``dim`` before any reply
    (or embedding an empty list, which must return ``(0, dim)``) sends one short probe
    text to learn it. A reply of another width raises ``StoreUnavailable``.
    """

    service: str
    """Who answers, for error messages: ``"OpenAI embeddings"``."""

    def __init__(
        self,
        *,
        model: str,
        dim: int | None,
        batch_size: int,
        client: httpx.Client | None,
        timeout: float,
    ) -> None:
        if not isinstance(model, str) or not model.strip():
            raise InvalidInput("model is empty; pass an embedding model name.", field="model")
        if dim is not None:
            check_whole(dim, "dim")
        check_whole(batch_size, "batch_size")
        self.model = model
        self.batch_size = batch_size
        self._dim = dim
        self._owns_client = client is None
        self._client = httpx.Client(timeout=timeout) if client is None else client

    @property
    def dim(self) -> int:
        if self._dim is None:
            self.embed_batch([_PROBE_TEXT])
        assert self._dim is not None
        return self._dim

    @property
    @abstractmethod
    def model_id(self) -> str: ...

    def embed_batch(self, texts: Sequence[str]) -> Vectors:
        items = check_texts(texts)
        if not items:
            return np.zeros((0, self.dim), dtype=np.float32)
        parts = []
        for start in range(0, len(items), self.batch_size):
            batch = items[start : start + self.batch_size]
            parts.append(self._checked(self._request(batch), len(batch)))
        return l2_normalize(np.concatenate(parts))

    @abstractmethod
    def _request(self, texts: list[str]) -> Vectors:
        """The raw (not yet normalized) vectors of one batch, in order."""

    def close(self) -> None:
        """Close the HTTP client if this embedder opened it."""
        if self._owns_client:
            self._client.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _checked(self, vectors: Vectors, count: int) -> Vectors:
        if vectors.shape[0] != count:
            raise StoreUnavailable(
                f"{self.service} returned {vectors.shape[0]} vectors for {count} texts; "
                "the server is misbehaving, check its version and logs."
            )
        width = int(vectors.shape[1])
        if self._dim is None:
            self._dim = width
        elif width != self._dim:
            raise StoreUnavailable(
                f"{self.service} returned {width}-dimensional vectors for model "
                f"{self.model!r}, expected {self._dim}; check that the model supports the "
                "requested dimensions and was not swapped on the server."
            )
        return vectors

    def _post(self, url: str, body: Mapping[str, JSON], headers: Mapping[str, str]) -> Any:
        """POST ``body`` as JSON; the decoded JSON reply, or a memstack error."""
        try:
            response = self._client.post(url, json=body, headers=dict(headers))
        except httpx.TimeoutException as exc:
            raise StoreUnavailable(
                f"{self.service} at {url} timed out; retry, send smaller batches "
                "(batch_size) or raise the client's timeout."
            ) from exc
        except httpx.TransportError as exc:
            raise StoreUnavailable(
                f"cannot reach {self.service} at {url} ({exc}); check the URL and that "
                "the server is up."
            ) from exc
        if response.is_error:
            raise self._status_error(response, url)
        try:
            return response.json()
        except ValueError as exc:
            raise StoreUnavailable(
                f"{self.service} at {url} answered with non-JSON text; check that the URL "
                "points at the embeddings API."
            ) from exc

    def _status_error(self, response: httpx.Response, url: str) -> Exception:
        status = response.status_code
        said = f"{self.service} answered {status} ({_detail(response)})"
        if status in (401, 403):
            return ConfigError(f"{said}; {self._fix_auth()}")
        if status == 404:
            return ConfigError(
                f"{said}; check the model name {self.model!r} and the URL {url}. "
                f"{self._fix_model()}"
            )
        if status in (400, 413, 422):
            return InvalidInput(
                f"{said}; the server refused the texts or parameters: shorten or fix the "
                "texts, or check the model's options (e.g. dimensions).",
                field="texts",
            )
        if status in (408, 429) or status >= 500:
            return StoreUnavailable(f"{said}; the service is busy or down, retry later.")
        return ConfigError(f"{said}; check the URL {url} and the embedding settings.")

    def _fix_auth(self) -> str:
        return "check the API key."

    def _fix_model(self) -> str:
        return "Use a model the server offers."


def parse_vectors(rows: object, *, service: str) -> Vectors:
    """``rows`` (a JSON list of equal-length number lists) as a float32 matrix."""
    try:
        matrix = np.asarray(rows, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise StoreUnavailable(
            f"{service} returned embeddings that are not lists of numbers; "
            "check that the URL points at the embeddings API."
        ) from exc
    if matrix.ndim != 2 or matrix.shape[1] == 0 or not np.isfinite(matrix).all():
        raise StoreUnavailable(
            f"{service} returned embeddings of shape {matrix.shape}, not one finite "
            "vector per text; check that the URL points at the embeddings API."
        )
    return matrix


def _detail(response: httpx.Response) -> str:
    """The server's own error message: OpenAI ``{"error": {"message"}}``, Ollama ``{"error"}``."""
    try:
        body = response.json()
    except ValueError:
        return response.text[:_MAX_DETAIL] or response.reason_phrase
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        error = error.get("message")
    text = error if isinstance(error, str) else response.text
    return text[:_MAX_DETAIL]
