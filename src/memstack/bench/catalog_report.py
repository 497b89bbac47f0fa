"""The printed tables of ``memstack bench catalog``, and the rows of its section in
``memstack bench report``: figures at each count of indexed namespaces, with ratios to
the smallest count beside the milliseconds (absolute times drift on a shared machine)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from memstack.bench.report import format_table, ratio

__all__ = ["Table", "catalog_headline", "catalog_tables", "catalog_text"]

Payload = Mapping[str, Any]
Table = tuple[tuple[str, ...], list[list[object]]]

_SIZES: Final = (
    ("indexes", "indexes"),
    ("pg_class rows", "pg_class_rows"),
    ("pg_index rows", "pg_index_rows"),
    ("pg_class MB", "pg_class_mb"),
    ("pg_attribute MB", "pg_attribute_mb"),
    ("pg_index MB", "pg_index_mb"),
    ("pg_statistic MB", "pg_statistic_mb"),
    ("catalog MB", "catalog_mb"),
    ("relcache MB", "cache_mb"),
)
_QUERY: Final = (
    ("plan p50 ms", ("plan_ms", "p50")),
    ("plan p95 ms", ("plan_ms", "p95")),
    ("exec p50 ms", ("exec_ms", "p50")),
    ("query p50 ms", ("query_ms", "p50")),
    ("first query ms", ("first_query_ms",)),
)
_UPKEEP: Final = (
    ("build ms", ("build_ms",)),
    ("insert rows/s", ("insert_rows_per_s",)),
    ("batch rows/s", ("insert_batch_rows_per_s",)),
    ("ANALYZE ms", ("analyze_ms",)),
)


def catalog_headline(p: Payload) -> str:
    server = p["server"]
    return (
        f"PostgreSQL {server['server_version']}; each namespace {p['rows']} rows of "
        f"{p['dim']} dimensions with its own partial IVFFlat index (the one queried "
        f"{p['probe_rows']} rows), {p['repeats']} recalls a count; shared lock table "
        f"{server['lock_slots']:,} slots (max_locks_per_transaction "
        f"{server['max_locks_per_transaction']}). x: ratio to {p['steps'][0]['namespaces']:,} "
        "namespaces (for rows/s, the rate's fall: smallest count's rate / this one)."
    )


def catalog_tables(p: Payload) -> list[Table]:
    """The catalog's size; the recall query; the upkeep (build, inserts, ANALYZE)."""
    steps: Sequence[Payload] = p["steps"]
    sizes = [[s["namespaces"], *(s[f] for _, f in _SIZES)] for s in steps]
    query = [
        [s["namespaces"], *_with_ratios(steps, s, _QUERY), s["uses_index"], s["locks_per_query"]]
        for s in steps
    ]
    upkeep = [[s["namespaces"], *_with_ratios(steps, s, _UPKEEP)] for s in steps]
    return [
        (("namespaces", *(h for h, _ in _SIZES)), sizes),
        (("namespaces", *_headers(_QUERY), "uses its index", "locks/query"), query),
        (("namespaces", *_headers(_UPKEEP)), upkeep),
    ]


def catalog_text(p: Payload) -> str:
    tables = [format_table(headers, rows) for headers, rows in catalog_tables(p)]
    return "\n\n".join([catalog_headline(p), *tables])


def _headers(fields: Sequence[tuple[str, tuple[str, ...]]]) -> list[str]:
    return [h for header, _ in fields for h in (header, "x")]


def _with_ratios(
    steps: Sequence[Payload], step: Payload, fields: Sequence[tuple[str, tuple[str, ...]]]
) -> list[object]:
    """Each figure and its ratio to the first step's; a rate's ratio is inverted, so a
    ratio above 1 is always the slowdown."""
    out: list[object] = []
    for header, path in fields:
        value, first = _at(step, path), _at(steps[0], path)
        slower = ratio(first, value) if header.endswith("/s") else ratio(value, first)
        out += [value, slower]
    return out


def _at(step: Payload, path: Sequence[str]) -> float | None:
    value: Any = step
    for key in path:
        value = value.get(key) if isinstance(value, Mapping) else None
    return None if value is None else float(value)
