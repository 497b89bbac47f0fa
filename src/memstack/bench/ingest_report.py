"""The printed table and the JSON report of ``memstack bench ingest``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from memstack.bench.ingest import IngestResult
from memstack.bench.report import format_table

__all__ = ["ingest_payload", "ingest_text"]

_FIELDS: Final = (
    "texts",
    "n",
    "mean_chars",
    "remember_per_s",
    "remember_many_per_s",
    "embed_per_s",
    "upsert_per_s",
)
_HEADERS: Final = (
    "store",
    *("texts", "n", "chars", "remember", "remember_many", "embed", "upsert", "many/embed"),
)

Results = Mapping[str, Sequence[IngestResult]]
"""Per store, one result per set of texts."""


def ingest_text(results: Results, *, embedder: str, batch: int) -> str:
    """A row per store and set of texts, then a line each on the overhead over the
    embedder alone."""
    rows = [
        [backend, *(getattr(r, f) for f in _FIELDS), r.many_to_embed]
        for backend, runs in results.items()
        for r in runs
    ]
    lines = [
        f"ingest, embedder {embedder}, batches of {batch} (memories/s)",
        format_table(_HEADERS, rows),
    ]
    lines += [
        f"{backend} {r.texts}: remember_many runs at {r.many_to_embed:.0%} of the "
        f"embedder alone; remember_turns {r.remember_turns_per_s:,.0f}/s, embedder "
        f"alone on the same turns {r.turns_embed_per_s:,.0f}/s ({r.turns_to_embed:.0%})"
        for backend, runs in results.items()
        for r in runs
    ]
    return "\n".join(lines)


def ingest_payload(results: Results, *, embedder: str, batch: int) -> dict[str, object]:
    """``runs`` holds the first store's results, ``stores`` every store's."""
    first = next(iter(results.values()))
    return {
        "benchmark": "ingest",
        "embedder": embedder,
        "batch": batch,
        "runs": [r.to_json() for r in first],
        "stores": {b: [r.to_json() for r in runs] for b, runs in results.items()},
    }
