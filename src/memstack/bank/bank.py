"""MemoryBank: a string per agent name, kept between an agent's runs.

Every bank keeps its strings in a ``RecordStore``, one record per key in the bank's
namespace: ``id`` the key, ``text`` the content, ``kind`` ``BANK_RECORD_KIND``, no
embedding. ``created_at`` is kept on overwrite, so ``entries`` lists keys in the order
they were first written. Every read goes to the store, so a bank on a shared store sees
writes from other processes.
"""

from __future__ import annotations

import math
import threading
from os import PathLike
from types import TracebackType
from typing import Final

from memstack.bank import _text as text
from memstack.bank.tools import bank_tools
from memstack.clock import Clock, SystemClock
from memstack.errors import InvalidInput, StoreUnavailable
from memstack.secrets import refuse_secrets
from memstack.storage import (
    InMemoryRecordStore,
    Namespace,
    Record,
    RecordStore,
    SQLiteRecordStore,
)
from memstack.tools import Tool

__all__ = ["BANK_RECORD_KIND", "DEFAULT_NAMESPACE", "MemoryBank"]

BANK_RECORD_KIND: Final = "memory_bank"
"""The ``kind`` of the records a bank writes."""
DEFAULT_NAMESPACE = "bank"
"""The name of the bank a MemoryBank keeps unless told otherwise; its records live in
``Namespace("bank")``, another name's in ``Namespace("bank", name)``."""
_PAGE: Final = 1000


class MemoryBank:
    """Per-agent string memory: ``read``, ``write`` (overwrite), ``entries``.

    - ``MemoryBank()`` keeps everything in process memory, as the spec's bank does: in
      an ``InMemoryRecordStore`` of its own, gone when the bank is closed.
    - ``MemoryBank(path="bank.db")`` is durable: one record per key in a SQLite
      file (created when missing), so content survives a process restart.
    - ``MemoryBank(store=...)`` is durable on any set-up ``RecordStore`` (SQLite,
      PostgreSQL...); the bank does not close a store it was given.

    ``max_lines`` keeps only the last lines of each write (``None``: no limit);
    truncation happens at write time. Every method is safe to call from several
    threads at once. A rejected write raises ``InvalidInput`` and changes nothing.

    Content shaped like a credential is refused (long-term memory's secret filter, since a
    durable bank outlives the process); ``secret_filter=False`` turns that off.
    """

    def __init__(
        self,
        max_lines: int | None = None,
        *,
        path: str | PathLike[str] | None = None,
        store: RecordStore | None = None,
        namespace: str = DEFAULT_NAMESPACE,
        clock: Clock | None = None,
        secret_filter: bool = True,
    ) -> None:
        if not isinstance(secret_filter, bool):
            raise InvalidInput(
                f"secret_filter must be True or False; got {secret_filter!r}.",
                field="secret_filter",
            )
        self.max_lines = text.check_max_lines(max_lines)
        self.secret_filter = secret_filter
        self.namespace = text.check_key(namespace, "namespace")
        if secret_filter:  # the bank's name is stored too (its records' namespace)
            refuse_secrets({"namespace": self.namespace}, where="the memory bank")
        self._records_in = _storage_name(self.namespace)
        self._clock = clock or SystemClock()
        self._lock = threading.Lock()
        self._owns_store = store is None
        self._store: RecordStore | None = _open_store(path, store, self._clock)
        self.durable = path is not None or store is not None
        """Whether content outlives the process (a ``path`` or ``store`` was given)."""

    def read(self, key: str) -> str:
        """The content stored under ``key``; ``""`` when nothing was written."""
        key = text.check_key(key, "key")
        with self._lock:
            found = self._opened().get(self._records_in, [key])
        return found[0].text if found else ""

    def write(self, key: str, content: str) -> None:
        """Replace the content under ``key`` (keeping its last ``max_lines`` lines).

        Content over ``MAX_CONTENT_BYTES`` after truncation is refused, and so is content
        holding a credential unless the bank was made with ``secret_filter=False``.
        """
        key = text.check_key(key, "key")
        stored = text.check_size(
            text.keep_last_lines(text.check_text(content, "content"), self.max_lines)
        )
        if self.secret_filter:
            refuse_secrets({"key": key, "content": stored}, where="the memory bank")
        with self._lock:
            self._put(self._opened(), key, stored)

    def search(self, key: str, query: str) -> str:
        """The lines under ``key`` containing ``query`` (ignoring case), joined by
        ``\\n``; ``""`` when none match."""
        query = text.check_text(query, "query")
        return text.matching_lines(self.read(key), query)

    def entries(self) -> dict[str, str]:
        """A snapshot of every key and its content, in the order keys were first written."""
        with self._lock:
            store = self._opened()
            out: dict[str, str] = {}
            after: tuple[float, str] | None = None
            while True:
                page = store.list(self._records_in, limit=_PAGE, order="created_asc", after=after)
                out.update((record.id, record.text) for record in page)
                if len(page) < _PAGE:
                    return out
                after = (page[-1].created_at, page[-1].id)

    def tools(self, agent_name: str) -> list[Tool]:
        """New ``memory_read``, ``memory_write`` and ``memory_search`` tools that read and
        write under ``agent_name`` only."""
        if self.secret_filter:  # refused here, not at the model's first write
            refuse_secrets({"agent_name": agent_name}, where="the memory bank")
        return bank_tools(self, agent_name)

    def close(self) -> None:
        """Release the store the bank opened (an in-memory bank's content goes with it);
        later calls raise ``StoreUnavailable``. Calling it again does nothing."""
        with self._lock:
            store, self._store = self._store, None
            if store is not None and self._owns_store:
                store.close()

    def __enter__(self) -> MemoryBank:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        where = "durable" if self.durable else "in-memory"
        unfiltered = "" if self.secret_filter else ", secret_filter=False"
        return f"MemoryBank(max_lines={self.max_lines!r}{unfiltered}, {where})"

    def _opened(self) -> RecordStore:
        if self._store is None:
            raise StoreUnavailable("this MemoryBank is closed; open a new one.")
        return self._store

    def _put(self, store: RecordStore, key: str, content: str) -> None:
        """Write ``key``'s record, keeping ``created_at`` when it exists."""
        now = self._clock.now()
        found = store.get(self._records_in, [key])
        if found:
            created_at, updated_at = found[0].created_at, now
        else:
            created_at = updated_at = self._first_written_at(store, now)
        record = Record(
            id=key,
            namespace=self._records_in,
            text=content,
            kind=BANK_RECORD_KIND,
            created_at=created_at,
            updated_at=updated_at,
        )
        store.upsert([record])

    def _first_written_at(self, store: RecordStore, now: float) -> float:
        """``created_at`` for a new key: ``now``, or just after the newest key's when the
        clock has not passed it (a coarse, stopped or manual clock), since the store
        orders equal times by id and ``entries`` must keep first-written order."""
        newest = store.list(self._records_in, limit=1, order="created_desc")
        if newest and newest[0].created_at >= now:
            return math.nextafter(newest[0].created_at, math.inf)
        return now


