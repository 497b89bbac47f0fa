"""What memories weigh on PostgreSQL: bytes per memory in the table, in its indexes and
in a namespace's approximate index, read from the server's own size functions.

``memstack bench recall --stores postgres`` reads it once a size is loaded and the store
is ready (every index built). The table and its indexes are measured whole (every
namespace in the schema, as an operator's disk sees them), divided by the table's rows;
a namespace's approximate index is found by its partial predicate naming the namespace
and divided by that namespace's rows.
"""

from __future__ import annotations

from collections.abc import Sequence

import psycopg
from psycopg import sql

__all__ = ["postgres_footprint"]


def postgres_footprint(
    url: str, namespaces: Sequence[str], *, schema: str = "memstack"
) -> dict[str, float]:
    """Rows and bytes of ``schema``'s records table, its indexes, and the approximate
    indexes of ``namespaces`` (their rows summed), with the bytes per memory of each."""
    table = sql.Identifier(schema, "records")
    with psycopg.connect(url, autocommit=True) as conn:
        name = sql.Literal(table.as_string(conn))
        row = conn.execute(
            sql.SQL(
                "SELECT count(*), pg_table_size({n}::regclass), pg_indexes_size({n}::regclass)"
                " FROM {t}"
            ).format(n=name, t=table)
        ).fetchone()
        assert row is not None
        rows, table_bytes, index_bytes = (int(value) for value in row)
        ann_bytes, ann_rows = _approximate_indexes(conn, schema, namespaces)
    return {
        "rows": rows,
        "table_bytes": table_bytes,
        "index_bytes": index_bytes,
        "ann_index_bytes": ann_bytes,
        "table_bytes_per_memory": _per(table_bytes, rows),
        "index_bytes_per_memory": _per(index_bytes - ann_bytes, rows),
        "ann_bytes_per_memory": _per(ann_bytes, ann_rows),
    }


def _approximate_indexes(
    conn: psycopg.Connection[tuple[object, ...]], schema: str, namespaces: Sequence[str]
) -> tuple[int, int]:
    """Bytes of the approximate indexes whose predicate names one of ``namespaces``, and
    the rows of the namespaces that have one."""
    found_bytes = found_rows = 0
    for namespace in namespaces:
        row = conn.execute(
            "SELECT coalesce(sum(pg_relation_size(i.indexrelid)), 0), count(*)"
            " FROM pg_index i JOIN pg_class t ON t.oid = i.indrelid"
            " JOIN pg_namespace n ON n.oid = t.relnamespace"
            " JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam"
            " WHERE n.nspname = %s AND t.relname = 'records' AND a.amname = 'ivfflat'"
            " AND position(quote_literal(%s::text) in pg_get_expr(i.indpred, i.indrelid)) > 0",
            (schema, namespace),
        ).fetchone()
        assert row is not None
        if int(str(row[1])):
            found_bytes += int(str(row[0]))
            counted = conn.execute(
                sql.SQL("SELECT count(*) FROM {} WHERE namespace = %s").format(
                    sql.Identifier(schema, "records")
                ),
                (namespace,),
            ).fetchone()
            found_rows += int(str(counted[0])) if counted else 0
    return found_bytes, found_rows


def _per(total: int, rows: int) -> float:
    return round(total / rows, 1) if rows else 0.0
