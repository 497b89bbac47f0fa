"""Builders and snapshots shared by the storage tests."""

from __future__ import annotations

from typing import Any

import numpy as np

from memstack.storage import Filter, Record, RecordStore

T0 = 1_700_000_000.0  # ManualClock's default start


def rec(
    id: str,
    namespace: str = "ns",
    text: str | None = None,
    *,
    embedding: Any = None,
    created_at: float = T0,
    updated_at: float | None = None,
    **fields: Any,
) -> Record:
    """A record with sensible defaults; ``embedding`` may be any list of numbers."""
    return Record(
        id=id,
        namespace=namespace,
        text=f"text of {id}" if text is None else text,
        created_at=created_at,
        updated_at=created_at if updated_at is None else updated_at,
        embedding=_vector(embedding),
        **fields,
    )


def key(record: Record) -> tuple[Any, ...]:
    """Everything a record holds, embedding included, as a comparable tuple."""
    embedding = None if record.embedding is None else tuple(record.embedding.tolist())
    return (record, embedding)


def snapshot(store: RecordStore, namespaces: list[str]) -> list[tuple[Any, ...]]:
    """Every stored record of these namespaces, expired ones too."""
    everything = Filter(include_expired=True, include_superseded=True)
    return [
        key(r)
        for ns in namespaces
        for r in store.list(ns, filter=everything, limit=10_000, order="created_asc")
    ]


def ids(records: list[Record]) -> list[str]:
    return [r.id for r in records]


def _vector(value: Any) -> Any:
    """Lists become float32 arrays; arrays pass through untouched, odd dtypes included."""
    if value is None or isinstance(value, np.ndarray):
        return value
    return np.asarray(value, dtype=np.float32)
