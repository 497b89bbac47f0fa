"""LangGraph's search and namespace listing, answered from a RecordStore.

A search covers every namespace under its prefix. With a query it ranks by cosine
(embedder given: an item scores the best of its field vectors) or by keyword relevance
(no embedder), best first, and items that were stored without a vector (``index=False``)
fill the page after the ranked ones, as in LangGraph's own stores; without a query it
lists the newest updates first. Plain ``{"field": value}`` conditions are matched by the
storage backend; operators and nested values are checked here, fetching more candidates
until the page is full.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from langgraph.store.base import ListNamespacesOp, SearchOp

from memstack.embeddings import Vectors
from memstack.storage import Filter, Record, RecordStore, ScoredRecord
from memstack.storage._validate import MAX_LIMIT

from . import _values as v
from ._vectors import INDEXED, vector_namespace

__all__ = ["Hit", "Searcher"]

Hit = tuple[Record, float | None]
Fetch = Callable[[int], tuple[list[Hit], bool]]
"""The first hits of ``k`` fetched, and whether there were fewer than ``k`` to fetch."""


@dataclass(frozen=True, kw_only=True)
class Searcher:
    records: RecordStore
    name: str
    model_id: str | None

    # -- namespaces ---------------------------------------------------------------------

    def namespaces(self, prefix: Sequence[str]) -> list[tuple[str, ...]]:
        """The LangGraph namespaces holding an unexpired item, at or under ``prefix``."""
        base = v.to_namespace(self.name, prefix)
        wanted = base.encode() if prefix else base.prefix()
        found = self.records.namespaces(wanted)
        return [v.labels_of(n) for n in found if n == base.encode() or n.startswith(base.prefix())]

    def list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        conditions = op.match_conditions or ()
        literal: list[str] = []
        for condition in conditions:
            if condition.match_type == "prefix":
                literal = _literal_head(condition.path)
                break
        found = [
            labels
            for labels in self.namespaces(literal)
            if all(v.namespace_matches(c, labels) for c in conditions)
        ]
        if op.max_depth is not None:
            found = list({labels[: op.max_depth] for labels in found})
        return sorted(found)[op.offset : op.offset + op.limit]

    # -- search -------------------------------------------------------------------------

    def search(self, op: SearchOp, vector: Vectors | None) -> list[Hit]:
        """The page of ``(record, score)`` hits; scores are None without a query.
        ``vector`` is the query's embedding when the store has an embedder."""
        want = op.offset + op.limit
        hits: list[Hit] = []
        exhausted = True
        for namespace in self.namespaces(op.namespace_prefix):
            found, done = _first(self._fetcher(namespace, op, vector), op.filter, want)
            hits.extend(found)
            exhausted = exhausted and done
        if op.query:
            hits.sort(key=lambda h: (-(h[1] or 0.0), h[0].id))
        else:
            hits.sort(key=lambda h: (-h[0].updated_at, h[0].id))
        page = hits[op.offset : want]
        if op.query and vector is not None and exhausted and len(page) < op.limit:
            skip = max(0, op.offset - len(hits))
            page += self._unembedded(op)[skip : skip + op.limit - len(page)]
        return page

    def _fetcher(self, labels: tuple[str, ...], op: SearchOp, vector: Vectors | None) -> Fetch:
        namespace = v.to_namespace(self.name, labels).encode()
        wanted = Filter(metadata=v.pushed_filter(op.filter))
        query = op.query
        if not query:
            return lambda k: _page(
                self.records.list(namespace, filter=wanted, limit=k, order="updated_desc"), k
            )
        if vector is None:
            return lambda k: _page(
                self.records.text_search(namespace, query, k=k, filter=wanted), k
            )
        return lambda k: self._best_vectors(labels, vector, k, wanted)

    def _best_vectors(
        self, labels: tuple[str, ...], vector: Vectors, k: int, wanted: Filter
    ) -> tuple[list[Hit], bool]:
        """The items of the ``k`` nearest vectors, each scored by its best vector."""
        found = self.records.vector_search(
            vector_namespace(self.name, labels), vector, k=k, filter=wanted, model_id=self.model_id
        )
        best: dict[str, float] = {}
        for hit in found:  # best first, so the first vector of an item is its best
            best.setdefault(hit.record.kind or "", hit.score)
        items = self.records.get(v.to_namespace(self.name, labels), list(best))
        hits: list[Hit] = [(item, best[item.id]) for item in items]
        hits.sort(key=lambda h: (-(h[1] or 0.0), h[0].id))  # ties in key order, as pages need
        return hits, len(found) < k

    def _unembedded(self, op: SearchOp) -> list[Hit]:
        """Items under the prefix stored without a vector, newest update first."""
        wanted = Filter(metadata=v.pushed_filter(op.filter))
        found = [r for ns in self.namespaces(op.namespace_prefix) for r in self._every(ns, wanted)]
        found.sort(key=lambda r: (-r.updated_at, r.id))
        return [(r, None) for r in found if r.kind != INDEXED and v.matches(r.metadata, op.filter)]

    def _every(self, labels: tuple[str, ...], wanted: Filter) -> list[Record]:
        namespace = v.to_namespace(self.name, labels)
        out: list[Record] = []
        while True:
            rows = self.records.list(
                namespace, filter=wanted, limit=MAX_LIMIT, offset=len(out), order="updated_desc"
            )
            out += rows
            if len(rows) < MAX_LIMIT:
                return out


def _page(found: Sequence[Record | ScoredRecord], k: int) -> tuple[list[Hit], bool]:
    hits: list[Hit] = [(r, None) if isinstance(r, Record) else (r.record, r.score) for r in found]
    return hits, len(found) < k


def _first(fetch: Fetch, filter: dict[str, object] | None, want: int) -> tuple[list[Hit], bool]:
    """The first ``want`` hits that pass ``filter``, and whether no more hits exist."""
    k = min(max(want, 10), MAX_LIMIT)
    while True:
        hits, done = fetch(k)
        kept = [h for h in hits if v.matches(h[0].metadata, filter)]
        if len(kept) >= want or done or k == MAX_LIMIT:
            return kept[:want], done
        k = min(k * 4, MAX_LIMIT)


def _literal_head(path: Sequence[str]) -> list[str]:
    """The labels of a prefix before its first wildcard."""
    head: list[str] = []
    for label in path:
        if label == "*":
            break
        head.append(label)
    return head
