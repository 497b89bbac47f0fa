"""MemoryBank: a string per agent name, kept between an agent's runs."""

from __future__ import annotations

import threading
from os import PathLike
from types import TracebackType

from memstack.bank import _text as text
from memstack.bank._backends import Backend, DictBackend, RecordStoreBackend
from memstack.bank.tools import bank_tools
from memstack.clock import Clock, SystemClock
from memstack.errors import InvalidInput, StoreUnavailable
from memstack.secrets import refuse_secrets
from memstack.storage import Namespace, RecordStore, SQLiteRecordStore
from memstack.tools import Tool

__all__ = ["DEFAULT_NAMESPACE", "MemoryBank"]

DEFAULT_NAMESPACE = "bank"
"""The name of the bank a durable MemoryBank keeps unless told otherwise; its records
live in ``Namespace("bank")``, another name's in ``Namespace("bank", name)``."""


class MemoryBank:
    """Per-agent string memory: ``read``, ``write`` (overwrite), ``entries``.

    - ``MemoryBank()`` keeps everything in process memory, as the spec's bank does.
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
        self._lock = threading.Lock()
        self._backend: Backend | None = _open_backend(
            path, store, self.namespace, clock or SystemClock()
        )
        self.durable = not isinstance(self._backend, DictBackend)
        """Whether content outlives the process (a ``path`` or ``store`` was given)."""

    def read(self, key: str) -> str:
        """The content stored under ``key``; ``""`` when nothing was written."""
        key = text.check_key(key, "key")
        with self._lock:
            found = self._opened().get(key)
        return "" if found is None else found

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
            self._opened().put(key, stored)

    def search(self, key: str, query: str) -> str:
        """The lines under ``key`` containing ``query`` (ignoring case), joined by
        ``\\n``; ``""`` when none match."""
        query = text.check_text(query, "query")
        return text.matching_lines(self.read(key), query)

    def entries(self) -> dict[str, str]:
        """A snapshot of every key and its content, in the order keys were first written."""
        with self._lock:
            return self._opened().items()

    def tools(self, agent_name: str) -> list[Tool]:
        """New ``memory_read``, ``memory_write`` and ``memory_search`` tools that read and
        write under ``agent_name`` only."""
        if self.secret_filter:  # refused here, not at the model's first write
            refuse_secrets({"agent_name": agent_name}, where="the memory bank")
        return bank_tools(self, agent_name)

    def close(self) -> None:
        """Release the store the bank opened; later calls raise ``StoreUnavailable``.
        Calling it again does nothing."""
        with self._lock:
            backend, self._backend = self._backend, None
            if backend is not None:
                backend.close()

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

    def _opened(self) -> Backend:
        if self._backend is None:
            raise StoreUnavailable("this MemoryBank is closed; open a new one.")
        return self._backend


def _open_backend(
    path: str | PathLike[str] | None, store: RecordStore | None, namespace: str, clock: Clock
) -> Backend:
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
        return RecordStoreBackend(
            store, namespace=_storage_name(namespace), clock=clock, owns_store=False
        )
    if path is None:
        return DictBackend()
    if not isinstance(path, str | PathLike) or not str(path).strip():
        raise InvalidInput(f"path must name a file; got {path!r}.", field="path")
    opened = SQLiteRecordStore(path, clock=clock)
    try:
        opened.setup()
    except BaseException:
        opened.close()
        raise
    return RecordStoreBackend(
        opened, namespace=_storage_name(namespace), clock=clock, owns_store=True
    )


def _storage_name(name: str) -> str:
    """Where a bank named ``name`` keeps its records: under the ``bank`` root, so no bank
    name reaches another owner's records (the default bank is the root itself)."""
    bank = Namespace("bank") if name == DEFAULT_NAMESPACE else Namespace("bank", name)
    return bank.encode()
