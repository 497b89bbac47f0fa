"""MemstackSession: the OpenAI Agents SDK's ``Session`` on a memstack ``RecordStore``.

A session's items (Responses API input items: messages, function calls and their
outputs) are records of the namespace ``oas/<session id>``, one per item, in the order
they were added. With a SQLite or PostgreSQL URL the history outlives the process and is
shared by every process that opens the same session id.
"""

from __future__ import annotations

import asyncio
import builtins
import uuid
from typing import Any, cast

from agents.items import TResponseInputItem
from agents.memory import SessionSettings
from agents.memory.session_settings import resolve_session_limit

from memstack._json import JSON, to_json
from memstack.errors import InvalidInput
from memstack.redaction import redact_secrets
from memstack.secrets import refuse_secrets
from memstack.storage import Namespace, Record, RecordStore, open_record_store
from memstack.storage._validate import MAX_LIMIT

__all__ = ["MemstackSession"]

_ITEM = "item"
_STEP_S = 1e-6
"""Between two items' ``created_at``: a microsecond, distinct in a float of epoch
seconds (whose resolution at today's epoch is finer than that) and in every backend's
column."""


class MemstackSession:
    """Conversation history for one session id, kept by memstack.

    Implements the SDK's ``Session`` protocol (``get_items``, ``add_items``,
    ``pop_item``, ``clear_session``): pass it as ``Runner.run(..., session=...)``.

    A credential in an item (a key the user pasted, a token a tool returned) is stored
    as ``[REDACTED:<kind>]`` in its place rather than refused, so a run never breaks on
    it; a ``session_id`` shaped like one is refused (``InvalidInput``).
    """

    session_settings: SessionSettings | None

    def __init__(
        self,
        session_id: str,
        records: RecordStore,
        *,
        session_settings: SessionSettings | None = None,
    ) -> None:
        refuse_secrets({"session_id": session_id}, where="an agent session")
        self.session_id = session_id
        self.session_settings = session_settings or SessionSettings()
        self.records = records
        self.namespace = Namespace("oas", session_id)
        self._lock = asyncio.Lock()
        self._owned = False

    @classmethod
    def from_url(cls, session_id: str, url: str, **options: Any) -> MemstackSession:
        """A session on ``open_record_store(url)``, e.g. ``sqlite:///sessions.db``;
        ``close()`` closes the store it opened."""
        records = open_record_store(url)
        records.setup()
        session = cls(session_id, records, **options)
        session._owned = True
        return session

    def close(self) -> None:
        if self._owned:
            self.records.close()

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """The history, oldest first; with ``limit``, its latest ``limit`` items."""
        wanted = resolve_session_limit(limit, self.session_settings)
        rows = await asyncio.to_thread(self._latest, wanted)
        return [_item(r) for r in rows]

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        checked = await asyncio.to_thread(_all_checked, items)  # the filter, off the loop
        if checked:
            async with self._lock:
                await asyncio.to_thread(self._append, checked)

    async def pop_item(self) -> TResponseInputItem | None:
        """Remove and return the latest item; None when the session is empty."""
        async with self._lock:
            rows = await asyncio.to_thread(self._latest, 1)
            if not rows:
                return None
            await asyncio.to_thread(self.records.delete, self.namespace, [rows[0].id])
        return _item(rows[0])

    async def clear_session(self) -> None:
        async with self._lock:
            await asyncio.to_thread(self.records.delete_namespace, self.namespace)

    # -- storage ----------------------------------------------------------------------

    def _latest(self, limit: int | None) -> builtins.list[Record]:
        """The last ``limit`` records (all when None), oldest first."""
        if limit is not None and limit <= 0:
            return []
        if limit is not None and limit <= MAX_LIMIT:
            rows = self.records.list(self.namespace, limit=limit, order="created_desc")
            return rows[::-1]
        rows = []
        while True:
            page = self.records.list(
                self.namespace, limit=MAX_LIMIT, offset=len(rows), order="created_asc"
            )
            rows += page
            if len(page) < MAX_LIMIT:
                return rows if limit is None else rows[-limit:]

    def _append(self, items: builtins.list[dict[str, JSON]]) -> None:
        """Records numbered after the latest one, each created ``_STEP_S`` after the one
        before (never before the latest, whatever the clock says), so the store's
        ``created_at`` order alone is the order items were added in: no two items tie,
        and the latest ``limit`` are a ``created_desc`` page."""
        last = self._latest(1)
        now = self.records.clock.now()
        start, at = (
            (0, now) if not last else (_seq(last[0]) + 1, max(now, last[0].created_at + _STEP_S))
        )
        tag = uuid.uuid4().hex[:8]  # two processes appending at once never overwrite
        self.records.upsert(
            [
                Record(
                    id=f"{start + i:012d}-{tag}",
                    namespace=self.namespace.encode(),
                    text=_text(item),
                    kind=str(item.get("type", "message")),
                    metadata={_ITEM: item},
                    created_at=at + i * _STEP_S,
                    updated_at=at + i * _STEP_S,
                )
                for i, item in enumerate(items)
            ]
        )


def _seq(record: Record) -> int:
    return int(record.id.split("-", 1)[0])


def _item(record: Record) -> TResponseInputItem:
    return cast(TResponseInputItem, record.metadata[_ITEM])


def _all_checked(items: builtins.list[TResponseInputItem]) -> builtins.list[dict[str, JSON]]:
    return [_checked(item, i) for i, item in enumerate(items)]


def _checked(item: object, index: int) -> dict[str, JSON]:
    """The item as JSON, each credential in it redacted."""
    value = to_json(item, field=f"items[{index}]")
    if not isinstance(value, dict):
        raise InvalidInput(
            f"items[{index}] must be a Responses API input item (a dict); "
            f"got {type(item).__name__}.",
            field=f"items[{index}]",
        )
    redacted = redact_secrets(value)
    assert isinstance(redacted, dict)
    return redacted


def _text(item: dict[str, JSON]) -> str:
    """The words of an item, for keyword search over a history."""
    content = item.get("content", item.get("output", item.get("arguments", "")))
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text") for p in content if isinstance(p, dict)]
        return "\n".join(p for p in parts if isinstance(p, str))
    return ""
