"""Hybrid retrieval written once above the RecordStore protocol: vector + keyword candidates,
fused into one relevance.

Candidates are the ``pool`` nearest records by cosine plus the ``pool`` best keyword
(BM25-style) matches. Keyword scores are divided by the best one, so they fall in 0..1
whatever the backend's scale; relevance is ``(1 - w)·cosine + w·keyword`` when any
candidate matched a query word, and plain cosine otherwise. On LoCoMo this beat both
plain rankings (``memstack bench locomo`` measures it).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Final

import numpy as np
import numpy.typing as npt

from memstack.storage.backend import Gathered
from memstack.storage.base import NamespaceLike, RecordStore
from memstack.storage.types import Filter, Record, own_copy

__all__ = [
    "KEYWORD_WEIGHT",
    "Candidates",
    "HybridHit",
    "fused_candidates",
    "hybrid_candidates",
]


KEYWORD_WEIGHT: Final = 0.3
"""Share of keyword (BM25) relevance in a hybrid relevance, for long-term recall and the
service's search alike; measured on LoCoMo, where 0.2-0.5 all beat both pure rankings
and 0.3 was best."""


@dataclass(frozen=True, kw_only=True)
class HybridHit:
    record: Record
    similarity: float
    """Cosine similarity of query and record (0 for a record without an embedding)."""
    keyword: float | None
    """Keyword relevance in 0..1, or None when no candidate matched any query word."""
    relevance: float


def hybrid_candidates(
    store: RecordStore,
    namespaces: Sequence[NamespaceLike],
    *,
    query: str,
    vector: npt.NDArray[np.float32] | None,
    pool: int,
    keyword_weight: float,
    filter: Filter | None = None,
    model_id: str | None = None,
    filters: Sequence[Filter | None] | None = None,
) -> list[HybridHit]:
    """Every candidate of ``namespaces`` with its similarity, keyword score and relevance,
    most relevant first (exact ties by record id ascending). ``vector=None`` searches by
    keywords only; ``model_id`` names the model that embedded ``vector`` (a namespace of
    another model is a ``ConfigError``).

    The candidates of all namespaces are fused once: keyword scores are divided by the
    best among all of them, so a weak match in one namespace never ties a strong one in
    another. ``filters`` gives each namespace its own filter (in order), else ``filter``
    applies to all. A namespace's keyword matches and nearest records are fetched
    together, in one read (each candidate is read once; on PostgreSQL one round trip)."""
    return fused_candidates(
        store,
        namespaces,
        query=query,
        vector=vector,
        pool=pool,
        keyword_weight=keyword_weight,
        filter=filter,
        model_id=model_id,
        filters=filters,
    ).hits()


@dataclass(frozen=True, kw_only=True)
class Candidates:
    """``hybrid_candidates``'s candidates as columns, in the order gathered (not ranked):
    ``records[i]`` has ``similarity[i]``, ``relevance[i]`` and ``keyword[i]`` (``keyword``
    is None when no candidate matched a query word). For a caller that ranks them again
    and needs no object per candidate (a recall ranks dozens).

    The records may be the store's own objects (``RecordStore.gather``): read them, and
    hand out ``own_copy`` of those you return. ``hits`` does."""

    records: list[Record]
    similarity: list[float]
    keyword: list[float] | None
    relevance: list[float]

    def hits(self) -> list[HybridHit]:
        """One ``HybridHit`` per candidate, most relevant first (exact ties by record id
        ascending, then in gathered order), each with a copy of its record."""
        return list(self.ranked())

    def ranked(self) -> Iterator[HybridHit]:
        """``hits`` one at a time, each record copied only when its hit is taken: a caller
        that keeps the first ``limit`` of a pool four times as large copies no more (a
        service search copied 40 records' nested metadata to return 10)."""
        relevance, records = self.relevance, self.records
        order = sorted(range(len(records)), key=lambda i: (-relevance[i], records[i].id))
        for i in order:
            yield HybridHit(
                record=own_copy(self.records[i]),
                similarity=self.similarity[i],
                keyword=None if self.keyword is None else self.keyword[i],
                relevance=self.relevance[i],
            )


def fused_candidates(
    store: RecordStore,
    namespaces: Sequence[NamespaceLike],
    *,
    query: str,
    vector: npt.NDArray[np.float32] | None,
    pool: int,
    keyword_weight: float,
    filter: Filter | None = None,
    model_id: str | None = None,
    filters: Sequence[Filter | None] | None = None,
) -> Candidates:
    """``hybrid_candidates`` as ``Candidates`` (columns, unranked); same arguments."""
    found = _Found()
    for namespace, where in zip(namespaces, _filters(namespaces, filter, filters), strict=True):
        found.gather(store, namespace, where, query, vector, pool, keyword_weight, model_id)
    similarity, raw = found.cosine, found.keyword
    best = max(raw, default=0.0)
    keyword = [score / best for score in raw] if best > 0 else None
    if vector is None:
        relevance = keyword or [0.0] * len(similarity)
    elif keyword is None:
        relevance = list(similarity)
    else:
        relevance = [
            (1 - keyword_weight) * s + keyword_weight * w
            for s, w in zip(similarity, keyword, strict=True)
        ]
    return Candidates(
        records=found.records, similarity=similarity, keyword=keyword, relevance=relevance
    )


def _reads_keywords(keyword_weight: float, vector: npt.NDArray[np.float32] | None) -> bool:
    """A search reads keyword matches unless it is pure cosine (weight 0, a vector)."""
    return keyword_weight > 0 or vector is None


def _filters(
    namespaces: Sequence[NamespaceLike],
    filter: Filter | None,
    filters: Sequence[Filter | None] | None,
) -> list[Filter | None]:
    wanted = [filter] * len(namespaces) if filters is None else list(filters)
    if len(wanted) != len(namespaces):
        raise ValueError("filters must give one filter per namespace")
    return wanted


Key = tuple[NamespaceLike, str]


@dataclass
class _Found:
    """The candidates gathered so far as columns, in the order found: keyword matches
    first, each (namespace, id) once, with their cosine and raw keyword score (0 when
    not a keyword match)."""

    records: list[Record] = field(default_factory=list)
    cosine: list[float] = field(default_factory=list)
    keyword: list[float] = field(default_factory=list)
    at: dict[Key, int] = field(default_factory=dict)

    def gather(
        self,
        store: RecordStore,
        namespace: NamespaceLike,
        filter: Filter | None,
        query: str,
        vector: npt.NDArray[np.float32] | None,
        pool: int,
        keyword_weight: float,
        model_id: str | None,
    ) -> None:
        """The ``pool`` best keyword matches and the ``pool`` nearest records of one
        namespace, read together (``RecordStore.gather``: one snapshot, and a record both
        bring is read once)."""
        words = query if _reads_keywords(keyword_weight, vector) else None
        got = store.gather(
            namespace, query=words, vector=vector, k=pool, filter=filter, model_id=model_id
        )
        self._add(namespace, got)

    def _add(self, namespace: NamespaceLike, got: Gathered) -> None:
        found, cosines = got.records, got.cosines
        records, keyword, cosine, at = self.records, self.keyword, self.cosine, self.at
        for id, score in got.matched:
            if id in found:
                i = at.setdefault((namespace, id), len(records))
                if i == len(records):
                    records.append(found[id])
                    keyword.append(max(0.0, score))
                    cosine.append(cosines.get(id, 0.0))
                else:  # a namespace named twice
                    keyword[i], cosine[i] = max(0.0, score), cosines.get(id, 0.0)
        for id, score in got.nearest:
            if id in found:
                i = at.setdefault((namespace, id), len(records))
                if i == len(records):
                    records.append(found[id])
                    keyword.append(0.0)
                    cosine.append(score)
                else:
                    cosine[i] = score
