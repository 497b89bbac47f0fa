"""The SQLite query builder: filters to WHERE clauses, records to and from rows.

Every value travels as a ``?`` parameter; the SQL text is built only from the fixed
fragments below. Lists of ids or kinds go in as one JSON array read by ``json_each``,
so their length never meets SQLite's limit on parameters.
"""

from __future__ import annotations

import itertools
import json
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np

from memstack._json import JSON
from memstack.storage.types import Filter, MetadataIn, Order, Record, Vector, stored_record

__all__ = [
    "AFTER",
    "COLUMNS",
    "ORDER_BY",
    "UPSERT",
    "canonical_json",
    "decode_vector",
    "json_list",
    "keyset",
    "record_from_row",
    "record_params",
    "where",
]

COLUMNS = (
    "r.pk, r.namespace, r.id, r.text, r.metadata, r.kind, r.importance, r.created_at,"
    " r.updated_at, r.last_accessed_at, r.expires_at, r.embedding, r.context, r.valid_from,"
    " r.valid_to, r.superseded_by, r.closed_reason, r.provenance, r.provenance_detail"
)

ORDER_BY: dict[Order, str] = {
    "created_desc": "r.created_at DESC, r.id ASC",
    "created_asc": "r.created_at ASC, r.id ASC",
    "updated_desc": "r.updated_at DESC, r.id ASC",
}
AFTER: dict[Order, str] = {
    "created_desc": "AND r.created_at <= ? AND (r.created_at < ? OR r.id > ?)",
    "created_asc": "AND r.created_at >= ? AND (r.created_at > ? OR r.id > ?)",
    "updated_desc": "AND r.updated_at <= ? AND (r.updated_at < ? OR r.id > ?)",
}
"""Keyset paging: the rows after ``(key, id)`` in ``ORDER_BY``'s order; its parameters
are ``key, key, id`` (the first bound lets the time index narrow the scan)."""


def keyset(order: Order, after: tuple[float, str] | None) -> tuple[str, list[Any]]:
    """The ``AFTER`` condition of ``order`` and its parameters; none without ``after``."""
    if after is None:
        return "", []
    return AFTER[order], [after[0], after[0], after[1]]


UPSERT = """
INSERT INTO records (namespace, id, text, metadata, kind, importance, created_at,
                     updated_at, last_accessed_at, expires_at, embedding, dim, context,
                     valid_from, valid_to, superseded_by, closed_reason, provenance,
                     provenance_detail)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (namespace, id) DO UPDATE SET
    text = excluded.text, metadata = excluded.metadata, kind = excluded.kind,
    importance = excluded.importance, created_at = excluded.created_at,
    updated_at = excluded.updated_at, last_accessed_at = excluded.last_accessed_at,
    expires_at = excluded.expires_at, embedding = excluded.embedding, dim = excluded.dim,
    context = excluded.context, valid_from = excluded.valid_from,
    valid_to = excluded.valid_to, superseded_by = excluded.superseded_by,
    closed_reason = excluded.closed_reason, provenance = excluded.provenance,
    provenance_detail = excluded.provenance_detail
"""

CURRENT = "(r.valid_to IS NULL OR r.valid_to > ?)"
"""A record valid at ``?`` (now): not closed, or closed only later."""

_INT64 = (-(2**63), 2**63 - 1)
_LITTLE_ENDIAN = sys.byteorder == "little"


def canonical_json(value: JSON) -> str:
    """Compact JSON with sorted keys: how metadata is stored and compared."""
    if not value and isinstance(value, dict):
        return "{}"  # most records' metadata, without the encoder's setup
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def json_list(values: Sequence[str]) -> str:
    return json.dumps(list(values), ensure_ascii=False)


def where(namespace: str, wanted: Filter, now: float) -> tuple[str, list[Any]]:
    """A WHERE clause (over alias ``r``) and its parameters."""
    conds = ["r.namespace = ?"]
    params: list[Any] = [namespace]
    if not wanted.include_expired:
        conds.append("(r.expires_at IS NULL OR r.expires_at > ?)")
        params.append(now)
    if wanted.as_of is not None:
        conds.append(f"coalesce(r.valid_from, r.created_at) <= ? AND {CURRENT}")
        params.extend([wanted.as_of, wanted.as_of])
    elif not wanted.include_superseded:
        conds.append(CURRENT)
        params.append(now)
    if wanted.closed_as_of is not None:
        conds.append("r.valid_to <= ?")
        params.append(wanted.closed_as_of)
    for column, values in (
        ("r.kind", wanted.kinds),
        ("r.id", wanted.ids),
        ("r.provenance", wanted.provenances),
        ("r.superseded_by", wanted.superseded_by),
    ):
        if values is not None:
            conds.append(f"{column} IN (SELECT value FROM json_each(?))")
            params.append(json_list(values))
    if wanted.created_after is not None:
        conds.append("r.created_at > ?")
        params.append(wanted.created_after)
    if wanted.created_before is not None:
        conds.append("r.created_at < ?")
        params.append(wanted.created_before)
    for clause, extra in _metadata(wanted):
        conds.append(clause)
        params.extend(extra)
    return " AND ".join(conds), params


