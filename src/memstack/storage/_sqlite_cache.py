"""Per-namespace search indexes of the SQLite backend, cached in process: the vector
matrix (``VectorRows``) of its exact vector search and the ``KeywordIndex`` of its BM25;
and the records lately read from those namespaces (``RecordMemo``).

Each is loaded on the first search that needs it. Both hold every row of the namespace,
closed versions too, each with the time it stops being returned by default
(``Record.hidden_at``): default searches mask by it; searches that ask for history
(``Filter.narrows``) take the rows the database selects. Why not sqlite-vec: the stdlib
``sqlite3`` here cannot load extensions, and an exact numpy scan over a cached float32
matrix is several times faster than sqlite-vec's scan, which reads and decodes every row
from the file. The scan is also exact, so filters never cost recall. Why not FTS5's
``bm25()``: see ``_keywords``.

An entry is valid while the namespace's row in ``namespace_versions`` still holds the
version it was built at; every write to a namespace, from any connection or process,
bumps that row in the same transaction. This store's own writes update the entries in
place (``begin`` -> ``CacheDiff`` -> ``commit``) and move them to the new version, so
only another connection's write makes the next search reload the namespace.

A gather (a hybrid search) that finds its entry valid notes the connection's ``PRAGMA
data_version`` (``settle``). SQLite changes that number whenever another connection
commits, and this store's own writes keep the entries current, so while it is unchanged
the next gather needs neither a transaction nor the version row: one statement instead
of four (``settled``).

Touching records (``last_accessed_at``) bumps the row's ``touches`` instead: it changes
no index, so another connection's touch only makes this one forget the namespace's
records, and this store's own touch forgets the ids it touched. Records are held only
for namespaces that have an entry (were searched), so reading one record of many
namespaces never pushes a searched namespace's indexes out.
"""

from __future__ import annotations

import sqlite3
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Final

from memstack.storage._keywords import KeywordIndex, load_words
from memstack.storage._record_memo import RecordMemo
from memstack.storage._vector_rows import VectorRows, load_rows
from memstack.storage.backend import NamespaceInfo
from memstack.storage.types import Record, keyword_text

__all__ = ["UNREAD", "CacheDiff", "NamespaceCache", "Settled", "data_version", "namespace_counts"]

_FETCH = 1_000
_HIDDEN_AT: Final = (
    "CASE WHEN valid_to IS NULL THEN expires_at WHEN expires_at IS NULL THEN valid_to"
    " ELSE min(expires_at, valid_to) END"
)
"""``Record.hidden_at`` in SQL: when default reads stop returning a row. The indexes mask
rows by it, so a closed version costs a search nothing but its slot."""


def namespace_counts(conn: sqlite3.Connection, namespace: str) -> tuple[int, int]:
    """How many writes and how many touches the namespace has had."""
    row = conn.execute(
        "SELECT version, touches FROM namespace_versions WHERE namespace = ?", (namespace,)
    ).fetchone()
    return (0, 0) if row is None else (int(row[0]), int(row[1]))


def data_version(conn: sqlite3.Connection) -> int:
    """``PRAGMA data_version``: changes whenever another connection commits."""
    row = conn.execute("PRAGMA data_version").fetchone()
    return int(row[0])


_UNLOADED: Final = object()
UNREAD: Final = _UNLOADED
"""``settle``'s ``info`` when the read did not read it."""


@dataclass(kw_only=True)
class _Entry:
    version: int
    touches: int
    rows: VectorRows[str] | object | None = _UNLOADED  # None: no embedding in the namespace
    words: KeywordIndex[str] | None = None  # None: not loaded yet
    settled: int | None = None  # the connection's data_version when last checked valid
    info: NamespaceInfo | object | None = _UNLOADED  # as of then; None: no embeddings


@dataclass(frozen=True, kw_only=True)
class Settled:
    """A namespace's cached indexes, valid without asking the database (``settled``)."""

    words: KeywordIndex[str] | None
    """Loaded when asked for."""
    rows: VectorRows[str] | None
    """None: the namespace has no embeddings."""
    info: NamespaceInfo | None
    """None: the namespace has no embeddings (when vectors were asked for)."""


