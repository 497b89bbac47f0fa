"""Request-body limits by route: a knowledge document may be up to ``KNOWLEDGE_BODY_BYTES``,
every other body stays within the server's ``max_body_bytes``.

``RouteBodyLimits`` picks, per request, the ``BodyLimit`` of its method and path, so an
over-limit body gets the same 413 (naming the limit) on every route, before any route
reads it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from starlette.types import ASGIApp, Receive, Scope, Send

from memstack.transports.errors import BodyLimit

__all__ = ["KNOWLEDGE_BODY_BYTES", "LARGER_BODIES", "RouteBodyLimits"]

KNOWLEDGE_BODY_BYTES: Final = 12 * 1024 * 1024
"""The body of ``POST /api/knowledge``: a document of up to 10 MiB of text
(``MAX_DOCUMENT_CHARS``) with its JSON around it and its escapes (each newline is two
bytes in JSON); a body of 10 MiB refused a 10 MiB document."""
LARGER_BODIES: Final[Mapping[tuple[str, str], int]] = {
    ("POST", "/api/knowledge"): KNOWLEDGE_BODY_BYTES,
    # memories restored with all their versions: up to 21 versions of 32k characters
    ("POST", "/api/memories/restore"): KNOWLEDGE_BODY_BYTES,
    # a batch of up to 100 memories of up to 32k characters each
    ("POST", "/api/memories:batch"): KNOWLEDGE_BODY_BYTES,
    # a user's turns, facts and versions written back from an export
    ("POST", "/api/users/{user_id}/import"): KNOWLEDGE_BODY_BYTES,
}
"""The routes whose bodies may be larger than the server's limit, by (method, path); a
``{name}`` segment of a path stands for any one segment."""


class RouteBodyLimits:
    """``BodyLimit`` with ``max_bytes`` for every route but those of ``routes``, which get
    their own limit (never less than ``max_bytes``); ``detail_paths``: see ``BodyLimit``."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        max_bytes: int,
        routes: Mapping[tuple[str, str], int] = LARGER_BODIES,
        detail_paths: tuple[str, ...] = (),
    ) -> None:
        self.default = BodyLimit(app, max_bytes=max_bytes, detail_paths=detail_paths)
        self.routes = [
            (method, _segments(path), BodyLimit(app, max_bytes=max(limit, max_bytes)))
            for (method, path), limit in routes.items()
        ]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        limit = self.default
        if scope["type"] == "http":
            limit = self._limit(scope["method"], scope["path"])
        await limit(scope, receive, send)

    def _limit(self, method: str, path: str) -> BodyLimit:
        parts = path.split("/")
        for route_method, template, limit in self.routes:
            if route_method == method and _matches(template, parts):
                return limit
        return self.default


def _segments(path: str) -> list[str | None]:
    """A route's path by segment, None for a ``{name}`` that stands for any one."""
    return [None if p.startswith("{") else p for p in path.split("/")]


def _matches(template: list[str | None], parts: list[str]) -> bool:
    return len(template) == len(parts) and all(
        t == p or (t is None and p) for t, p in zip(template, parts, strict=True)
    )
