"""The in-memory backend: the reference engine, kept in process memory; nothing persists.

Each namespace keeps, updated on every write rather than rebuilt per query: its records
by id, a ``VectorRows`` matrix of unit embeddings, and a ``KeywordIndex`` for BM25 (the
same two indexes the SQLite backend caches).
"""

from __future__ import annotations

import builtins
import copy
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

from memstack.clock import Clock
from memstack.errors import ConfigError
from memstack.storage import _validate as check
from memstack.storage._keywords import KeywordIndex
from memstack.storage._vector_rows import Mask, VectorRows
from memstack.storage.backend import (
    Accept,
    Cap,
    Gathered,
    Matrix,
    NamespaceInfo,
    Page,
    Ranked,
    Stamp,
    WriteBatch,
    WriteResult,
    candidate_ids,
    check_claims,
    check_expected,
    check_same_records,
    expected_ids,
    retention,
    stamp,
)
from memstack.storage.base import RecordStore
from memstack.storage.types import Filter, Record, Vector

__all__ = ["InMemoryBackend", "InMemoryRecordStore"]


@dataclass(kw_only=True)
class _Space:
    """One namespace's records and the indexes kept in step with them."""

    records: dict[str, Record] = field(default_factory=dict)
    info: NamespaceInfo | None = None
    vectors: VectorRows[str] | None = None
    words: KeywordIndex[str] = field(default_factory=KeywordIndex)
    closed: set[str] = field(default_factory=set)
    """The ids of closed versions (``valid_to`` set): a read of them alone
    (``Filter.closed_as_of``, asked on every recall) looks at these, not every record."""

    def put(self, record: Record) -> None:
        self.remove(record.id)
        self.records[record.id] = record
        if record.valid_to is not None:
            self.closed.add(record.id)
        if record.embedding is not None:
            if self.vectors is None:
                self.vectors = VectorRows(record.embedding.shape[0])
            self.vectors.put(record.id, record.embedding, record.hidden_at)
        self.words.put(record.id, record.keyword_text(), record.hidden_at)

    def remove(self, id: str) -> Record | None:
        record = self.records.pop(id, None)
        self.closed.discard(id)
        if record is not None:
            if self.vectors is not None:
                self.vectors.remove(id)
            self.words.remove(id)
        return record


