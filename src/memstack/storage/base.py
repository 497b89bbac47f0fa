"""The RecordStore protocol every backend implements, and helpers written once above it."""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy.typing as npt

from memstack.errors import NotFound
from memstack.storage.types import Filter, Order, Record, ScoredRecord

__all__ = ["RecordStore", "get_one"]


@runtime_checkable
class RecordStore(Protocol):
    """Records scoped by namespace, searched by vector, by keywords and by filters.

    Implementations are synchronous and safe to call from several threads at once.
    Every call validates its arguments first and raises ``InvalidInput`` naming the
    field; a rejected write changes nothing. Reads hide expired records (``expires_at``
    at or before the store clock's now) unless ``Filter(include_expired=True)``.
    A record in one namespace is never returned by a call on another.
    """

    def setup(self) -> None:
        """Create or migrate the schema; safe to call any number of times."""
        ...

    def close(self) -> None:
        """Release connections (and a pool the store opened itself)."""
        ...

    def upsert(self, records: Sequence[Record]) -> None:
        """Insert each record, or replace the one with the same ``(namespace, id)``.

        All or nothing. Within one namespace every embedding has the dimension of
        those already stored. If a batch repeats a key, the last one wins.
        """
        ...

    def get(self, namespace: str, ids: Sequence[str]) -> builtins.list[Record]:
        """The records with these ids that exist, in the order asked, without repeats."""
        ...

    def delete(self, namespace: str, ids: Sequence[str]) -> int:
        """Delete these records (expired ones too); return how many existed."""
        ...

    def delete_namespace(self, namespace: str) -> int:
        """Delete every record of ``namespace``; return how many there were."""
        ...

    def list(
        self,
        namespace: str,
        *,
        filter: Filter | None = None,
        limit: int = 100,
        offset: int = 0,
        order: Order = "created_desc",
    ) -> builtins.list[Record]:
        """A page of records; ``limit`` is 1..10000, ``offset`` >= 0."""
        ...

    def count(self, namespace: str, filter: Filter | None = None) -> int:
        """How many records ``list`` would page through."""
        ...

    def vector_search(
        self,
        namespace: str,
        vector: npt.ArrayLike,
        *,
        k: int,
        filter: Filter | None = None,
    ) -> builtins.list[ScoredRecord]:
        """The ``k`` records nearest ``vector``, scored by exact cosine, best first.

        Records without an embedding are ignored. A namespace with no embeddings
        yields ``[]``; a vector of another dimension than the namespace's is
        ``InvalidInput``.
        """
        ...

    def text_search(
        self,
        namespace: str,
        query: str,
        *,
        k: int,
        filter: Filter | None = None,
    ) -> builtins.list[ScoredRecord]:
        """The ``k`` records most relevant to the words of ``query``, best first.

        ``query`` is plain user text: any word may match (OR semantics), operators
        and punctuation have no meaning, and a query without words yields ``[]``.
        """
        ...

    def touch(self, namespace: str, ids: Sequence[str], at: float) -> None:
        """Set ``last_accessed_at`` of these records to ``at``; unknown ids are ignored."""
        ...

    def namespaces(self, prefix: str = "") -> builtins.list[str]:
        """Sorted namespaces starting with ``prefix`` that hold an unexpired record."""
        ...

    def prune_expired(self, now: float) -> int:
        """Delete, in every namespace, records with ``expires_at <= now``; return how many."""
        ...


def get_one(store: RecordStore, namespace: str, id: str) -> Record:
    """The record ``id`` of ``namespace``, or ``NotFound``."""
    found = store.get(namespace, [id])
    if not found:
        raise NotFound(f"no record {id!r} in namespace {namespace!r}.", field="id")
    return found[0]
