"""AgentMemory: the one namespaced store every executor of a run reads and writes."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Literal, get_args

from memstack._json import JSON, to_json
from memstack.clock import Clock, SystemClock, now_ms
from memstack.errors import InvalidInput

__all__ = ["AgentMemory", "MemoryEntry", "MemoryKind", "Unsubscribe"]

MemoryKind = Literal["task_result", "step_result", "input", "shared"]
MEMORY_KINDS: tuple[MemoryKind, ...] = get_args(MemoryKind)

Subscriber = Callable[["MemoryEntry"], object]
Unsubscribe = Callable[[], None]

_log = logging.getLogger("memstack.working")


@dataclass(frozen=True, kw_only=True)
class MemoryEntry:
    """One value in working memory."""

    key: str
    """Globally unique key; build it with ``memory_keys``."""
    kind: MemoryKind
    value: JSON
    """The stored value: plain JSON data, copied at write time."""
    source: str | None = None
    """Who produced it (a task, step, agent or tool id)."""
    title: str | None = None
    """Human-readable label shown by ``memory_list``."""
    description: str | None = None
    created_at: int
    """Milliseconds since the epoch when the key was first written; kept on overwrite."""


class AgentMemory:
    """In-run working memory: a map from key to ``MemoryEntry``, in insertion order.

    Safe to use from several threads and asyncio tasks at once: every operation
    holds one lock, and subscribers run after the write, outside it.
    """

    def __init__(self, *, clock: Clock | None = None) -> None:
        self._clock: Clock = clock or SystemClock()
        self._entries: dict[str, MemoryEntry] = {}
        self._subscribers: list[Subscriber] = []
        self._lock = threading.RLock()

    @property
    def clock(self) -> Clock:
        return self._clock

    # -- writing -----------------------------------------------------------------

    def set(
        self,
        *,
        key: str,
        kind: MemoryKind,
        value: object,
        source: str | None = None,
        title: str | None = None,
        description: str | None = None,
    ) -> MemoryEntry:
        """Store ``value`` under ``key`` and return the stored entry.

        Overwriting a key replaces everything but ``created_at``. ``value`` must be
        JSON-serializable; otherwise ``InvalidInput`` is raised and nothing changes.
        """
        _check_key(key)
        if kind not in MEMORY_KINDS:
            raise InvalidInput(
                f"kind must be one of {', '.join(MEMORY_KINDS)}; got {kind!r}.", field="kind"
            )
        for name, text in (("source", source), ("title", title), ("description", description)):
            if text is not None and not isinstance(text, str):
                raise InvalidInput(
                    f"{name} must be a string or None; got {type(text).__name__}.", field=name
                )
        stored = to_json(value)
        with self._lock:
            previous = self._entries.get(key)
            entry = MemoryEntry(
                key=key,
                kind=kind,
                value=stored,
                source=source,
                title=title,
                description=description,
                created_at=previous.created_at if previous else now_ms(self._clock),
            )
            self._entries[key] = entry
            subscribers = list(self._subscribers)
        for callback in subscribers:
            try:
                callback(entry)
            except Exception:
                _log.exception("memory subscriber %r failed on %s", callback, key)
        return entry

    def clear(
        self,
        *,
        kind: MemoryKind | Iterable[MemoryKind] | None = None,
        key_prefix: str | None = None,
    ) -> int:
        """Remove the entries matching every given filter (all of them when none) and
        return how many were removed."""
        kinds = _kinds(kind)
        with self._lock:
            doomed = [
                e.key for e in self._entries.values() if _matches(e, kinds, None, key_prefix, None)
            ]
            for key in doomed:
                del self._entries[key]
        return len(doomed)

    # -- reading -----------------------------------------------------------------

    def get(self, key: str) -> MemoryEntry | None:
        with self._lock:
            return self._entries.get(key)

    def get_value(self, key: str) -> JSON | None:
        """The value stored under ``key``, or ``None`` when absent."""
        entry = self.get(key)
        return entry.value if entry else None

    def has(self, key: str) -> bool:
        with self._lock:
            return key in self._entries

    def snapshot(self) -> list[MemoryEntry]:
        """Every entry, in insertion order."""
        with self._lock:
            return list(self._entries.values())

    def list(
        self,
        *,
        kind: MemoryKind | Iterable[MemoryKind] | None = None,
        keys: Iterable[str] | None = None,
        key_prefix: str | None = None,
        sources: Iterable[str] | None = None,
    ) -> list[MemoryEntry]:
        """Entries matching every given filter, in insertion order.

        ``kind`` is one kind or several; ``keys`` keeps only those keys;
        ``key_prefix`` keeps keys that start with it; ``sources`` keeps entries
        whose ``source`` is one of them.
        """
        kinds = _kinds(kind)
        key_set = _strings(keys, "keys")
        source_set = _strings(sources, "sources")
        with self._lock:
            return [
                e
                for e in self._entries.values()
                if _matches(e, kinds, key_set, key_prefix, source_set)
            ]

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._entries

    # -- subscriptions -----------------------------------------------------------

    def subscribe(self, callback: Callable[[MemoryEntry], object]) -> Unsubscribe:
        """Call ``callback(entry)`` after every write. Returns a function that
        unsubscribes; calling it twice is harmless. A callback that raises is
        logged and does not stop the write or the other callbacks."""
        if not callable(callback):
            raise InvalidInput("callback must be callable.", field="callback")
        with self._lock:
            self._subscribers.append(callback)

        def unsubscribe() -> None:
            with self._lock:
                if callback in self._subscribers:
                    self._subscribers.remove(callback)

        return unsubscribe


def _check_key(key: object) -> None:
    if not isinstance(key, str) or not key:
        raise InvalidInput(
            f"key must be a non-empty string such as memory_keys.task('t1'); got {key!r}.",
            field="key",
        )


def _kinds(kind: MemoryKind | Iterable[MemoryKind] | None) -> frozenset[str] | None:
    if kind is None:
        return None
    kinds = frozenset([kind]) if isinstance(kind, str) else frozenset(kind)
    unknown = sorted(k for k in kinds if k not in MEMORY_KINDS)
    if unknown:
        raise InvalidInput(
            f"unknown kind {', '.join(map(repr, unknown))}; use one of {', '.join(MEMORY_KINDS)}.",
            field="kind",
        )
    return kinds


def _strings(values: Iterable[str] | None, field: str) -> frozenset[str] | None:
    if values is None:
        return None
    if isinstance(values, str):
        raise InvalidInput(f"{field} must be a list of strings, not one string.", field=field)
    return frozenset(values)


def _matches(
    entry: MemoryEntry,
    kinds: frozenset[str] | None,
    keys: frozenset[str] | None,
    key_prefix: str | None,
    sources: frozenset[str] | None,
) -> bool:
    return (
        (kinds is None or entry.kind in kinds)
        and (keys is None or entry.key in keys)
        and (key_prefix is None or entry.key.startswith(key_prefix))
        and (sources is None or entry.source in sources)
    )
