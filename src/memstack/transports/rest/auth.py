"""Bearer authentication: every request resolves to one tenant's Principal, or 401."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from fastapi import Depends, HTTPException
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from memstack.service.api_keys import ApiKeys
from memstack.service.principal import Principal

__all__ = ["bearer_principal"]

_bearer = HTTPBearer(auto_error=False, description="An API key from `memstack keys create`.")


def bearer_principal(keys: ApiKeys) -> Callable[..., Awaitable[Principal]]:
    """A FastAPI dependency resolving the request's Bearer key to its Principal."""

    async def principal(
        credentials: HTTPAuthorizationCredentials | None = Depends(_bearer),  # noqa: B008
    ) -> Principal:
        if credentials is None or credentials.scheme.lower() != "bearer":
            raise HTTPException(
                401, "missing Bearer token: send the header `Authorization: Bearer <api key>`."
            )
        found = await keys.principal(credentials.credentials)
        if found is None:
            raise HTTPException(401, "invalid or revoked API key.")
        return found

    return principal
