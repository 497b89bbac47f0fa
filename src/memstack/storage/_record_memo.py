"""Records the SQLite backend read lately, kept in process so a search's candidates are
not read and decoded again on every recall.

A recall fetches its candidates by id; on a LoCoMo conversation the SQL read and the
decoding of those rows (JSON metadata, the vector) were a noticeable share of a recall,
and the same turns come back query after query. ``RecordMemo`` is a bounded LRU of those records
by ``(namespace, id)``. It knows nothing of validity: its owner (``NamespaceCache``)
forgets a namespace's records whenever another connection wrote to or touched it, and
the ids its own writes change.

Callers get copies whose metadata is their own, so changing a returned record's
metadata never changes what the memo hands out next; a reader that never changes them
(a hybrid search's candidates) may ask for the held records themselves. Vectors are
shared: the backend's are read-only arrays.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Sequence

from memstack.storage.types import Record, own_copy

__all__ = ["RecordMemo"]


class RecordMemo:
    """At most ``max_records`` records, least recently used forgotten first; the caller
    serializes access."""

    def __init__(self, max_records: int) -> None:
        self._max = max_records
        self._records: dict[str, OrderedDict[str, Record]] = {}
        self._held = 0

    def __len__(self) -> int:
        return self._held

    def take(
        self, namespace: str, ids: Sequence[str], *, shared: bool = False
    ) -> tuple[list[Record], list[str]]:
        """Copies of the records of ``ids`` held (``shared``: the held records themselves,
        for a reader that never changes them), and the ids not held (in the order asked)."""
        held = self._records.get(namespace)
        if not held:
            return [], list(ids)
        found: list[Record] = []
        missing: list[str] = []
        for id in ids:
            record = held.get(id)
            if record is None:
                missing.append(id)
            else:
                held.move_to_end(id)
                found.append(record if shared else own_copy(record))
        return found, missing

    def shared(self, namespace: str, ids: Iterable[str]) -> dict[str, Record] | None:
        """The held records of ``ids`` by id, themselves (for a reader that never changes
        them), or None when one is not held; an id asked twice is looked up once."""
        held = self._records.get(namespace)
        found: dict[str, Record] = {}
        for id in ids:
            if id not in found:
                record = None if held is None else held.get(id)
                if record is None:
                    return None
                assert held is not None
                held.move_to_end(id)
                found[id] = record
        return found

    def keep(
        self, namespace: str, records: Iterable[Record], *, shared: bool = False
    ) -> list[Record]:
        """Hold ``records`` (just read from ``namespace``); return copies of them (or,
        ``shared``, them)."""
        if self._max <= 0:
            return list(records)
        held = self._records.setdefault(namespace, OrderedDict())
        copies = []
        for record in records:
            if held.pop(record.id, None) is None:
                self._held += 1
            held[record.id] = record
            copies.append(record if shared else own_copy(record))
        self._shrink(namespace)
        return copies

    def forget(self, namespace: str, ids: Iterable[str]) -> None:
        held = self._records.get(namespace)
        if held:
            for id in ids:
                if held.pop(id, None) is not None:
                    self._held -= 1

    def drop(self, namespace: str) -> None:
        self._held -= len(self._records.pop(namespace, ()))

    def clear(self) -> None:
        self._records.clear()
        self._held = 0

    def _shrink(self, last: str) -> None:
        """Forget the least recently used records, other namespaces' first."""
        for namespace in [*(n for n in self._records if n != last), last]:
            held = self._records[namespace]
            while self._held > self._max and held:
                held.popitem(last=False)
                self._held -= 1
            if not held:
                del self._records[namespace]
            if self._held <= self._max:
                return