def _metadata(wanted: Filter) -> list[tuple[str, list[Any]]]:
    """The conditions (and their parameters) of ``metadata`` and ``metadata_in``."""
    out: list[tuple[str, list[Any]]] = []
    for key, value in (wanted.metadata or {}).items():
        test, extra = _json_test(value)
        out.append(
            (
                f"EXISTS (SELECT 1 FROM json_each(r.metadata) AS m WHERE m.key = ? AND {test})",
                [key, *extra],
            )
        )
    return out + [_metadata_in(condition) for condition in wanted.metadata_in]


def _metadata_in(condition: MetadataIn) -> tuple[str, list[Any]]:
    """A condition that holds when the value at ``condition.path`` is one of its values:
    one ``json_each`` a key deep, each over the object the one before found (keys are
    compared as parameters: no JSON path to quote), the last one ``m`` for ``_json_test``."""
    aliases = [f"j{i}" for i in range(len(condition.path) - 1)] + ["m"]
    sources = ["json_each(r.metadata) AS " + aliases[0]] + [
        f"json_each({outer}.value) AS {inner}" for outer, inner in itertools.pairwise(aliases)
    ]
    conds = [f"{alias}.key = ?" for alias in aliases]
    conds += [f"{alias}.type = 'object'" for alias in aliases[:-1]]
    params: list[Any] = list(condition.path)
    tests: list[str] = []
    for value in condition.values:
        test, extra = _json_test(value)
        tests.append(f"({test})")
        params.extend(extra)
    conds.append("(" + (" OR ".join(tests) or "0") + ")")
    clause = f"EXISTS (SELECT 1 FROM {', '.join(sources)} WHERE {' AND '.join(conds)})"
    return clause, params


def _json_test(value: JSON) -> tuple[str, list[Any]]:
    """A condition on ``json_each`` row ``m`` that holds when its value equals ``value``."""
    if value is None:
        return "m.type = 'null'", []
    if isinstance(value, bool):
        return ("m.type = 'true'" if value else "m.type = 'false'"), []
    if isinstance(value, int | float):
        number = value if _INT64[0] <= value <= _INT64[1] else float(value)
        return "m.type IN ('integer', 'real') AND m.atom = ?", [number]
    if isinstance(value, str):
        return "m.type = 'text' AND m.atom = ?", [value]
    kind = "array" if isinstance(value, list) else "object"
    return f"m.type = '{kind}' AND m.value = ?", [canonical_json(value)]


def record_params(record: Record) -> tuple[Any, ...]:
    embedding = record.embedding
    return (
        record.namespace,
        record.id,
        record.text,
        canonical_json(record.metadata),
        record.kind,
        record.importance,
        record.created_at,
        record.updated_at,
        record.last_accessed_at,
        record.expires_at,
        None if embedding is None else _f4_bytes(embedding),
        None if embedding is None else int(embedding.shape[0]),
        record.context,
        record.valid_from,
        record.valid_to,
        record.superseded_by,
        record.closed_reason,
        record.provenance,
        record.provenance_detail,
    )


def _f4_bytes(vector: Vector) -> bytes:
    """Little-endian float32 bytes: the array's own on a little-endian machine (checked
    vectors are float32), without the copy ``astype`` makes."""
    if _LITTLE_ENDIAN and vector.dtype == np.float32:
        return vector.tobytes()
    return vector.astype("<f4").tobytes()


def record_from_row(row: Sequence[Any]) -> Record:
    """A record from a row of ``COLUMNS`` (``pk`` first, then the record's fields)."""
    blob = row[11]
    return stored_record(
        {
            "namespace": row[1],
            "id": row[2],
            "text": row[3],
            "metadata": {} if row[4] == "{}" else json.loads(row[4]),
            "kind": row[5],
            "importance": row[6],
            "created_at": row[7],
            "updated_at": row[8],
            "last_accessed_at": row[9],
            "expires_at": row[10],
            "embedding": None if blob is None else decode_vector(blob),
            "context": row[12],
            "valid_from": row[13],
            "valid_to": row[14],
            "superseded_by": row[15],
            "closed_reason": row[16],
            "provenance": row[17],
            "provenance_detail": row[18],
        }
    )


def decode_vector(blob: bytes) -> np.ndarray[Any, np.dtype[np.float32]]:
    """A read-only float32 array over a stored little-endian BLOB (a view of the bytes,
    which are immutable, on a little-endian machine; a read-only copy elsewhere)."""
    if _LITTLE_ENDIAN:
        return np.frombuffer(blob, dtype=np.float32)
    array = np.frombuffer(blob, dtype="<f4").astype(np.float32)
    array.flags.writeable = False
    return array
