"""Where a MemoryBank keeps its strings: a dict in process memory, or a RecordStore.

Backends are called with the bank's lock held and receive checked arguments.
"""

from __future__ import annotations

from typing import Final, Protocol

from memstack.clock import Clock
from memstack.storage import Record, RecordStore

__all__ = ["BANK_RECORD_KIND", "Backend", "DictBackend", "RecordStoreBackend"]

BANK_RECORD_KIND: Final = "memory_bank"
"""The ``kind`` of the records a durable bank writes."""
_PAGE: Final = 1000


class Backend(Protocol):
    def get(self, key: str) -> str | None: ...

    def put(self, key: str, content: str) -> None: ...

    def items(self) -> dict[str, str]: ...

    def close(self) -> None: ...


class DictBackend:
    """The spec's bank: a map in process memory, gone when the process exits."""

    def __init__(self) -> None:
        self._data: dict[str, str] = {}

    def get(self, key: str) -> str | None:
        return self._data.get(key)

    def put(self, key: str, content: str) -> None:
        self._data[key] = content

    def items(self) -> dict[str, str]:
        return dict(self._data)

    def close(self) -> None:
        self._data = {}


class RecordStoreBackend:
    """One record per key in ``namespace``: ``id`` is the key, ``text`` the content.

    Records carry no embedding. ``created_at`` is kept on overwrite, so ``items``
    lists keys in the order they were first written, as the dict backend does.
    Every read goes to the store, so writes from other processes are seen.
    """

    def __init__(
        self, store: RecordStore, *, namespace: str, clock: Clock, owns_store: bool
    ) -> None:
        self.store = store
        self.namespace = namespace
        self._clock = clock
        self._owns_store = owns_store

    def get(self, key: str) -> str | None:
        found = self.store.get(self.namespace, [key])
        return found[0].text if found else None

    def put(self, key: str, content: str) -> None:
        now = self._clock.now()
        found = self.store.get(self.namespace, [key])
        created_at = found[0].created_at if found else now
        record = Record(
            id=key,
            namespace=self.namespace,
            text=content,
            kind=BANK_RECORD_KIND,
            created_at=created_at,
            updated_at=now,
        )
        self.store.upsert([record])

    def items(self) -> dict[str, str]:
        out: dict[str, str] = {}
        offset = 0
        while True:
            page = self.store.list(self.namespace, limit=_PAGE, offset=offset, order="created_asc")
            out.update((record.id, record.text) for record in page)
            if len(page) < _PAGE:
                return out
            offset += len(page)

    def close(self) -> None:
        if self._owns_store:
            self.store.close()