@dataclass(kw_only=True)
class CacheDiff:
    """What one write transaction changes in the cached namespaces it touches."""

    versions: dict[str, int]
    """The version each cached, touched namespace had when the write began."""
    puts: dict[str, list[Record]] = field(default_factory=dict)
    removes: dict[str, list[str]] = field(default_factory=dict)

    def upserted(self, records: Sequence[Record]) -> None:
        for record in records:
            if record.namespace in self.versions:
                self.puts.setdefault(record.namespace, []).append(record)

    def removed(self, namespace: str, ids: Sequence[str]) -> None:
        if namespace in self.versions and ids:
            self.removes.setdefault(namespace, []).extend(ids)


class NamespaceCache:
    """A small LRU of namespaces' indexes; the caller serializes access."""

    def __init__(self, max_namespaces: int = 32, max_records: int = 2_048) -> None:
        self._max = max_namespaces
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self.records = RecordMemo(max_records)

    def rows(
        self, conn: sqlite3.Connection, namespace: str, *, checked: bool = False
    ) -> VectorRows[str] | None:
        """The namespace's vectors, reloaded if another connection wrote to it since
        (``checked``: ``held`` said True earlier in this same read, so it is not asked
        again)."""
        entry = self._entry(conn, namespace, checked)
        if entry.rows is _UNLOADED:
            same = entry.words.held if entry.words is not None else _itself
            entry.rows = _load_rows(conn, namespace, same)
        assert entry.rows is None or isinstance(entry.rows, VectorRows)
        return entry.rows

    def words(
        self, conn: sqlite3.Connection, namespace: str, *, checked: bool = False
    ) -> KeywordIndex[str]:
        """The namespace's keyword index, reloaded if another connection wrote since
        (``checked`` as for ``rows``)."""
        entry = self._entry(conn, namespace, checked)
        if entry.words is None:
            same = entry.rows.held if isinstance(entry.rows, VectorRows) else _itself
            entry.words = _load_words(conn, namespace, same)
        return entry.words

    def held(self, conn: sqlite3.Connection, namespace: str) -> bool:
        """Whether the namespace has a valid entry, whose records ``records`` may hold
        (checked against the database, so call it in the read that uses them)."""
        entry = self._entries.get(namespace)
        return entry is not None and self._valid(entry, conn, namespace)

    def settle(
        self, conn: sqlite3.Connection, namespace: str, info: NamespaceInfo | object | None
    ) -> None:
        """The namespace's entry was checked valid in this read: note the connection's
        ``PRAGMA data_version`` now, and ``info`` (``UNREAD``: not read), so that
        ``settled`` can hand the entry out while no other connection commits."""
        entry = self._entries.get(namespace)
        if entry is not None:
            entry.settled = data_version(conn)
            if info is not UNREAD:
                entry.info = info

    def settled(
        self, namespace: str, version: int, *, words: bool, vectors: bool
    ) -> Settled | None:
        """The namespace's indexes if no other connection has committed since ``settle``
        (``version`` is the connection's ``data_version`` now: this store's own writes
        update the entries in place and leave it unchanged) and they hold what is asked;
        else None, and the caller reads in a transaction."""
        entry = self._entries.get(namespace)
        if entry is None or entry.settled != version:
            return None
        if (words and entry.words is None) or (
            vectors and (entry.rows is _UNLOADED or entry.info is _UNLOADED)
        ):
            return None
        self._entries.move_to_end(namespace)
        rows = entry.rows if isinstance(entry.rows, VectorRows) else None
        info = entry.info if isinstance(entry.info, NamespaceInfo) else None
        return Settled(words=entry.words, rows=rows, info=info)

    def _entry(self, conn: sqlite3.Connection, namespace: str, checked: bool) -> _Entry:
        entry = self._entries.get(namespace)
        if entry is None or not (checked or self._valid(entry, conn, namespace)):
            version, touches = namespace_counts(conn, namespace)
            entry = _Entry(version=version, touches=touches)
            self._entries[namespace] = entry
            while len(self._entries) > self._max:
                self._discard(next(iter(self._entries)))
        self._entries.move_to_end(namespace)
        return entry

    def _valid(self, entry: _Entry, conn: sqlite3.Connection, namespace: str) -> bool:
        """Whether the entry is still the namespace's; forgets its records when only
        touched, and the whole entry (freeing its indexes) when written to."""
        version, touches = namespace_counts(conn, namespace)
        if entry.version != version:
            self._discard(namespace)
            return False
        if entry.touches != touches:
            self.records.drop(namespace)
            entry.touches = touches
        return True

    def touched(self, namespace: str, ids: Sequence[str], before: tuple[int, int]) -> None:
        """This store touched ``ids`` (the namespace's counts were ``before``, and its
        touches are one more now): forget those records."""
        entry = self._entries.get(namespace)
        if entry is None:
            return
        if (entry.version, entry.touches) == before:
            self.records.forget(namespace, ids)
            entry.touches += 1
        else:
            self.records.drop(namespace)

    def begin(self, conn: sqlite3.Connection, namespaces: set[str]) -> CacheDiff:
        """Start a write to ``namespaces``; call inside its transaction, before it writes."""
        versions = {}
        for namespace in namespaces:
            entry = self._entries.get(namespace)
            if entry is not None:
                if entry.version == namespace_counts(conn, namespace)[0]:
                    versions[namespace] = entry.version
                else:
                    self._discard(namespace)
        return CacheDiff(versions=versions)

    def commit(self, diff: CacheDiff) -> None:
        """Apply a write's changes to the entries it touched; each write bumps a
        namespace's version by exactly one."""
        for namespace, version in diff.versions.items():
            entry = self._entries.get(namespace)
            if entry is None or entry.version != version:
                self._discard(namespace)
                continue
            self.records.forget(namespace, diff.removes.get(namespace, ()))
            self.records.forget(namespace, (r.id for r in diff.puts.get(namespace, ())))
            for id in diff.removes.get(namespace, ()):
                if isinstance(entry.rows, VectorRows):
                    entry.rows.remove(id)
                if entry.words is not None:
                    entry.words.remove(id)
            for record in diff.puts.get(namespace, ()):
                _put(entry, record)
            entry.version = version + 1
            entry.info = _UNLOADED  # a write may set or drop it

    def drop(self, namespace: str) -> None:
        self._discard(namespace)

    def clear(self) -> None:
        for namespace in list(self._entries):
            self._discard(namespace)
        self.records.clear()

    def _discard(self, namespace: str) -> None:
        """Forget a namespace's indexes, stopping a vector index build in progress."""
        entry = self._entries.pop(namespace, None)
        self.records.drop(namespace)
        if entry is not None and isinstance(entry.rows, VectorRows):
            entry.rows.close()


