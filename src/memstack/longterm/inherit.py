"""Supersession carries the match: a memory is found through the versions it replaced.

"Bob lives in Lisbon" superseded by "Bob moved from Lisbon to Berlin": asked "Where does
Bob live?", the question matches the closed Lisbon version best, and recall hides it. So a
recall's candidates are gathered twice in one fusion (``fused_candidates``, one keyword
scale): the memories it may return, and the versions closed by then. Each closed version
is followed along ``superseded_by`` to the version valid now (or at ``as_of``), which
takes the closed version's relevance when that is higher (``via`` names it). Closed
versions are never returned; one whose chain ends deleted or evicted gives nothing.

Most collections hold no closed version: one count first, and recall reads as before.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from memstack.storage import Filter, Record, RecordStore
from memstack.storage.hybrid import Candidates, fused_candidates
from memstack.storage.versions import valid_successors

__all__ = ["Carried", "carried_candidates"]


@dataclass(frozen=True, kw_only=True)
class Carried(Candidates):
    """``Candidates`` of memories a recall may return, with what each carries."""

    via: list[str | None] | None = None
    """Per candidate, the id of the closed version whose match it carries (its
    ``similarity``, ``keyword`` and ``relevance`` are that version's), else None; None
    when no candidate carries one."""


@dataclass(frozen=True, kw_only=True)
class _Closed:
    """Which closed versions count: those closed by ``at`` (now, or the ``as_of`` read)."""

    filter: Filter
    at: float
    as_of: bool


def carried_candidates(
    store: RecordStore,
    namespace: str,
    *,
    query: str,
    vector: npt.NDArray[np.float32],
    pool: int,
    keyword_weight: float,
    filter: Filter | None,
    model_id: str | None,
) -> Carried:
    """``fused_candidates`` of ``namespace`` under ``filter``, each memory carrying the
    match of the versions it replaced. ``filter`` is a recall's: ``as_of``,
    ``include_superseded`` (every version on its own, as ``fused_candidates`` gives
    them), ``provenances``."""
    closed = _closed(store, filter)
    if closed is not None and store.count(namespace, closed.filter) == 0:
        closed = None
    filters = [filter] if closed is None else [filter, closed.filter]
    found = fused_candidates(
        store,
        [namespace] * len(filters),
        query=query,
        vector=vector,
        pool=pool,
        keyword_weight=keyword_weight,
        filters=filters,
        model_id=model_id,
    )
    if closed is not None:
        return _carried(store, namespace, found, filter, closed)
    return Carried(
        records=found.records,
        similarity=found.similarity,
        keyword=found.keyword,
        relevance=found.relevance,
    )


def _closed(store: RecordStore, wanted: Filter | None) -> _Closed | None:
    """The closed versions a read under ``wanted`` leaves out; None when it leaves none
    out (``include_superseded``)."""
    if wanted is not None and wanted.include_superseded:
        return None
    as_of = None if wanted is None else wanted.as_of
    at = store.clock.now() if as_of is None else as_of
    return _Closed(
        filter=Filter(include_superseded=True, closed_as_of=at), at=at, as_of=as_of is not None
    )


def _carried(
    store: RecordStore, namespace: str, both: Candidates, wanted: Filter | None, closed: _Closed
) -> Carried:
    """``both``'s memories without its closed versions, each valid successor taking the
    best match among the closed versions that lead to it."""
    records, at = both.records, closed.at
    shut = [i for i, r in enumerate(records) if r.valid_to is not None and r.valid_to <= at]
    successors = valid_successors(
        store,
        namespace,
        [records[i] for i in shut],
        at=at,
        as_of=closed.as_of,
        known={r.id: r for r in records},
    )
    best: dict[str, int] = {}  # successor id -> the row of the closed version it carries
    for i in shut:
        successor = successors.get(records[i].id)
        if successor is not None:
            j = best.get(successor.id)
            if j is None or _better(both, i, j):
                best[successor.id] = i
    open_rows = sorted(set(range(len(records))) - set(shut))
    present = {records[i].id for i in open_rows}
    outside = {s.id: s for s in successors.values() if s.id in best and s.id not in present}
    extra = _confirmed(wanted, outside.values())
    return _columns(both, open_rows, extra, best)


def _better(found: Candidates, i: int, j: int) -> bool:
    """Whether row ``i`` matched better than row ``j`` (equal: the smaller id)."""
    a, b = found.relevance[i], found.relevance[j]
    return a > b or (a == b and found.records[i].id < found.records[j].id)


def _confirmed(wanted: Filter | None, successors: Iterable[Record]) -> list[Record]:
    """The ``successors`` outside the candidates that the recall's filter lets through:
    the walk found them valid (now or ``as_of``), so what is left is its provenances."""
    learned = None if wanted is None else wanted.provenances
    return [r for r in successors if learned is None or r.provenance in learned]


def _columns(
    both: Candidates, rows: Sequence[int], extra: Sequence[Record], best: dict[str, int]
) -> Carried:
    """The columns of ``rows`` of ``both`` and of ``extra`` (successors found only through
    a closed version: they take its match), each carrying its best closed version's match
    where that is higher."""
    records = [both.records[i] for i in rows] + list(extra)
    taken = list(rows) + [best[r.id] for r in extra]
    via: list[str | None] = [None] * len(rows) + [both.records[best[r.id]].id for r in extra]
    for n, i in enumerate(rows):
        j = best.get(both.records[i].id)
        if j is not None and both.relevance[j] > both.relevance[i]:
            taken[n], via[n] = j, both.records[j].id
    keyword = both.keyword
    return Carried(
        records=records,
        similarity=[both.similarity[i] for i in taken],
        keyword=None if keyword is None else [keyword[i] for i in taken],
        relevance=[both.relevance[i] for i in taken],
        via=via,
    )