class InMemoryBackend:
    """A thread-safe backend in dicts and numpy arrays.

    Vector search is an exact cosine scan of the namespace's matrix; text search is
    Okapi BM25 over lower-cased words, with document frequencies over the namespace.
    """

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._spaces: dict[str, _Space] = {}

    def setup(self, now: float) -> None:
        """Nothing to create."""

    def close(self) -> None:
        """Stops vector index builds in progress; the data stays readable."""
        with self._lock:
            for space in self._spaces.values():
                if space.vectors is not None:
                    space.vectors.close()

    def ping(self) -> None:
        """Always answers: the data lives in this process."""

    def write(self, batch: WriteBatch) -> WriteResult:
        with self._lock:
            check_expected(batch.expect, self._stamps(batch))
            stored = {ns: self._info(ns) for ns in batch.claims}
            infos = check_claims(batch.claims, stored)
            for namespace, info in infos.items():
                self._space(namespace).info = info
            for record in batch.upserts:
                self._space(record.namespace).put(record)
            deleted = sum(self._remove(ns, ids) for ns, ids in batch.deletes)
            evicted = {cap.namespace: self._evict(cap, batch.now) for cap in batch.caps}
            return WriteResult(deleted=deleted, evicted=evicted)

    def get(
        self, namespace: str, ids: Sequence[str], now: float, *, expired: bool = False
    ) -> builtins.list[Record]:
        with self._lock:
            space = self._spaces.get(namespace)
            found = [space.records[i] for i in ids if i in space.records] if space else []
        wanted = Filter(include_expired=expired, include_superseded=True)
        return [_copy(r) for r in found if _matches(r, wanted, now)]

    def list(self, namespace: str, wanted: Filter, page: Page, now: float) -> builtins.list[Record]:
        rows = self._visible(namespace, wanted, now)
        sign = 1.0 if page.order == "created_asc" else -1.0  # ties by id ascending

        def position(r: Record) -> tuple[float, str]:
            return sign * (r.updated_at if page.order == "updated_desc" else r.created_at), r.id

        if page.after is not None:
            after = (sign * page.after[0], page.after[1])
            rows = [r for r in rows if position(r) > after]
        rows.sort(key=position)
        return [_copy(r) for r in rows[page.offset : page.offset + page.limit]]

    def count(self, namespace: str, wanted: Filter, now: float) -> int:
        return len(self._visible(namespace, wanted, now))

    def vector_search(
        self, namespace: str, query: Vector, k: int, wanted: Filter, now: float
    ) -> builtins.list[Ranked]:
        with self._lock:
            space = self._spaces.get(namespace)
            if space is None or space.vectors is None:
                return []
            vectors = space.vectors
            allowed: Mask | None
            if wanted.narrows:
                allowed = vectors.where_keys(
                    [i for i in _narrowed(space, wanted, now) if i in vectors]
                )
            else:
                allowed = vectors.live(now)
            return vectors.search(query, k, allowed, exact=wanted.narrows)

    def nearest(
        self, namespace: str, queries: Matrix, now: float
    ) -> builtins.list[tuple[str, float] | None]:
        with self._lock:
            space = self._spaces.get(namespace)
            if space is None or space.vectors is None:
                return [None] * queries.shape[0]
            return space.vectors.nearest(queries, space.vectors.live(now))

    def text_search(
        self, namespace: str, words: Sequence[str], k: int, wanted: Filter, now: float
    ) -> builtins.list[Ranked]:
        with self._lock:
            space = self._spaces.get(namespace)
            if space is None:
                return []
            if wanted.narrows:
                return space.words.search(words, k, None, _narrowed(space, wanted, now))
            return space.words.search(words, k, now, None)

    def gather(
        self,
        namespace: str,
        words: Sequence[str],
        query: Vector | None,
        k: int,
        wanted: Filter,
        now: float,
        accept: Accept,
    ) -> Gathered:
        with self._lock:  # reentrant: the reads below see one snapshot
            matched = self.text_search(namespace, words, k, wanted, now) if words else []
            nearest: builtins.list[Ranked] = []
            cosines: dict[str, float] = {}
            info = None if query is None else self._info(namespace)
            if query is not None and info is not None:
                accept(info)
                nearest = self.vector_search(namespace, query, k, wanted, now)
                vectors = self._spaces[namespace].vectors
                if vectors is not None:
                    cosines = vectors.cosines(query, [id for id, _ in matched])
            ids = candidate_ids(matched, nearest)
            found = self.get(namespace, ids, now, expired=wanted.include_expired)
        records = {r.id: r for r in found}
        return Gathered(matched=matched, nearest=nearest, cosines=cosines, records=records)

    def touch(self, namespace: str, ids: Sequence[str], at: float) -> None:
        with self._lock:
            space = self._spaces.get(namespace)
            for i in ids if space else ():
                assert space is not None
                if i in space.records:
                    space.records[i] = replace(space.records[i], last_accessed_at=at)

    def namespaces(self, prefix: str, now: float) -> builtins.list[str]:
        with self._lock:
            return sorted(
                ns
                for ns, space in self._spaces.items()
                if ns.startswith(prefix)
                and any(_matches(r, Filter(), now) for r in space.records.values())
            )

    def ready(self, namespace: str) -> bool:
        with self._lock:
            space = self._spaces.get(namespace)
            return space is None or space.vectors is None or space.vectors.ready()

    def namespace_info(self, namespace: str) -> NamespaceInfo | None:
        with self._lock:
            return self._info(namespace)

    def delete_namespace(self, namespace: str) -> int:
        with self._lock:
            space = self._drop(namespace)
            return 0 if space is None else len(space.records)

    def rename_namespace(self, old: str, new: str) -> int:
        with self._lock:
            space = self._drop(old)
            if space is None:
                return 0
            target = self._space(new)
            target.info = space.info
            for record in space.records.values():
                target.put(replace(record, namespace=new))
            return len(space.records)

    def replace_namespace(self, copy: str, namespace: str) -> int:
        with self._lock:
            check_same_records(copy, namespace, self._held(copy), self._held(namespace))
            self._drop(namespace)
            return self.rename_namespace(copy, namespace)

    def _held(self, namespace: str) -> dict[str, Stamp]:
        space = self._spaces.get(namespace)
        return {} if space is None else {i: stamp(r) for i, r in space.records.items()}

    def prune_expired(self, now: float) -> int:
        with self._lock:
            removed = 0
            for namespace, space in builtins.list(self._spaces.items()):
                doomed = [
                    i
                    for i, r in space.records.items()
                    if r.expires_at is not None and r.expires_at <= now
                ]
                removed += self._remove(namespace, doomed)
            return removed

    # -- helpers, called with the lock held ------------------------------------------

    def _stamps(self, batch: WriteBatch) -> dict[tuple[str, str], Stamp]:
        """The stamps of the records ``batch`` expects that exist (expired ones too)."""
        out: dict[tuple[str, str], Stamp] = {}
        for namespace, ids in expected_ids(batch.expect).items():
            space = self._spaces.get(namespace)
            records = {} if space is None else space.records
            out.update({(namespace, i): stamp(records[i]) for i in ids if i in records})
        return out

    def _space(self, namespace: str) -> _Space:
        return self._spaces.setdefault(namespace, _Space())

    def _info(self, namespace: str) -> NamespaceInfo | None:
        space = self._spaces.get(namespace)
        return None if space is None else space.info

    def _remove(self, namespace: str, ids: Sequence[str]) -> int:
        """Remove these ids; a namespace left empty is dropped with its info."""
        space = self._spaces.get(namespace)
        if space is None:
            return 0
        removed = sum(1 for i in ids if space.remove(i) is not None)
        if not space.records:
            self._drop(namespace)
        return removed

    def _drop(self, namespace: str) -> _Space | None:
        """Forget a namespace, stopping a vector index build in progress."""
        space = self._spaces.pop(namespace, None)
        if space is not None and space.vectors is not None:
            space.vectors.close()
        return space

    def _evict(self, cap: Cap, now: float) -> builtins.list[str]:
        live = self._visible(cap.namespace, Filter(), now)
        excess = len(live) - cap.keep
        doomed: builtins.list[str] = []
        if excess > 0:
            live.sort(key=lambda r: (retention(cap, r, now), r.created_at, r.id))
            doomed = [r.id for r in live[:excess]]
        if doomed and cap.close:
            space = self._space(cap.namespace)
            for record in live[:excess]:
                space.put(replace(record, valid_to=now, closed_reason="evicted"))
        for namespace in cap.also_from if cap.close else (cap.namespace, *cap.also_from):
            self._remove(namespace, doomed)
        if cap.keep_closed is not None:
            closed = [
                r
                for r in self._visible(cap.namespace, Filter(include_superseded=True), now)
                if r.valid_to is not None
            ]
            closed.sort(key=lambda r: (r.valid_to or 0.0, r.id))
            self._remove(
                cap.namespace, [r.id for r in closed[: max(0, len(closed) - cap.keep_closed)]]
            )
        return doomed

    def _visible(self, namespace: str, wanted: Filter, now: float) -> builtins.list[Record]:
        with self._lock:
            space = self._spaces.get(namespace)
            ids = _narrowed(space, wanted, now) if space else []
            return [space.records[i] for i in ids] if space else []