def _open_store(
    path: str | PathLike[str] | None, store: RecordStore | None, clock: Clock
) -> RecordStore:
    """The given ``store``, a SQLite store on ``path`` or, with neither, an in-memory one."""
    if path is not None and store is not None:
        raise InvalidInput(
            "pass either path (a SQLite file the bank opens) or store (an open RecordStore), "
            "not both.",
            field="store",
        )
    if store is not None:
        if not isinstance(store, RecordStore):
            raise InvalidInput(
                f"store must be a RecordStore; got {type(store).__name__}.", field="store"
            )
        return store
    if path is None:
        return InMemoryRecordStore(clock=clock)
    if not isinstance(path, str | PathLike) or not str(path).strip():
        raise InvalidInput(f"path must name a file; got {path!r}.", field="path")
    opened = SQLiteRecordStore(path, clock=clock)
    try:
        opened.setup()
    except BaseException:
        opened.close()
        raise
    return opened


def _storage_name(name: str) -> str:
    """Where a bank named ``name`` keeps its records: under the ``bank`` root, so no bank
    name reaches another owner's records (the default bank is the root itself)."""
    bank = Namespace("bank") if name == DEFAULT_NAMESPACE else Namespace("bank", name)
    encoded = bank.encode()
    if len(encoded.encode("utf-8")) > text.MAX_KEY_BYTES:
        raise InvalidInput(
            f"namespace is too long: stored as bank/<namespace>, with '/' and '%' "
            f"percent-encoded, it is over {text.MAX_KEY_BYTES} UTF-8 bytes; use a shorter name.",
            field="namespace",
        )
    return encoded
