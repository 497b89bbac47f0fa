"""The PostgreSQL query builder: SQL text with ``%s`` parameters for psycopg.

Values always travel as parameters. Spliced into SQL text are only the schema, which
``quote_schema`` accepts only as a plain lower-case identifier and then quotes, and
integers of ours (a dimension, a candidate cap). Vectors travel in pgvector's binary form
(``%b``, with the ``pgvector`` package's psycopg adapter registered on the connection),
never as text: casting every scanned vector to text was 90% of a search.

Searches return ids and scores only; the store fetches the winners' rows after.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from memstack._json import JSON, dumps
from memstack.errors import ConfigError
from memstack.storage.types import Filter, Order, Record, Vector, stored_record

__all__ = [
    "ORDER_BY",
    "columns",
    "exact_vector_sql",
    "hnsw_away_vector_sql",
    "hnsw_vector_sql",
    "quote_schema",
    "record_from_row",
    "record_params",
    "rows_sql",
    "text_capped_sql",
    "text_sql",
    "tsquery",
    "upsert_sql",
    "where",
]

_IDENTIFIER = re.compile(r"[a-z_][a-z0-9_]{0,62}")

ORDER_BY: dict[Order, str] = {
    "created_desc": 'r.created_at DESC, r.id COLLATE "C" ASC',
    "created_asc": 'r.created_at ASC, r.id COLLATE "C" ASC',
    "updated_desc": 'r.updated_at DESC, r.id COLLATE "C" ASC',
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
        " r.updated_at, r.last_accessed_at, r.expires_at, r.embedding, r.context,"
        " r.valid_from, r.valid_to, r.superseded_by, r.closed_reason, r.provenance,"
        " r.provenance_detail"
    )


def upsert_sql(schema: str) -> str:
    return f"""
INSERT INTO {schema}.records (namespace, id, text, metadata, kind, importance, created_at,
                              updated_at, last_accessed_at, expires_at, embedding, dim,
                              context, valid_from, valid_to, superseded_by, closed_reason,
                              provenance, provenance_detail)
VALUES (%s, %s, %s, %s::jsonb, %s, %s, %s, %s, %s, %s, %b, %s, %s, %s, %s, %s, %s, %s, %s)
ON CONFLICT (namespace, id) DO UPDATE SET
    text = EXCLUDED.text, metadata = EXCLUDED.metadata, kind = EXCLUDED.kind,
    importance = EXCLUDED.importance, created_at = EXCLUDED.created_at,
    updated_at = EXCLUDED.updated_at, last_accessed_at = EXCLUDED.last_accessed_at,
    expires_at = EXCLUDED.expires_at, embedding = EXCLUDED.embedding, dim = EXCLUDED.dim,
    context = EXCLUDED.context, valid_from = EXCLUDED.valid_from,
    valid_to = EXCLUDED.valid_to, superseded_by = EXCLUDED.superseded_by,
    closed_reason = EXCLUDED.closed_reason, provenance = EXCLUDED.provenance,
    provenance_detail = EXCLUDED.provenance_detail
"""


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
    for key, value in (wanted.metadata or {}).items():
        conds.append("(r.metadata -> %s) = %s::jsonb")
        params.extend([key, dumps(value)])
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
    matches no HNSW index, so this is always exact. Each row's distance is computed once
    (a score beside the sort key computed it twice: a 10k-row scan took 13% longer)."""
    return (
        "SELECT id, 1 - distance FROM (SELECT r.id, r.embedding <=> v.q AS distance"
        f" FROM {schema}.records r, (SELECT %b::vector AS q) v"
        f" WHERE {clause} AND r.dim = %s"
        ' ORDER BY distance, r.id COLLATE "C" LIMIT %s) hits'
        ' ORDER BY distance, id COLLATE "C"'
    )


def hnsw_vector_sql(schema: str, clause: str, dim: int) -> str:
    """The same through the dimension's HNSW index, when the planner finds it cheaper
    (parameters: query vector, clause's, k): one index scan, for a graph whose greedy
    descent was measured to find the top 10 (``postgres.AWAY_LIMIT``). The distance is
    the index's expression and ``dim`` a literal, so the partial index matches; the CTE
    is materialized and sorted again because an iterative scan in ``relaxed_order`` may
    return rows slightly out of order. Equal distances are ordered by id, but which of
    the rows tied with the k-th the graph returns is not chosen by id (approximate)."""
    dim = int(dim)
    return (
        f"WITH hits AS MATERIALIZED (SELECT r.id,"
        f" r.embedding::vector({dim}) <=> %b::vector({dim}) AS distance"
        f" FROM {schema}.records r WHERE {clause} AND r.dim = {dim}"
        " ORDER BY distance LIMIT %s)"
        ' SELECT id, 1 - distance FROM hits ORDER BY distance, id COLLATE "C"'
    )


def hnsw_away_vector_sql(schema: str, clause: str, dim: int) -> str:
    """``hnsw_vector_sql`` in two index scans, for a large graph (parameters: query
    vector, clause's, k, query vector twice, clause's, ``away``, k).

    The first scan takes the query's k nearest rows. The second takes the ``away`` rows
    nearest the query with the first k's mean direction projected out, each scored by
    its distance to the query; the union's k nearest are returned. HNSW's greedy descent
    can settle a query that lies between two clusters in the wrong one; the second scan
    is steered away from the cluster the first one found (why and what it measured:
    ``postgres.AWAY_ROWS``).

    The distance is the index's expression and ``dim`` a literal, so the partial index
    matches; each scan is materialized, and the union sorted again, because an iterative
    scan in ``relaxed_order`` may return rows slightly out of order."""
    dim = int(dim)
    typed = f"r.embedding::vector({dim})"
    query = f"%b::vector({dim})"
    rows = f"FROM {schema}.records r WHERE {clause} AND r.dim = {dim}"
    return (
        f"WITH first AS MATERIALIZED (SELECT r.id, {typed} AS e, {typed} <=> {query} AS distance"
        f" {rows} ORDER BY distance LIMIT %s),"
        # q - (q.c)c for c the first rows' unit mean (<#> is the negative inner product);
        # the query itself when nothing was found.
        " away AS MATERIALIZED (SELECT CASE WHEN c.v IS NULL THEN q.v ELSE q.v - array_fill("
        f"-(q.v <#> c.v), ARRAY[{dim}])::vector({dim}) * c.v END AS v"
        f" FROM (SELECT {query} AS v) q, (SELECT l2_normalize(avg(e)) AS v FROM first) c),"
        f" second AS MATERIALIZED (SELECT r.id, {typed} <=> {query} AS distance {rows}"
        f" ORDER BY {typed} <=> (SELECT v FROM away) LIMIT %s)"
        " SELECT id, 1 - distance FROM (SELECT id, distance FROM first"
        " UNION SELECT id, distance FROM second) hits"
        ' ORDER BY distance, id COLLATE "C" LIMIT %s'
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
    full ranking whenever no word is that common; a word that matches a third of a big
    namespace brings the first ``cap`` rows the GIN index finds instead of all of them
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