class InMemoryRecordStore(RecordStore):
    """A ``RecordStore`` on an ``InMemoryBackend``."""

    def __init__(self, *, clock: Clock | None = None) -> None:
        super().__init__(InMemoryBackend(), clock=clock)

    @classmethod
    def from_url(cls, url: str, *, clock: Clock | None = None) -> InMemoryRecordStore:
        """``memory://`` opens an empty store."""
        if not url.startswith("memory://"):
            raise ConfigError(f"not a memory:// URL: {url!r}.")
        return cls(clock=clock)


def _narrowed(space: _Space, wanted: Filter, now: float) -> builtins.list[str]:
    """The ids of ``space``'s records that pass ``wanted``; only the ids it names, or the
    closed versions when it asks for them alone, are looked at."""
    records = space.records
    ids: Iterable[str] = records
    if wanted.ids is not None:
        ids = [i for i in wanted.ids if i in records]
    elif wanted.closed_as_of is not None:
        ids = space.closed
    return [i for i in ids if _matches(records[i], wanted, now)]


def _matches(record: Record, wanted: Filter, now: float) -> bool:
    """Whether ``record`` passes ``wanted`` (already checked) at time ``now``."""
    if not wanted.include_expired and record.expires_at is not None and record.expires_at <= now:
        return False
    if wanted.kinds is not None and record.kind not in wanted.kinds:
        return False
    if wanted.ids is not None and record.id not in wanted.ids:
        return False
    if wanted.provenances is not None and record.provenance not in wanted.provenances:
        return False
    if wanted.superseded_by is not None and record.superseded_by not in wanted.superseded_by:
        return False
    if wanted.closed_as_of is not None and not (
        record.valid_to is not None and record.valid_to <= wanted.closed_as_of
    ):
        return False
    if not _valid(record, wanted, now):
        return False
    if wanted.created_after is not None and not record.created_at > wanted.created_after:
        return False
    if wanted.created_before is not None and not record.created_at < wanted.created_before:
        return False
    return (
        wanted.metadata is None or check.metadata_matches(record.metadata, wanted.metadata)
    ) and check.metadata_in_matches(record.metadata, wanted.metadata_in)


def _valid(record: Record, wanted: Filter, now: float) -> bool:
    """Whether ``record`` is one of the versions ``wanted`` asks for."""
    if wanted.include_superseded:
        return True
    at = now if wanted.as_of is None else wanted.as_of
    start = record.valid_from if record.valid_from is not None else record.created_at
    if wanted.as_of is not None and start > at:
        return False
    return record.valid_to is None or record.valid_to > at


def _copy(record: Record) -> Record:
    """A record whose metadata the caller may change without changing the store."""
    return replace(record, metadata=copy.deepcopy(record.metadata))
