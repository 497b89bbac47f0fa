"""InMemoryRecordStore: the reference backend, kept in dicts; nothing persists."""

from __future__ import annotations

import builtins
import copy
import threading
from collections.abc import Iterator, Sequence
from dataclasses import replace

import numpy as np
import numpy.typing as npt

from memstack.clock import Clock, SystemClock
from memstack.errors import ConfigError
from memstack.storage import _validate as check
from memstack.storage._text import bm25_scores, query_words, tokenize
from memstack.storage._vectors import cosine_scores, normalized, top_k
from memstack.storage.types import Filter, Order, Record, ScoredRecord

__all__ = ["InMemoryRecordStore"]


class InMemoryRecordStore:
    """A thread-safe ``RecordStore`` in process memory.

    Vector search is an exact numpy cosine scan; text search is Okapi BM25 over
    lower-cased words, with document frequencies taken over the whole namespace.
    """

    def __init__(self, *, clock: Clock | None = None) -> None:
        self._clock: Clock = clock if clock is not None else SystemClock()
        self._lock = threading.RLock()
        self._data: dict[str, dict[str, Record]] = {}

    @classmethod
    def from_url(cls, url: str, *, clock: Clock | None = None) -> InMemoryRecordStore:
        """``memory://`` opens an empty store."""
        if not url.startswith("memory://"):
            raise ConfigError(f"not a memory:// URL: {url!r}.")
        return cls(clock=clock)

    def setup(self) -> None:
        """Nothing to create."""

    def close(self) -> None:
        """Nothing to release; the data stays readable."""

    def upsert(self, records: Sequence[Record]) -> None:
        batch = check.check_batch(records)
        with self._lock:
            check.check_stored_dims(batch, self._stored_dim)
            for record in batch.records:
                self._data.setdefault(record.namespace, {})[record.id] = record

    def get(self, namespace: str, ids: Sequence[str]) -> builtins.list[Record]:
        namespace = check.check_namespace(namespace)
        wanted = check.check_ids(ids)
        now = self._clock.now()
        with self._lock:
            rows = self._data.get(namespace, {})
            found = [rows[i] for i in wanted if i in rows]
        return [_copy(r) for r in found if _matches(r, Filter(), now)]

    def delete(self, namespace: str, ids: Sequence[str]) -> int:
        namespace = check.check_namespace(namespace)
        wanted = check.check_ids(ids)
        with self._lock:
            rows = self._data.get(namespace, {})
            gone = [rows.pop(i) for i in wanted if i in rows]
            self._drop_if_empty(namespace)
        return len(gone)

    def delete_namespace(self, namespace: str) -> int:
        namespace = check.check_namespace(namespace)
        with self._lock:
            return len(self._data.pop(namespace, {}))

    def list(
        self,
        namespace: str,
        *,
        filter: Filter | None = None,
        limit: int = 100,
        offset: int = 0,
        order: Order = "created_desc",
    ) -> builtins.list[Record]:
        namespace = check.check_namespace(namespace)
        wanted = check.check_filter(filter)
        limit = check.check_positive(limit, "limit")
        offset = check.check_offset(offset)
        order = check.check_order(order)
        rows = builtins.list(self._visible(namespace, wanted))
        if order == "updated_desc":
            rows.sort(key=lambda r: (r.updated_at, r.id), reverse=True)
        else:
            rows.sort(key=lambda r: (r.created_at, r.id), reverse=order == "created_desc")
        return [_copy(r) for r in rows[offset : offset + limit]]

    def count(self, namespace: str, filter: Filter | None = None) -> int:
        namespace = check.check_namespace(namespace)
        wanted = check.check_filter(filter)
        return sum(1 for _ in self._visible(namespace, wanted))

    def vector_search(
        self,
        namespace: str,
        vector: npt.ArrayLike,
        *,
        k: int,
        filter: Filter | None = None,
    ) -> builtins.list[ScoredRecord]:
        namespace = check.check_namespace(namespace)
        k = check.check_positive(k, "k")
        wanted = check.check_filter(filter)
        query = check.check_vector(vector, "vector")
        with self._lock:
            check.check_query_dim(query, self._stored_dim(namespace))
        rows = [r for r in self._visible(namespace, wanted) if r.embedding is not None]
        if not rows:
            return []
        matrix = normalized(np.stack([r.embedding for r in rows if r.embedding is not None]))
        scores = cosine_scores(matrix, query)
        return [
            ScoredRecord(record=_copy(rows[i]), score=float(scores[i])) for i in top_k(scores, k)
        ]

    def text_search(
        self,
        namespace: str,
        query: str,
        *,
        k: int,
        filter: Filter | None = None,
    ) -> builtins.list[ScoredRecord]:
        namespace = check.check_namespace(namespace)
        words = query_words(check.check_query(query))
        k = check.check_positive(k, "k")
        wanted = check.check_filter(filter)
        with self._lock:
            corpus = builtins.list(self._data.get(namespace, {}).values())
        scores = bm25_scores(words, [tokenize(r.text) for r in corpus])
        now = self._clock.now()
        hits = [
            (score, r)
            for score, r in zip(scores, corpus, strict=True)
            if score > 0 and _matches(r, wanted, now)
        ]
        hits.sort(key=lambda hit: (-hit[0], hit[1].id))
        return [ScoredRecord(record=_copy(r), score=s) for s, r in hits[:k]]

    def touch(self, namespace: str, ids: Sequence[str], at: float) -> None:
        namespace = check.check_namespace(namespace)
        wanted = check.check_ids(ids)
        at = check.check_time(at, "at")
        with self._lock:
            rows = self._data.get(namespace, {})
            for i in wanted:
                if i in rows:
                    rows[i] = replace(rows[i], last_accessed_at=at)

    def namespaces(self, prefix: str = "") -> builtins.list[str]:
        prefix = check.check_text(prefix, "prefix")
        now = self._clock.now()
        with self._lock:
            return sorted(
                ns
                for ns, rows in self._data.items()
                if ns.startswith(prefix) and any(_matches(r, Filter(), now) for r in rows.values())
            )

    def prune_expired(self, now: float) -> int:
        now = check.check_time(now, "now")
        removed = 0
        with self._lock:
            for namespace, rows in builtins.list(self._data.items()):
                doomed = [
                    i for i, r in rows.items() if r.expires_at is not None and r.expires_at <= now
                ]
                for i in doomed:
                    del rows[i]
                removed += len(doomed)
                self._drop_if_empty(namespace)
        return removed

    def _visible(self, namespace: str, wanted: Filter) -> Iterator[Record]:
        now = self._clock.now()
        with self._lock:
            rows = builtins.list(self._data.get(namespace, {}).values())
        return (r for r in rows if _matches(r, wanted, now))

    def _stored_dim(self, namespace: str) -> int | None:
        for record in self._data.get(namespace, {}).values():
            if record.embedding is not None:
                return int(record.embedding.shape[0])
        return None

    def _drop_if_empty(self, namespace: str) -> None:
        if not self._data.get(namespace, True):
            del self._data[namespace]


def _matches(record: Record, wanted: Filter, now: float) -> bool:
    """Whether ``record`` passes ``wanted`` (already checked) at time ``now``."""
    if not wanted.include_expired and record.expires_at is not None and record.expires_at <= now:
        return False
    if wanted.kinds is not None and record.kind not in wanted.kinds:
        return False
    if wanted.ids is not None and record.id not in wanted.ids:
        return False
    if wanted.created_after is not None and not record.created_at > wanted.created_after:
        return False
    if wanted.created_before is not None and not record.created_at < wanted.created_before:
        return False
    return wanted.metadata is None or check.metadata_matches(record.metadata, wanted.metadata)


def _copy(record: Record) -> Record:
    """A record whose metadata the caller may change without changing the store."""
    return replace(record, metadata=copy.deepcopy(record.metadata))
