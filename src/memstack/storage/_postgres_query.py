"""The PostgreSQL query builder: SQL text with ``%s`` parameters for psycopg.

Values always travel as parameters. Spliced into SQL text are only the schema, which
``quote_schema`` accepts only as a plain lower-case identifier and then quotes, and
integers of ours (a dimension, a candidate cap). Vectors travel in pgvector's binary form
(``%b``, with the ``pgvector`` package's psycopg adapter registered on the connection),
never as text: casting every scanned vector to text took most of a search's time.

Searches return ids and scores only; the store fetches the winners' rows after.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from memstack._json import JSON, dumps
from memstack.errors import ConfigError
from memstack.storage.types import Filter, MetadataIn, Order, Record, Vector, stored_record

__all__ = [
    "AFTER",
    "ORDER_BY",
    "ann_vector_sql",
    "columns",
    "exact_vector_sql",
    "keyset",
    "nearest_sql",
    "quote_schema",
    "record_from_row",
    "record_params",
    "rows_sql",
    "text_capped_sql",
    "text_sql",
    "tsquery",
    "upsert_params",
    "upsert_sql",
    "where",
]

_IDENTIFIER = re.compile(r"[a-z_][a-z0-9_]{0,62}")

ORDER_BY: dict[Order, str] = {
    "created_desc": 'r.created_at DESC, r.id COLLATE "C" ASC',
    "created_asc": 'r.created_at ASC, r.id COLLATE "C" ASC',
    "updated_desc": 'r.updated_at DESC, r.id COLLATE "C" ASC',
}
AFTER: dict[Order, str] = {
    "created_desc": 'AND r.created_at <= %s AND (r.created_at < %s OR r.id COLLATE "C" > %s)',
    "created_asc": 'AND r.created_at >= %s AND (r.created_at > %s OR r.id COLLATE "C" > %s)',
    "updated_desc": 'AND r.updated_at <= %s AND (r.updated_at < %s OR r.id COLLATE "C" > %s)',
}
"""Keyset paging: the rows after ``(key, id)`` in ``ORDER_BY``'s order; its parameters
are ``key, key, id`` (the first bound lets the time index narrow the scan)."""


def keyset(order: Order, after: tuple[float, str] | None) -> tuple[str, list[Any]]:
    """The ``AFTER`` condition of ``order`` and its parameters; none without ``after``."""
    if after is None:
        return "", []
    return AFTER[order], [after[0], after[0], after[1]]


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
        " r.updated_at, r.last_accessed_at, r.expires_at, r.embedding, r.context,"
        " r.valid_from, r.valid_to, r.superseded_by, r.closed_reason, r.provenance,"
        " r.provenance_detail"
    )


_UPSERTED = (
    ("namespace", "text"),
    ("id", "text"),
    ("text", "text"),
    ("metadata", "text"),
    ("kind", "text"),
    ("importance", "float8"),
    ("created_at", "float8"),
    ("updated_at", "float8"),
    ("last_accessed_at", "float8"),
    ("expires_at", "float8"),
    ("embedding", "vector"),
    ("dim", "int4"),
    ("context", "text"),
    ("valid_from", "float8"),
    ("valid_to", "float8"),
    ("superseded_by", "text"),
    ("closed_reason", "text"),
    ("provenance", "text"),
    ("provenance_detail", "text"),
)


def upsert_sql(schema: str) -> str:
    """Insert or replace many records in one statement: one array parameter per column
    (``upsert_params``), unnested into rows. Keys must be distinct (a statement updates a
    row once). One round trip for a whole batch, as fast as ``COPY`` into a staging table
    and one statement, without the staging table; ``executemany`` sent a statement per
    row."""
    names = ", ".join(name for name, _ in _UPSERTED)
    arrays = ", ".join(f"%{'b' if kind == 'vector' else 's'}::{kind}[]" for _, kind in _UPSERTED)
    values = ", ".join("u.metadata::jsonb" if n == "metadata" else f"u.{n}" for n, _ in _UPSERTED)
    updates = ", ".join(f"{n} = EXCLUDED.{n}" for n, _ in _UPSERTED[2:])
    return (
        f"INSERT INTO {schema}.records ({names}) SELECT {values}"
        f" FROM unnest({arrays}) AS u({names})"
        f" ON CONFLICT (namespace, id) DO UPDATE SET {updates}"
    )


def upsert_params(records: Sequence[Record]) -> list[list[Any]]:
    """The column arrays of ``upsert_sql`` for ``records``."""
    rows = [record_params(record) for record in records]
    return [list(column) for column in zip(*rows, strict=True)]


CURRENT = "(r.valid_to IS NULL OR r.valid_to > %s)"
"""A record valid at ``%s`` (now): not closed, or closed only later."""


def where(namespace: str, wanted: Filter, now: float) -> tuple[str, list[Any]]:
    """A WHERE clause over alias ``r`` and its parameters."""
    conds = ["r.namespace = %s"]
    params: list[Any] = [namespace]
    if not wanted.include_expired:
        conds.append("(r.expires_at IS NULL OR r.expires_at > %s)")
        params.append(now)
    if wanted.as_of is not None:
        conds.append(f"coalesce(r.valid_from, r.created_at) <= %s AND {CURRENT}")
        params.extend([wanted.as_of, wanted.as_of])
    elif not wanted.include_superseded:
        conds.append(CURRENT)
        params.append(now)
    if wanted.closed_as_of is not None:
        conds.append("r.valid_to <= %s")
        params.append(wanted.closed_as_of)
    for column, values in (
        ("r.provenance", wanted.provenances),
        ("r.superseded_by", wanted.superseded_by),
        ("r.kind", wanted.kinds),
        ("r.id", wanted.ids),
    ):
        if values is not None:
            conds.append(f"{column} = ANY(%s::text[])")
            params.append(list(values))
    for condition, bound in (
        ("r.created_at > %s", wanted.created_after),
        ("r.created_at < %s", wanted.created_before),
    ):
        if bound is not None:
            conds.append(condition)
            params.append(bound)
    for clause, extra in _metadata(wanted):
        conds.append(clause)
        params.extend(extra)
    return " AND ".join(conds), params


def _metadata(wanted: Filter) -> list[tuple[str, list[Any]]]:
    """The conditions (and their parameters) of ``metadata`` and ``metadata_in``."""
    out: list[tuple[str, list[Any]]] = [
        ("(r.metadata -> %s) = %s::jsonb", [key, dumps(value)])
        for key, value in (wanted.metadata or {}).items()
    ]
    return out + [_metadata_in(condition) for condition in wanted.metadata_in]


def _metadata_in(condition: MetadataIn) -> tuple[str, list[Any]]:
    """The value at ``condition.path`` is one of its values (jsonb compares numbers by
    value: 1 = 1.0, and true is not 1); every key on the way names an object (``#>``
    alone would read a key "0" as an array's first item)."""
    path = list(condition.path)
    if not condition.values:
        return "FALSE", []
    conds = ["jsonb_typeof(r.metadata #> %s::text[]) = 'object'" for _ in path[1:]]
    params: list[Any] = [path[:depth] for depth in range(1, len(path))]
    marks = ", ".join(["%s::jsonb"] * len(condition.values))
    conds.append(f"(r.metadata #> %s::text[]) IN ({marks})")
    params.extend([path, *map(dumps, condition.values)])
    return " AND ".join(conds), params


def tsquery(words: Sequence[str]) -> tuple[str, list[str]]:
    """A tsquery expression matching any of ``words`` (each stemmed; stop words drop out)."""
    sql = " || ".join("plainto_tsquery('english', %s)" for _ in words)
    return sql, list(words)


def rows_sql(schema: str, clause: str, limit: int) -> str:
    """How many rows match ``clause``, counting no further than ``limit``: an index walk
    of at most ``limit`` entries, however large the namespace."""
    return (
        f"SELECT count(*) FROM (SELECT 1 FROM {schema}.records r WHERE {clause}"
        f" LIMIT {int(limit)}) s"
    )


def exact_vector_sql(schema: str, clause: str) -> str:
    """Ids and cosines of the ``%s`` nearest rows, computed for every row of ``clause``
    (parameters: query vector, clause's, the dimension, k). The untyped ``embedding``
    matches no vector index, so this is always exact. Each row's distance is computed once
    (a score beside the sort key computed it twice, and the scan took longer)."""
    return (
        "SELECT id, 1 - distance FROM (SELECT r.id, r.embedding <=> v.q AS distance"
        f" FROM {schema}.records r, (SELECT %b::vector AS q) v"
        f" WHERE {clause} AND r.dim = %s"
        ' ORDER BY distance, r.id COLLATE "C" LIMIT %s) hits'
        ' ORDER BY distance, id COLLATE "C"'
    )


def nearest_sql(schema: str, clause: str) -> str:
    """For each of many query vectors, the id and cosine of the nearest row of ``clause``
    (the smallest id among equals), or NULLs, in the order given (parameters: the vectors
    as one array, the clause's, the dimension)."""
    return (
        "SELECT h.id, 1 - h.distance FROM unnest(%b::vector[]) WITH ORDINALITY AS q(v, n)"
        " LEFT JOIN LATERAL (SELECT r.id, r.embedding <=> q.v AS distance"
        f" FROM {schema}.records r WHERE {clause} AND r.dim = %s"
        ' ORDER BY distance, r.id COLLATE "C" LIMIT 1) h ON true ORDER BY q.n'
    )


def ann_vector_sql(schema: str, clause: str, dim: int, pool: int) -> str:
    """The same through the namespace's IVFFlat index (``_postgres_ann``), when the planner
    finds it cheaper (parameters: the clause's, the query vector twice, k).

    The index orders by the half-precision distance (its expression, ``dim`` a literal,
    so the partial index matches); its first ``pool`` rows are re-ranked by their full
    cosine, so scores are exact and equal distances are ordered by id (which of the rows
    tied with the last one the index returns is not chosen by id: approximate). The
    candidates are materialized because an iterative scan in ``relaxed_order`` may return
    them slightly out of order."""
    dim = int(dim)
    return (
        f"WITH hits AS MATERIALIZED (SELECT r.id, r.embedding FROM {schema}.records r"
        f" WHERE {clause} AND r.dim = {dim}"
        f" ORDER BY r.embedding::halfvec({dim}) <=> %b::vector::halfvec({dim})"
        f" LIMIT {int(pool)})"
        " SELECT id, 1 - distance FROM (SELECT id, embedding <=> %b::vector AS distance"
        ' FROM hits) ranked ORDER BY distance, id COLLATE "C" LIMIT %s'
    )


def text_sql(schema: str, clause: str, words: Sequence[str]) -> tuple[str, list[Any]]:
    """Every row of ``clause`` matching a word, ranked by ``ts_rank_cd`` (parameters:
    the words, then the clause's, then k): for a namespace small enough to rank whole."""
    expression, params = tsquery(words)
    sql = (
        "SELECT r.id, ts_rank_cd(r.tsv, t.q, 1) AS score"
        f" FROM {schema}.records r, (SELECT {expression} AS q) t"
        f" WHERE numnode(t.q) > 0 AND r.tsv @@ t.q AND {clause}"
        ' ORDER BY score DESC, r.id COLLATE "C" LIMIT %s'
    )
    return sql, params


def text_capped_sql(schema: str, clause: str, words: Sequence[str], cap: int) -> str:
    """Like ``text_sql``, but ranking at most ``cap`` rows per word (parameters: the
    words, then for each word the word and the clause's parameters, then k).

    A word that matches fewer than ``cap`` rows brings them all, so the result is the
    full ranking whenever no word is that common; a word that matches a large share of a
    big namespace brings the first ``cap`` rows the GIN index finds instead of all of them
    (so ties at the ``k`` boundary are chosen by id only among the rows brought).
    """
    expression, _ = tsquery(words)
    per_word = " UNION ".join(
        f"(SELECT r.id, ts_rank_cd(r.tsv, t.q, 1) AS score FROM {schema}.records r, t"
        f" WHERE r.tsv @@ plainto_tsquery('english', %s) AND {clause} LIMIT {int(cap)})"
        for _ in words
    )
    return (
        f"WITH t AS MATERIALIZED (SELECT {expression} AS q), candidates AS ({per_word})"
        ' SELECT id, score FROM candidates ORDER BY score DESC, id COLLATE "C" LIMIT %s'
    )


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
        embedding,
        None if embedding is None else int(embedding.shape[0]),
        record.context,
        record.valid_from,
        record.valid_to,
        record.superseded_by,
        record.closed_reason,
        record.provenance,
        record.provenance_detail,
    )


def record_from_row(row: Sequence[Any]) -> Record:
    """A record from a row that starts with ``columns()``, its vector loaded by
    pgvector's adapter (a ``pgvector.Vector``)."""
    metadata: dict[str, JSON] = row[3]
    return stored_record(
        {
            "namespace": row[0],
            "id": row[1],
            "text": row[2],
            "metadata": metadata,
            "kind": row[4],
            "importance": row[5],
            "created_at": row[6],
            "updated_at": row[7],
            "last_accessed_at": row[8],
            "expires_at": row[9],
            "embedding": None if row[10] is None else _array(row[10]),
            "context": row[11],
            "valid_from": row[12],
            "valid_to": row[13],
            "superseded_by": row[14],
            "closed_reason": row[15],
            "provenance": row[16],
            "provenance_detail": row[17],
        }
    )


def _array(vector: Any) -> Vector:
    """float32, read-only, from the adapter's ``Vector`` (or array, in older pgvector)."""
    raw = vector.to_numpy() if hasattr(vector, "to_numpy") else vector
    array: Vector = np.asarray(raw, dtype=np.float32)
    array.flags.writeable = False
    return array
