"""The values the record store keeps and returns: records, scored hits, filters."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from memstack._json import JSON, copy_json

__all__ = [
    "Filter",
    "MetadataIn",
    "Order",
    "Record",
    "ScoredRecord",
    "Vector",
    "keyword_text",
    "own_copy",
    "own_metadata",
    "stored_record",
]

Vector = npt.NDArray[np.float32]
"""A 1-D float32 embedding."""

Order = Literal["created_desc", "created_asc", "updated_desc"]
"""How ``RecordStore.list`` sorts; exact ties are ordered by ``id`` ascending, in every
order (code point order: SQLite's BINARY collation, PostgreSQL's ``COLLATE "C"``)."""


@dataclass(frozen=True, kw_only=True)
class Record:
    """One stored memory: text, metadata, timestamps and an optional embedding.

    Records are keyed by ``(namespace, id)``. Times are seconds since the Unix epoch.
    ``embedding`` is left out of ``==`` and ``repr`` (arrays do not compare to a bool);
    the store hands back read-only float32 arrays.
    """

    id: str
    namespace: str
    text: str
    metadata: dict[str, JSON] = field(default_factory=dict)
    kind: str | None = None
    importance: float = 0.5
    created_at: float
    updated_at: float
    last_accessed_at: float | None = None
    expires_at: float | None = None
    embedding: Vector | None = field(default=None, compare=False, repr=False)
    context: str | None = None
    """Text that helps find the record but is not the record: for a conversation turn, its
    neighbouring turns and the session date. Keyword search reads it beside ``text``; it
    is never rendered as the memory itself."""
    valid_from: float | None = None
    """Since when what the record says is true; None: since ``created_at``."""
    valid_to: float | None = None
    """Until when it was true: None while it is current. A closed record is kept (history)
    but reads leave it out unless they ask for ``Filter.as_of`` or ``include_superseded``."""
    superseded_by: str | None = None
    """The id of the record that replaced this one, when one did."""
    closed_reason: str | None = None
    """Why ``valid_to`` was set: ``superseded``, ``deleted`` or ``evicted``."""
    provenance: str | None = None
    """How it was learned: ``user_stated``, ``extracted``, ``tool_output``, ``imported``."""
    provenance_detail: str | None = None
    """More on ``provenance``: the extraction model, the tool, the source imported from."""

    def keyword_text(self) -> str:
        """What keyword search indexes: the text, then the context."""
        return keyword_text(self.text, self.context)

    @property
    def hidden_at(self) -> float | None:
        """When default reads stop returning the record: it expires or stops being valid."""
        if self.valid_to is None:
            return self.expires_at
        if self.expires_at is None:
            return self.valid_to
        return min(self.expires_at, self.valid_to)


def stored_record(values: dict[str, Any]) -> Record:
    """A ``Record`` of every one of its fields, as a backend reads them back (checked when
    written)."""
    return Record(**values)


def own_copy(record: Record) -> Record:
    """``record`` with metadata of its own (``own_metadata``): a store hands these out, so
    changing one never changes what it holds."""
    return replace(record, metadata=own_metadata(record.metadata))


def own_metadata(metadata: dict[str, JSON]) -> dict[str, JSON]:
    """A copy of ``metadata`` (JSON, checked when written), deep only when it nests lists
    or objects."""
    for value in metadata.values():
        if isinstance(value, dict | list):
            return {key: copy_json(item) for key, item in metadata.items()}
    return metadata.copy()


def keyword_text(text: str, context: str | None) -> str:
    """What keyword search indexes of a record: its text, then its context."""
    return text if not context else f"{text}\n{context}"


@dataclass(frozen=True, kw_only=True)
class ScoredRecord:
    """A search hit: the record and its score, higher is better.

    ``vector_search`` scores are cosine similarities in [-1, 1]; ``text_search``
    scores are keyword relevance (BM25-like, only comparable within one result list).
    """

    record: Record
    score: float


@dataclass(frozen=True, kw_only=True)
class MetadataIn:
    """A condition on one metadata value, at any depth: the value at ``path`` (keys from
    the top of the metadata down) equals one of ``values``, JSON scalars compared as
    ``Filter.metadata`` compares them. A record without that path never matches, nor
    one where a key on the way names anything but an object."""

    path: tuple[str, ...]
    values: tuple[JSON, ...]


@dataclass(frozen=True, kw_only=True)
class Filter:
    """Which records a read may return; every given condition must hold.

    - ``kinds``: the record's ``kind`` is one of these (records without a kind never match).
    - ``metadata``: for each key, the record's top-level metadata value equals this JSON
      value (``True`` is not ``1``; ``1`` equals ``1.0``).
    - ``metadata_in``: every one of these conditions holds (``MetadataIn``: a value at
      any depth is one of a few scalars).
    - ``created_after`` / ``created_before``: exclusive bounds on ``created_at``.
    - ``ids``: the record's id is one of these.
    - ``include_expired``: reads hide records whose ``expires_at`` is at or before the
      store clock's now; set this to see them until ``prune_expired`` removes them.
    - validity: reads return current records (``valid_to`` unset or after now) unless
      ``as_of`` asks for those valid at that moment (``valid_from <= as_of < valid_to``),
      or ``include_superseded`` for every version, current or closed. Not both.
    - ``provenances``: the record's ``provenance`` is one of these.
    - ``superseded_by``: the record was replaced by one of these ids (a closed version,
      so this needs ``include_superseded`` or an ``as_of`` to find anything).
    - ``closed_as_of``: the record had stopped being valid by that moment
      (``valid_to <= closed_as_of``): the versions a read ``as_of`` it leaves out as
      replaced or retired. Needs ``include_superseded``.

    An empty ``kinds``, ``ids``, ``provenances`` or ``superseded_by`` tuple matches nothing.
    """

    kinds: tuple[str, ...] | None = None
    metadata: dict[str, JSON] | None = None
    created_after: float | None = None
    created_before: float | None = None
    ids: tuple[str, ...] | None = None
    include_expired: bool = False
    as_of: float | None = None
    include_superseded: bool = False
    provenances: tuple[str, ...] | None = None
    superseded_by: tuple[str, ...] | None = None
    closed_as_of: float | None = None
    metadata_in: tuple[MetadataIn, ...] = ()

    @property
    def narrows(self) -> bool:
        """Whether the filter keeps other rows than the current, unexpired ones (a search
        with such a filter selects its rows in the database and scans them exactly)."""
        return (
            any(
                v is not None
                for v in (
                    self.kinds,
                    self.ids,
                    self.created_after,
                    self.created_before,
                    self.as_of,
                    self.provenances,
                    self.superseded_by,
                    self.closed_as_of,
                )
            )
            or bool(self.metadata)
            or bool(self.metadata_in)
            or self.include_expired
            or self.include_superseded
        )
