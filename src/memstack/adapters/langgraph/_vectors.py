"""An item's field vectors: one record per indexed text, as LangGraph keeps them.

LangGraph embeds each text an item's index fields hold (``"items[*].value"`` gives one
text per element) and a search scores an item by the best of its vectors. A record has
one embedding, so each vector is a record of its own in the ``lgv`` namespace matching
the item's: its ``kind`` is the item's key (so one read finds all of an item's vectors),
and its metadata, times and expiry are the item's (so a filter is checked where the
vectors are ranked, and vectors expire with their item).
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Mapping, Sequence
from typing import Final

import numpy as np

from memstack._json import JSON
from memstack.embeddings import Vectors
from memstack.storage import Filter, Namespace, Record, RecordStore
from memstack.storage._validate import MAX_LIMIT

from . import _values as v

__all__ = [
    "INDEXED",
    "field_texts",
    "vector_namespace",
    "vector_records",
    "vectors_of",
]

INDEXED: Final = "lg:indexed"
"""The ``kind`` of an item record that has vectors (items without are unscored hits)."""


def vector_namespace(name: str, labels: Sequence[str]) -> Namespace:
    return Namespace("lgv", name, *labels)


def field_texts(value: Mapping[str, JSON], paths: Sequence[v.Path]) -> list[str]:
    """Each non-empty text at ``paths``, one per vector, in path order."""
    return [text for path in paths for text in v.texts_at(value, path) if text]


def vector_records(item: Record, texts: Sequence[str], matrix: Vectors) -> list[Record]:
    """The vector records of ``item`` (rows of zero length, which match nothing, left out)."""
    encoded = Namespace("lgv", *Namespace.decode(item.namespace).parts).encode()
    digest = hashlib.blake2b(item.id.encode(), digest_size=16).hexdigest()
    return [
        dataclasses.replace(
            item, id=f"{i}:{digest}", namespace=encoded, text=text, kind=item.id, embedding=row
        )
        for i, (text, row) in enumerate(zip(texts, matrix, strict=True))
        if float(np.dot(row, row)) > 0.0
    ]


def vectors_of(
    records: RecordStore, name: str, labels: Sequence[str], keys: Sequence[str]
) -> list[Record]:
    """Every vector record of these items, expired ones too."""
    if not keys:  # no items, no read
        return []
    namespace = vector_namespace(name, labels)
    wanted = Filter(kinds=tuple(keys), include_expired=True)
    out: list[Record] = []
    while True:
        rows = records.list(namespace, filter=wanted, limit=MAX_LIMIT, offset=len(out))
        out += rows
        if len(rows) < MAX_LIMIT:
            return out