def _put(entry: _Entry, record: Record) -> None:
    if entry.words is not None:
        entry.words.put(record.id, record.keyword_text(), record.hidden_at)
    if entry.rows is _UNLOADED:
        return
    if record.embedding is None:
        if isinstance(entry.rows, VectorRows):
            entry.rows.remove(record.id)
        return
    if entry.rows is None:
        entry.rows = VectorRows(record.embedding.shape[0])
    assert isinstance(entry.rows, VectorRows)
    entry.rows.put(record.id, record.embedding, record.hidden_at)


Same = Callable[[Sequence[str]], list[str]]
"""The id objects another index of the namespace holds for these ids (or the ids)."""


def _itself(ids: Sequence[str]) -> list[str]:
    return list(ids)


def _load_words(conn: sqlite3.Connection, namespace: str, same: Same) -> KeywordIndex[str]:
    """The namespace's keyword index; ``same`` gives the id objects the vector rows hold
    already, so both indexes share one string per id instead of holding two."""
    cursor = conn.execute(
        f"SELECT id, text, context, {_HIDDEN_AT} FROM records WHERE namespace = ? ORDER BY pk",
        (namespace,),
    )

    def rows() -> Iterator[tuple[str, str, float | None]]:
        while batch := cursor.fetchmany(_FETCH):
            ids = same([row[0] for row in batch])
            for id, (_, text, context, expires_at) in zip(ids, batch, strict=True):
                yield id, keyword_text(text, context), expires_at

    return load_words(rows())  # which hands the heap back as it packs


def _load_rows(conn: sqlite3.Connection, namespace: str, same: Same) -> VectorRows[str] | None:
    """The namespace's vectors, None if it has none; ``same`` as in ``_load_words``."""
    row = conn.execute(
        "SELECT count(*), max(dim) FROM records WHERE namespace = ? AND embedding IS NOT NULL",
        (namespace,),
    ).fetchone()
    count, dim = int(row[0]), row[1]
    if count == 0:
        return None
    cursor = conn.execute(
        f"SELECT id, embedding, {_HIDDEN_AT} FROM records"
        " WHERE namespace = ? AND embedding IS NOT NULL ORDER BY pk",
        (namespace,),
    )

    def rows() -> Iterator[tuple[str, bytes, float | None]]:
        while batch := cursor.fetchmany(_FETCH):
            ids = same([row[0] for row in batch])
            for id, (_, blob, expires_at) in zip(ids, batch, strict=True):
                yield id, blob, expires_at

    return load_rows(int(dim), count, rows())
