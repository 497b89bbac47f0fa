"""What memories weigh on PostgreSQL: bytes per memory in the table, in its indexes and
in a namespace's approximate index, read from the server's own size functions.

``memstack bench recall --stores postgres`` reads it once a size is loaded and the store
is ready (every index built). The table and its indexes are measured whole (every
namespace in the schema, as an operator's disk sees them), divided by the table's rows;
a namespace's approximate indexes are the ones the store finds for it
(``_postgres_ann.found_indexes``), divided by that namespace's rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Final

from memstack.storage import _postgres_ann as ann
from memstack.storage import _postgres_query as q

if TYPE_CHECKING:
    import psycopg

__all__ = ["STORAGE_HEADERS", "postgres_footprint", "storage_row"]

STORAGE_HEADERS: Final = (
    "store",
    "size",
    "table rows",
    "table MB",
    "indexes MB",
    "ANN index MB",
    "table B/memory",
    "other indexes B/memory",
    "ANN B/memory",
)


def postgres_footprint(
    url: str, namespaces: Sequence[str], *, schema: str = "memstack"
) -> dict[str, float]:
    """Rows and bytes of ``schema``'s records table, its indexes, and the approximate
    indexes of ``namespaces`` (their rows summed), with the bytes per memory of each."""
    import psycopg
    from psycopg import sql

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
    """Bytes of the namespaces' own indexes (as the store finds them), and the rows of
    the namespaces that have one."""
    from psycopg import sql

    quoted = q.quote_schema(schema)
    found_bytes = found_rows = 0
    for namespace in namespaces:
        names = [index.name for index in ann.found_indexes(conn, quoted, namespace)]
        if not names:
            continue
        sizes = conn.execute(
            "SELECT coalesce(sum(pg_relation_size(to_regclass(%s || '.' || quote_ident(n)))), 0)"
            " FROM unnest(%s::text[]) AS n",
            (quoted, names),
        ).fetchone()
        rows = conn.execute(
            sql.SQL("SELECT count(*) FROM {} WHERE namespace = %s").format(
                sql.Identifier(schema, "records")
            ),
            (namespace,),
        ).fetchone()
        found_bytes += int(str(sizes[0])) if sizes else 0
        found_rows += int(str(rows[0])) if rows else 0
    return found_bytes, found_rows


def storage_row(store: str, size: int, storage: Mapping[str, float]) -> list[object]:
    """One ``postgres_footprint`` under ``STORAGE_HEADERS``: sizes in MB, bytes per memory."""
    mb = 2**20
    return [
        store,
        size,
        storage["rows"],
        round(storage["table_bytes"] / mb, 1),
        round(storage["index_bytes"] / mb, 1),
        round(storage["ann_index_bytes"] / mb, 1),
        storage["table_bytes_per_memory"],
        storage["index_bytes_per_memory"],
        storage["ann_bytes_per_memory"],
    ]


def _per(total: int, rows: int) -> float:
    return round(total / rows, 1) if rows else 0.0
