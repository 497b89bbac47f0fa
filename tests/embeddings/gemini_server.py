"""A fake Gemini API on a real local HTTP server.

It answers ``POST /v1beta/models/{model}:batchEmbedContents`` the way Google's API does:
the same request checks (the key in ``x-goog-api-key``, at most 100 requests a batch,
each request naming the batch's model), the same reply (``{"embeddings": [{"values"}]}``)
and the same error bodies (``{"error": {"code", "message", "status", "details"}}``): a
wrong key is a 400 with reason ``API_KEY_INVALID``, a missing one a 403, an unknown
model a 404, a used-up quota a 429 with a ``RetryInfo`` delay. ``fail_next`` queues
replies to give before the next real answers.
"""

from __future__ import annotations

import json
import re
import threading
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

KEY = "AIzaSy-fake-test-key-0123456789"
NATIVE_DIMS = {"gemini-embedding-001": 3072, "text-embedding-004": 768, "gemini-embedding-2": 12}
_PATH = re.compile(r"^/v1beta/models/(?P<model>[^/:]+):batchEmbedContents$")

Reply = tuple[int, dict[str, Any]]


@dataclass(frozen=True)
class Seen:
    path: str
    headers: dict[str, str]
    body: Any


def google_error(code: int, status: str, message: str, *details: dict[str, Any]) -> Reply:
    error: dict[str, Any] = {"code": code, "message": message, "status": status}
    if details:
        error["details"] = list(details)
    return code, {"error": error}


def invalid_key() -> Reply:
    message = "API key not valid. Please pass a valid API key."
    return google_error(
        400,
        "INVALID_ARGUMENT",
        message,
        {
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "reason": "API_KEY_INVALID",
            "domain": "googleapis.com",
            "metadata": {"service": "generativelanguage.googleapis.com"},
        },
        {
            "@type": "type.googleapis.com/google.rpc.LocalizedMessage",
            "locale": "en-US",
            "message": message,
        },
    )


def no_key() -> Reply:
    return google_error(
        403,
        "PERMISSION_DENIED",
        "Method doesn't allow unregistered callers (callers without established identity). "
        "Please use API Key or other form of API consumer identity to call this API.",
    )


def leaked_key() -> Reply:
    return google_error(
        403, "PERMISSION_DENIED", "Your API key was reported as leaked. Please use another API key."
    )


def quota_exceeded(retry_delay: str | None = "7s", model: str = "gemini-embedding-001") -> Reply:
    metric = "generativelanguage.googleapis.com/embed_content_free_tier_requests"
    details: list[dict[str, Any]] = [
        {
            "@type": "type.googleapis.com/google.rpc.QuotaFailure",
            "violations": [
                {
                    "quotaMetric": metric,
                    "quotaId": "EmbedContentRequestsPerMinutePerUserPerProjectPerModel-FreeTier",
                    "quotaDimensions": {"location": "global", "model": model},
                    "quotaValue": "100",
                }
            ],
        },
        {
            "@type": "type.googleapis.com/google.rpc.Help",
            "links": [
                {
                    "description": "Learn more about Gemini API quotas",
                    "url": "https://ai.google.dev/gemini-api/docs/rate-limits",
                }
            ],
        },
    ]
    if retry_delay is not None:
        details.append(
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": retry_delay}
        )
    message = (
        "You exceeded your current quota, please check your plan and billing details. For "
        "more information on this error, head to: https://ai.google.dev/gemini-api/docs/"
        f"rate-limits.\n* Quota exceeded for metric: {metric}, limit: 100, model: {model}\n"
        f"Please retry in {retry_delay or '7s'}."
    )
    return google_error(429, "RESOURCE_EXHAUSTED", message, *details)


def unknown_model(model: str) -> Reply:
    return google_error(
        404,
        "NOT_FOUND",
        f"models/{model} is not found for API version v1beta, or is not supported for "
        "embedContent. Call ListModels to see the list of available models and their "
        "supported methods.",
    )


def bad_request(message: str) -> Reply:
    return google_error(400, "INVALID_ARGUMENT", message)


def vector(text: str, dim: int) -> list[float]:
    """A deterministic, not normalized vector: its first entry encodes the text's length."""
    return [float(len(text)), *(1.0 + (i % 5) for i in range(dim - 1))]


class FakeGemini:
    def __init__(self, *, key: str = KEY) -> None:
        self.key = key
        self.requests: list[Seen] = []
        self._queued: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/v1beta"

    def fail_next(self, *replies: Reply) -> None:
        with self._lock:
            self._queued.extend(replies)

    def answer(self, seen: Seen) -> Reply:
        with self._lock:
            self.requests.append(seen)
            if self._queued:
                return self._queued.popleft()
        found = _PATH.match(seen.path)
        if found is None:
            return 404, {"error": {"code": 404, "message": "Not Found", "status": "NOT_FOUND"}}
        key = seen.headers.get("x-goog-api-key")
        if not key:
            return no_key()
        if key != self.key:
            return invalid_key()
        model = found["model"]
        if model not in NATIVE_DIMS:
            return unknown_model(model)
        return self._embed(model, seen.body)

    def _embed(self, model: str, body: Any) -> Reply:
        requests = body.get("requests") if isinstance(body, dict) else None
        if not isinstance(requests, list) or not requests:
            return bad_request("* BatchEmbedContentsRequest.requests: must not be empty.")
        if len(requests) > 100:
            return bad_request(
                "* BatchEmbedContentsRequest.requests: at most 100 requests can be in one batch"
            )
        embeddings = []
        for i, request in enumerate(requests):
            if request.get("model") != f"models/{model}":
                return bad_request(
                    f"* BatchEmbedContentsRequest.requests[{i}].model: the model of each "
                    "request must match the model of the batch"
                )
            parts = request.get("content", {}).get("parts", [])
            text = "".join(part.get("text", "") for part in parts)
            dim = request.get("outputDimensionality") or NATIVE_DIMS[model]
            embeddings.append({"values": vector(text, dim)})
        return 200, {"embeddings": embeddings}

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("content-length", 0)))
                headers = {k.lower(): v for k, v in self.headers.items()}
                status, payload = fake.answer(Seen(self.path, headers, json.loads(raw or b"{}")))
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json; charset=UTF-8")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                """Quiet: the tests read ``requests`` instead."""

        return Handler

    @contextmanager
    def running(self) -> Iterator[FakeGemini]:
        thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        thread.start()
        try:
            yield self
        finally:
            self._server.shutdown()
            self._server.server_close()
            thread.join()
