"""MemstackSession: the OpenAI Agents SDK's ``Session`` on a memstack ``RecordStore``.

A session's items (Responses API input items: messages, function calls and their
outputs) are records of the namespace ``oas/<session id>``, one per item, in the order
they were added. With a SQLite or PostgreSQL URL the history outlives the process and is
shared by every process that opens the same session id.

Atomicity lives in the database: an append claims the next item number with a write that
expects it to be free, a pop deletes the latest item with a write that expects it to
still be the latest, and a write that loses a race reads again and retries. Within one
process a ``threading.Lock`` taken in the worker thread serializes them, so a session
can be shared by threads that each run their own event loop.
"""

from __future__ import annotations

import asyncio
import builtins
import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar, cast

from agents.items import TResponseInputItem
from agents.memory import SessionSettings
from agents.memory.session_settings import coerce_session_settings, resolve_session_limit

from memstack._json import JSON, to_json
from memstack.errors import InvalidInput, WriteConflict
from memstack.redaction import redact_secrets
from memstack.secrets import refuse_secrets
from memstack.storage import Expect, Namespace, Record, RecordStore, open_record_store
from memstack.storage._validate import MAX_LIMIT

__all__ = ["MemstackSession"]

_T = TypeVar("_T")
_ITEM = "item"
_ATTEMPTS = 50
"""Reads and writes before a write gives up on a session other processes keep changing."""
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

    As the SDK's sessions do: ``session_settings`` may be a dict (``{"limit": 20}``); an
    item that is not JSON raises ``TypeError`` (an ``InvalidInput`` naming the field, so
    either ``except`` catches it) and nothing is stored; after ``close()`` every call
    raises ``RuntimeError``; a cancelled write still finishes before the cancellation
    reaches the caller, so the caller knows what was stored.
    """

    session_settings: SessionSettings | None

    def __init__(
        self,
        session_id: str,
        records: RecordStore,
        *,
        session_settings: SessionSettings | dict[str, Any] | None = None,
    ) -> None:
        refuse_secrets({"session_id": session_id}, where="an agent session")
        self.session_id = session_id
        self.session_settings = (
            SessionSettings()
            if session_settings is None
            else coerce_session_settings(session_settings)
        )
        self.records = records
        self.namespace = Namespace("oas", session_id)
        self._lock = threading.Lock()  # held in worker threads only, never across an await
        self._owned = False
        self._closed = False

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
        """Refuse every later call; close the store if ``from_url`` opened it."""
        self._closed = True
        if self._owned:
            self._owned = False
            self.records.close()

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """The history, oldest first; with ``limit``, its latest ``limit`` items."""
        self._check_open()
        wanted = resolve_session_limit(limit, self.session_settings)
        rows = await asyncio.to_thread(self._latest, wanted)
        return [_item(r) for r in rows]

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        self._check_open()
        if not items:
            return
        checked = await asyncio.to_thread(_all_checked, items)  # the filter, off the loop
        await _finished(asyncio.to_thread(self._locked, self._append, checked))

    async def pop_item(self) -> TResponseInputItem | None:
        """Remove and return the latest item; None when the session is empty."""
        self._check_open()
        popped = await _finished(asyncio.to_thread(self._locked, self._pop))
        return None if popped is None else _item(popped)

    async def clear_session(self) -> None:
        self._check_open()
        await _finished(asyncio.to_thread(self._locked, self._clear))

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError(
                f"{type(self).__name__} is closed; open a new session to use its history."
            )

    # -- storage (in a worker thread) ---------------------------------------------------

    def _locked(self, operation: Callable[..., _T], *args: Any) -> _T:
        with self._lock:
            return operation(*args)

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
        and the latest ``limit`` are a ``created_desc`` page. The write expects the first
        number to be free: another writer that took it first makes this one read again."""
        for _ in range(_ATTEMPTS):
            last = self._latest(1)
            now = self.records.clock.now()
            start, at = (
                (0, now)
                if not last
                else (_seq(last[0]) + 1, max(now, last[0].created_at + _STEP_S))
            )
            records = [
                Record(
                    id=_id(start + i),
                    namespace=self.namespace.encode(),
                    text=_text(item),
                    kind=str(item.get("type", "message")),
                    metadata={_ITEM: item},
                    created_at=at + i * _STEP_S,
                    updated_at=at + i * _STEP_S,
                )
                for i, item in enumerate(items)
            ]
            if self._written(upserts=records, expect=[self._free(start)]):
                return
        raise self._contended("add_items")

    def _pop(self) -> Record | None:
        """Delete the latest record, expecting it unchanged and nothing added after it."""
        for _ in range(_ATTEMPTS):
            rows = self._latest(1)
            if not rows:
                return None
            top = rows[0]
            expect = [
                Expect(namespace=top.namespace, id=top.id, seen=top),
                self._free(_seq(top) + 1),
            ]
            if self._written(deletes={self.namespace: [top.id]}, expect=expect):
                return top
        raise self._contended("pop_item")

    def _clear(self) -> None:
        self.records.delete_namespace(self.namespace)

    def _free(self, seq: int) -> Expect:
        return Expect(namespace=self.namespace.encode(), id=_id(seq), seen=None)

    def _written(self, **write: Any) -> bool:
        """Whether the write was applied; False when a condition failed (read again)."""
        try:
            self.records.write(**write)
        except WriteConflict:
            return False
        return True

    def _contended(self, call: str) -> WriteConflict:
        return WriteConflict(
            f"{call} on session {self.session_id!r} lost {_ATTEMPTS} races in a row to "
            "other writers of the same session; nothing was changed, call it again."
        )


async def _finished(write: Awaitable[_T]) -> _T:
    """Await a write to its end even when the caller is cancelled meanwhile, then
    re-raise the cancellation: the caller knows the outcome and never retries a write
    that was stored (the SDK's sessions behave so)."""
    task = asyncio.ensure_future(write)
    cancelled: asyncio.CancelledError | None = None
    while not task.done():
        try:
            await asyncio.wait({task})
        except asyncio.CancelledError as exc:
            cancelled = cancelled or exc
    try:
        result = task.result()
    except BaseException:
        if cancelled is not None:
            raise cancelled from None  # the write's error was seen: no "never retrieved"
        raise
    if cancelled is not None:
        raise cancelled
    return result


def _id(seq: int) -> str:
    return f"{seq:012d}"


def _seq(record: Record) -> int:
    """The item number; ids written before appends claimed their number (``_free``)
    carry a ``-<tag>`` suffix, so histories stored then still read."""
    return int(record.id.split("-", 1)[0])


def _item(record: Record) -> TResponseInputItem:
    return cast(TResponseInputItem, record.metadata[_ITEM])


def _all_checked(items: builtins.list[TResponseInputItem]) -> builtins.list[dict[str, JSON]]:
    return [_checked(item, i) for i, item in enumerate(items)]


class _NotJSON(InvalidInput, TypeError):
    """An item that is not JSON: memstack's ``InvalidInput`` naming the field, and the
    ``TypeError`` the SDK's sessions raise (from ``json.dumps``), so either ``except``
    written for a session catches it."""


def _checked(item: object, index: int) -> dict[str, JSON]:
    """The item as JSON, each credential in it redacted."""
    try:
        value = to_json(item, field=f"items[{index}]")
    except InvalidInput as exc:
        raise _NotJSON(str(exc), field=exc.field) from None
    if not isinstance(value, dict):
        raise _NotJSON(
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
