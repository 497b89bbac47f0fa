"""GeminiEmbedder: Gemini's embeddings over its REST API (``GEMINI_API_KEY``).

``POST {base_url}/models/{model}:batchEmbedContents`` with the key in ``x-goog-api-key``
(never in the URL, so it stays out of error messages), one ``EmbedContentRequest`` per
text, at most 100 per request: the API refuses larger batches. Its errors are Google's
``{"error": {"code", "message", "status", "details"}}``, and two of them read differently
from OpenAI's: a wrong key is a 400 (``INVALID_ARGUMENT``, reason ``API_KEY_INVALID``),
not a 401, so it is reported as a key to fix rather than texts to fix; and a used-up
quota is a 429 ``RESOURCE_EXHAUSTED`` whose ``RetryInfo`` says how long to wait, so a
short wait is waited out (``max_retries`` times, ``max_retry_wait`` seconds at most)
before the call gives up.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any, Final

import httpx

from memstack._json import JSON, JSONObject
from memstack.embeddings._http import DEFAULT_TIMEOUT, RemoteEmbedder, parse_vectors
from memstack.embeddings.base import Vectors
from memstack.errors import ConfigError, InvalidInput, StoreUnavailable

__all__ = [
    "DEFAULT_GEMINI_BASE_URL",
    "DEFAULT_GEMINI_MODEL",
    "MAX_GEMINI_BATCH",
    "GeminiEmbedder",
]

DEFAULT_GEMINI_BASE_URL: Final = "https://generativelanguage.googleapis.com/v1beta"
DEFAULT_GEMINI_MODEL: Final = "gemini-embedding-001"
MAX_GEMINI_BATCH: Final = 100
"""Requests in one ``batchEmbedContents`` call; the API answers 400 to more."""

# Native widths of Gemini's models, so ``dim`` needs no request when they are used.
_KNOWN_DIMS: Final = {
    "gemini-embedding-001": 3072,
    "text-embedding-004": 768,
    "embedding-001": 768,
}
_DURATION: Final = re.compile(r"^\s*(\d+(?:\.\d+)?)s\s*$")
_BACKOFF: Final = 1.0
"""Seconds before the first retry of a 429 that names no delay; doubled each time."""


class _QuotaExceeded(StoreUnavailable):
    """A 429: the service is reachable but the quota is used up for now."""

    def __init__(self, message: str, retry_after: float | None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class GeminiEmbedder(RemoteEmbedder):
    """Embeddings from Gemini's API; ``model_id`` is ``"gemini:<model>"``.

    ``dimensions`` is sent as ``outputDimensionality`` (gemini-embedding-001 shortens its
    vectors to it) and is then ``dim``; without it, ``dim`` is the model's native width
    when the model is known, else learnt from the first reply. ``task_type`` (e.g.
    ``SEMANTIC_SIMILARITY``) is sent as ``taskType`` when given. ``sleep`` waits before
    a retry (pass your own to observe the waits). ``client`` is used as given (and not
    closed); without one, the embedder opens its own and ``close()`` closes it.
    """

    service = "Gemini embeddings"

    def __init__(
        self,
        *,
        api_key: str,
        model: str = DEFAULT_GEMINI_MODEL,
        base_url: str = DEFAULT_GEMINI_BASE_URL,
        dimensions: int | None = None,
        task_type: str | None = None,
        batch_size: int = MAX_GEMINI_BATCH,
        max_retries: int = 2,
        max_retry_wait: float = 30.0,
        sleep: Callable[[float], None] = time.sleep,
        client: httpx.Client | None = None,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        if not isinstance(api_key, str) or not api_key.strip():
            raise ConfigError(
                "the Gemini embedder needs an API key: set GEMINI_API_KEY (or pass api_key)."
            )
        if isinstance(batch_size, int) and batch_size > MAX_GEMINI_BATCH:
            raise InvalidInput(
                f"batch_size={batch_size} is more than the {MAX_GEMINI_BATCH} texts Gemini "
                f"embeds in one request; use at most {MAX_GEMINI_BATCH}.",
                field="batch_size",
            )
        if not isinstance(max_retries, int) or max_retries < 0:
            raise InvalidInput("max_retries must be a whole number >= 0.", field="max_retries")
        name = model.removeprefix("models/") if isinstance(model, str) else model
        super().__init__(
            model=name,
            dim=dimensions if dimensions is not None else _KNOWN_DIMS.get(name),
            batch_size=batch_size,
            client=client,
            timeout=timeout,
        )
        self.dimensions = dimensions
        self.task_type = task_type
        self.base_url = base_url.rstrip("/")
        self.max_retries = max_retries
        self.max_retry_wait = max_retry_wait
        self._api_key = api_key.strip()
        self._sleep = sleep

    @property
    def model_id(self) -> str:
        return f"gemini:{self.model}"

    def _request(self, texts: list[str]) -> Vectors:
        path = f"models/{self.model}"
        body: JSONObject = {"requests": [self._embed_request(path, text) for text in texts]}
        url = f"{self.base_url}/{path}:batchEmbedContents"
        reply = self._post_waiting(url, body)
        return parse_vectors(self._rows(reply), service=self.service)

    def _embed_request(self, path: str, text: str) -> JSON:
        request: JSONObject = {"model": path, "content": {"parts": [{"text": text}]}}
        if self.task_type is not None:
            request["taskType"] = self.task_type
        if self.dimensions is not None:
            request["outputDimensionality"] = self.dimensions
        return request

    def _post_waiting(self, url: str, body: JSONObject) -> Any:
        """``_post``, waiting out a 429 that asks for a short wait."""
        for attempt in range(self.max_retries + 1):
            try:
                return self._post(url, body, {"x-goog-api-key": self._api_key})
            except _QuotaExceeded as exc:
                wait = exc.retry_after
                if wait is None:
                    wait = _BACKOFF * 2**attempt
                if attempt == self.max_retries or wait > self.max_retry_wait:
                    raise
                self._sleep(wait)
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _rows(self, reply: object) -> list[object]:
        """The ``embeddings[].values`` lists, in the order of the requests."""
        rows = reply.get("embeddings") if isinstance(reply, dict) else None
        if not isinstance(rows, list) or not all(
            isinstance(row, dict) and isinstance(row.get("values"), list) for row in rows
        ):
            raise StoreUnavailable(
                f"{self.service} at {self.base_url} replied without an embeddings list of "
                "values; check that the base URL points at Gemini's API (…/v1beta)."
            )
        return [row["values"] for row in rows]

    def _status_error(self, response: httpx.Response, url: str) -> Exception:
        error = _google_error(response)
        status, reasons = error.get("status"), _reasons(error)
        said = f"{self.service} answered {response.status_code} ({_message(error, response)})"
        if "API_KEY_INVALID" in reasons:
            return ConfigError(f"{said}; {self._fix_auth()}")
        if response.status_code == 400 and status == "FAILED_PRECONDITION":
            return ConfigError(
                f"{said}; the API cannot serve this project from here: check the key's "
                "project, its billing and the regions Gemini is offered in."
            )
        if response.status_code == 429:
            delay = _retry_delay(error)
            wait = f" Gemini asks to retry in {delay:g} s." if delay is not None else ""
            return _QuotaExceeded(
                f"{said}; the quota is used up for now.{wait} Wait and retry, send fewer "
                "texts, or raise the quota (billing) in Google AI Studio.",
                retry_after=delay,
            )
        return super()._status_error(response, url)

    def _fix_auth(self) -> str:
        return "set GEMINI_API_KEY (or pass api_key) to a valid key from Google AI Studio."

    def _fix_model(self) -> str:
        return (
            "Set MEMSTACK_MEMORY_EMBEDDING_MODEL to a Gemini embedding model, e.g. "
            f"{DEFAULT_GEMINI_MODEL}."
        )


def _google_error(response: httpx.Response) -> dict[str, Any]:
    """The ``error`` object of Google's error body (``{}`` when there is none)."""
    try:
        body = response.json()
    except ValueError:
        return {}
    if isinstance(body, list) and body:  # some Google front ends wrap it in a list
        body = body[0]
    error = body.get("error") if isinstance(body, dict) else None
    return error if isinstance(error, dict) else {}


def _message(error: dict[str, Any], response: httpx.Response) -> str:
    """Google's message on one line (a quota's says which quota), or the reply's text."""
    message = error.get("message")
    text = " ".join((message if isinstance(message, str) else response.text).split())
    return text[:300] or response.reason_phrase


def _details(error: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    details = error.get("details")
    if not isinstance(details, list):
        return []
    suffix = f"google.rpc.{kind}"
    return [d for d in details if isinstance(d, dict) and str(d.get("@type", "")).endswith(suffix)]


def _reasons(error: dict[str, Any]) -> set[str]:
    return {str(d.get("reason")) for d in _details(error, "ErrorInfo")}


def _retry_delay(error: dict[str, Any]) -> float | None:
    """Seconds from the ``RetryInfo`` detail (``"19s"``, ``"45.25s"``), if any."""
    for detail in _details(error, "RetryInfo"):
        found = _DURATION.match(str(detail.get("retryDelay", "")))
        if found:
            return float(found.group(1))
    return None
