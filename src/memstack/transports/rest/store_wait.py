"""``StoreWaitBudget``: every request gets one budget for waiting on store connections.

While PostgreSQL is down, a request that makes several store calls (its key's lookup,
a read, a write) would wait for each in turn; under this middleware they share
``REQUEST_TIMEOUT_S`` in all (``memstack.storage.wait_budget``), so the 503 comes within
it whatever the route.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from memstack.storage.postgres import REQUEST_TIMEOUT_S
from memstack.storage.wait_budget import budget_for_waits

__all__ = ["StoreWaitBudget"]


class StoreWaitBudget:
    """Runs each HTTP request of ``app`` within one wait budget of ``seconds``."""

    def __init__(self, app: ASGIApp, *, seconds: float = REQUEST_TIMEOUT_S) -> None:
        self.app = app
        self.seconds = seconds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        with budget_for_waits(self.seconds):
            await self.app(scope, receive, send)
