"""What the OpenAI and Anthropic providers share: tool-argument parsing and error text."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Final, NoReturn

from memstack._json import JSONObject
from memstack.errors import ConfigError, ProviderError
from memstack.providers.base import INVALID_JSON_KEY

__all__ = [
    "DEFAULT_MAX_RETRIES",
    "INVALID_JSON_KEY",
    "Endpoint",
    "broken_stream",
    "connection_error",
    "error_detail",
    "missing_sdk",
    "parse_arguments",
    "status_error",
    "translate_error",
]

DEFAULT_MAX_RETRIES: Final = 2
_MAX_DETAIL: Final = 300


def parse_arguments(raw: str) -> JSONObject:
    """A tool call's arguments from the JSON text the model streamed.

    Empty text is no arguments (``{}``); text that is not a JSON object comes back as
    ``{INVALID_JSON_KEY: raw}`` so the model can be asked to retry.
    """
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw, parse_constant=_refuse_constant)
    except ValueError:
        return {INVALID_JSON_KEY: raw}
    return value if isinstance(value, dict) else {INVALID_JSON_KEY: raw}


def _refuse_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not JSON")


def missing_sdk(cls_name: str, extra: str) -> ConfigError:
    return ConfigError(
        f'{cls_name} needs the {extra} package; install it with: pip install "memstack[{extra}]"'
    )


@dataclass(frozen=True, kw_only=True)
class Endpoint:
    """Who a provider talks to, for error messages."""

    provider: str
    base_url: str
    key_hint: str
    """What to check when the key is refused, e.g. ``OPENAI_API_KEY (or the api_key ...)``."""


def error_detail(body: object, fallback: str) -> str:
    """The server's own message from an error body (``{"error": {"message": ...}}``,
    ``{"message": ...}`` or plain text, clipped), else ``fallback``."""
    found = body
    if isinstance(body, dict):
        inner = body.get("error")
        found = inner.get("message") if isinstance(inner, dict) else body.get("message")
    if isinstance(found, str) and found.strip():
        text = " ".join(found.split())
        return text if len(text) <= _MAX_DETAIL else f"{text[: _MAX_DETAIL - 3]}..."
    return fallback


def status_error(where: Endpoint, *, status: int, detail: str, model: str) -> ProviderError:
    """A ProviderError for an HTTP error status, saying what to check or do next."""
    name, why = where.provider, f"(HTTP {status}: {detail})"
    if status == 401:
        text = f"{name} rejected the API key {why}; check {where.key_hint}."
    elif status == 403:
        text = f"{name} refused access {why}; check that the key may use model {model!r}."
    elif status == 404:
        text = (
            f"{name} found no such model or endpoint {why}; check the model name {model!r} "
            f"and the base URL {where.base_url}."
        )
    elif status == 429:
        text = f"{name} rate-limited the call {why}; wait and retry, or lower the request rate."
    elif status >= 500:
        text = f"{name} failed with a server error {why}; retry later."
    else:
        text = f"{name} refused the request {why}; check the model {model!r} and the messages."
    return ProviderError(text, provider=name, status=status)


def connection_error(where: Endpoint, *, timed_out: bool) -> ProviderError:
    """A ProviderError for a request that got no HTTP answer."""
    if timed_out:
        text = f"{where.provider} at {where.base_url} timed out; retry, or check the server."
    else:
        text = (
            f"cannot reach {where.provider} at {where.base_url}; check the base URL, "
            "the network, and that the server is running."
        )
    return ProviderError(text, provider=where.provider)


def translate_error(sdk: Any, exc: Any, where: Endpoint, model: str) -> ProviderError:
    """A ProviderError for an ``APIError`` of the ``openai`` or ``anthropic`` SDK (``sdk``
    is the module: both SDKs name their error classes alike)."""
    if isinstance(exc, sdk.APIStatusError) and exc.status_code >= 400:
        detail = error_detail(exc.body, exc.message)
        return status_error(where, status=exc.status_code, detail=detail, model=model)
    if isinstance(exc, sdk.APIConnectionError):
        return connection_error(where, timed_out=isinstance(exc, sdk.APITimeoutError))
    return broken_stream(where, error_detail(exc.body, exc.message))


def broken_stream(where: Endpoint, detail: str) -> ProviderError:
    """A ProviderError for an error reported inside an answer that had begun."""
    return ProviderError(
        f"{where.provider} broke off the reply ({detail}); retry the call.",
        provider=where.provider,
    )
