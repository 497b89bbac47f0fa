"""The client's edge to HTTP: settings from the environment, headers, and server
errors turned into memstack errors (one place for both clients)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Final

import httpx

from memstack.errors import AuthError, ConfigError, InvalidInput, NotFound, StoreUnavailable

__all__ = ["DEFAULT_URL", "decode", "resolve_settings", "unreachable"]

DEFAULT_URL: Final = "http://127.0.0.1:8000"
"""Where ``memstack serve`` listens by default."""


def resolve_settings(
    base_url: str | None, api_key: str | None, env: Mapping[str, str] | None = None
) -> tuple[str, dict[str, str]]:
    """The server URL and the auth headers: the arguments, else ``MEMSTACK_URL`` /
    ``MEMSTACK_API_KEY``, else the local default URL (a key has no default)."""
    environ = os.environ if env is None else env
    url = base_url or environ.get("MEMSTACK_URL") or DEFAULT_URL
    key = api_key if api_key is not None else environ.get("MEMSTACK_API_KEY")
    if not isinstance(key, str) or not key:
        raise ConfigError(
            "api_key is required: pass api_key=... or set MEMSTACK_API_KEY "
            "(create one with `memstack keys create`)."
        )
    return url, {"Authorization": f"Bearer {key}"}


def unreachable(url: object, exc: httpx.HTTPError) -> StoreUnavailable:
    return StoreUnavailable(
        f"cannot reach the memory server at {url}: {exc}. Is `memstack serve` running "
        "there (MEMSTACK_URL)?"
    )


def decode(response: httpx.Response) -> object:
    """The JSON body of a success; a memstack error for anything else."""
    try:
        payload: object = response.json()
    except ValueError:
        payload = None
    if response.is_success:
        return payload
    error = payload.get("error") if isinstance(payload, dict) else None
    error = error if isinstance(error, dict) else {}
    message = str(error.get("message") or response.text or response.reason_phrase)
    field = error.get("field") if isinstance(error.get("field"), str) else None
    status = response.status_code
    if status == 404:
        raise NotFound(message, field=field)
    if status in (400, 413, 422):
        raise InvalidInput(message, field=field)
    if status in (401, 403):
        fix = "check MEMSTACK_API_KEY" if status == 401 else "use a key allowed to do this"
        raise AuthError(
            f"the memory server refused the API key ({status}): {message} ({fix}).",
            status=status,
        )
    raise StoreUnavailable(f"the memory server failed ({status}): {message}")
