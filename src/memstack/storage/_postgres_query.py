"""The PostgreSQL query builder: SQL text with ``%s`` parameters for psycopg.

Values always travel as parameters. The only name spliced into SQL text is the schema,
which ``quote_schema`` accepts only as a plain lower-case identifier and then quotes.
Vectors travel as pgvector's text form (``'[1,2,3]'::vector``), so the ``pgvector``
Python package is not needed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from memstack._json import JSON, dumps
from memstack.errors import ConfigError
from memstack.storage.types import Filter, Order, Record, Vector

__all__ = [
    "ORDER_BY",
    "columns",
    "quote_schema",
    "record_from_row",
    "record_params",
    "tsquery",
    "upsert_sql",
    "vector_text",
    "where",
]

_IDENTIFIER = re.compile(r"[a-z_][a-z0-9_]{0,62}")

ORDER_BY: dict[Order, str] = {
    "created_desc": 'r.created_at DESC, r.id COLLATE "C" DESC',
    "created_asc": 'r.created_at ASC, r.id COLLATE "C" ASC',
    "updated_desc": 'r.updated_at DESC, r.id COLLATE "C" DESC',
}


def quote_schema(schema: str) -> str:
    if not isinstance(schema, str) or not _IDENTIFIER.fullmatch(schema):
        raise ConfigError(
            f"schema must be a lower-case SQL identifier ([a-z_][a-z0-9_]*, at most 63 "
            f"characters); got {schema!r}."
        )
    return f'"{schema}"'


def columns() -> str:
    return (
        "r.namespace, r.id, r.text, r.metadata, r.kind, r.importance, r.created_at,"
        " r.updated_at, r.last_accessed_at, r.expires_at, r.embedding::text"
    )


def upsert_sql(schema: str) -> str:
    return f"""
INSERT INTO {schema}.records (namespace, id, text, metadata, kind, importance, created_at,
                              updated_at, last_accessed_at, expires_at, embedding, dim)
VALUES (%s, %s, %s, %s::jsonb, %s, %s, %s, %s, %s, %s, %s::vector, %s)
ON CONFLICT (namespace, id) DO UPDATE SET
    text = EXCLUDED.text, metadata = EXCLUDED.metadata, kind = EXCLUDED.kind,
    importance = EXCLUDED.importance, created_at = EXCLUDED.created_at,
    updated_at = EXCLUDED.updated_at, last_accessed_at = EXCLUDED.last_accessed_at,
    expires_at = EXCLUDED.expires_at, embedding = EXCLUDED.embedding, dim = EXCLUDED.dim
"""


def where(namespace: str, wanted: Filter, now: float) -> tuple[str, list[Any]]:
    """A WHERE clause over alias ``r`` and its parameters."""
    conds = ["r.namespace = %s"]
    params: list[Any] = [namespace]
    if not wanted.include_expired:
        conds.append("(r.expires_at IS NULL OR r.expires_at > %s)")
        params.append(now)
    if wanted.kinds is not None:
        conds.append("r.kind = ANY(%s::text[])")
        params.append(list(wanted.kinds))
    if wanted.ids is not None:
        conds.append("r.id = ANY(%s::text[])")
        params.append(list(wanted.ids))
    if wanted.created_after is not None:
        conds.append("r.created_at > %s")
        params.append(wanted.created_after)
    if wanted.created_before is not None:
        conds.append("r.created_at < %s")
        params.append(wanted.created_before)
    for key, value in (wanted.metadata or {}).items():
        conds.append("(r.metadata -> %s) = %s::jsonb")
        params.extend([key, dumps(value)])
    return " AND ".join(conds), params


def tsquery(words: Sequence[str]) -> tuple[str, list[str]]:
    """A tsquery expression matching any of ``words`` (each stemmed; stop words drop out)."""
    sql = " || ".join("plainto_tsquery('english', %s)" for _ in words)
    return sql, list(words)


def vector_text(vector: Vector) -> str:
    """pgvector's text form; numpy's shortest float32 digits read back exactly."""
    return "[" + ",".join(map(str, vector)) + "]"


def record_params(record: Record) -> tuple[Any, ...]:
    embedding = record.embedding
    return (
        record.namespace,
        record.id,
        record.text,
        dumps(record.metadata),
        record.kind,
        record.importance,
        record.created_at,
        record.updated_at,
        record.last_accessed_at,
        record.expires_at,
        None if embedding is None else vector_text(embedding),
        None if embedding is None else int(embedding.shape[0]),
    )


def record_from_row(row: Sequence[Any]) -> Record:
    """A record from a row that starts with ``columns()``."""
    metadata: dict[str, JSON] = row[3]
    return Record(
        namespace=row[0],
        id=row[1],
        text=row[2],
        metadata=metadata,
        kind=row[4],
        importance=row[5],
        created_at=row[6],
        updated_at=row[7],
        last_accessed_at=row[8],
        expires_at=row[9],
        embedding=None if row[10] is None else parse_vector(row[10]),
    )


def parse_vector(text: str) -> Vector:
    array = np.array(text[1:-1].split(","), dtype=np.float32)
    array.flags.writeable = False
    return array
