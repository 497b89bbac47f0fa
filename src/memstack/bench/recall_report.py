"""The printed table and the JSON report of ``memstack bench recall``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from memstack.bench.floor import FLOOR_K
from memstack.bench.footprint import STORAGE_HEADERS, storage_row
from memstack.bench.report import format_table
from memstack.bench.scale import PER_NAMESPACE, RecallBench, RecallPoint, RecallRun

__all__ = ["recall_payload", "recall_table", "storage_table"]

_COLUMNS: Final = (
    "store",
    "shape",
    "size",
    "after-load p50",
    "after-load p95",
    "ratio",
    "R@10",
    "serves s",
    "ready s",
    "p50",
    "p95",
    "floor p50",
    "floor p95",
    "ratio p95",
    "after-write p95",
    "ratio",
    "ANN R@10",
    "ingest/s",
    "RSS MB",
    "RSS ratio",
)
NOTES: Final = (
    "Milliseconds. floor = the query's real embedding plus an exact float32 numpy scan of "
    f"the target namespace (top {FLOOR_K}). ratio = recall / floor at the same percentile; "
    "after_load = the same recalls (and floors) right after the load returned, before "
    "anything waited for an index; index_serves_s = seconds from the end of the load until "
    "the namespace's approximate index serves (or none is needed); index_wait_s = until "
    "the store is ready (every index built and fitting, statistics fresh), after which "
    "the other figures are taken; "
    "after_write = one remember() then one timed recall, repeated. ann_recall_at_10 = the "
    "store's vector_search top 10 against the exact top 10. rss_mb is this process after "
    "loading that size and recalling from it (every search index loaded): the interpreter "
    "(rss_before_model_mb), the model (model_rss_mb), the harness's own copy of the vectors "
    "for the floor (vectors_mb) and what the store keeps "
    "in process (memory, sqlite; postgres keeps it in its server). rss_ratio = (rss_mb - "
    "vectors_mb) / (rss_start_mb + vectors_mb): the process without the harness's copy, "
    "against the same process before loading (interpreter and model) plus one float32 copy "
    "of the vectors; null for postgres. synth_fidelity = mean "
    "cosine of the synthesized vectors with the real embeddings of their sentences."
)


def recall_table(runs: Sequence[RecallRun]) -> str:
    return format_table(_COLUMNS, [_row(run, p) for run in runs for p in run.points])


def _row(run: RecallRun, p: RecallPoint) -> list[object]:
    return [
        run.store,
        run.shape.split("-")[0],
        p.size,
        p.after_load_p50_ms,
        p.after_load_p95_ms,
        p.after_load_ratio_p95,
        p.after_load_ann_recall_at_10,
        p.index_serves_s,
        p.index_wait_s,
        p.recall_p50_ms,
        p.recall_p95_ms,
        p.floor_p50_ms,
        p.floor_p95_ms,
        p.ratio_p95,
        p.after_write_p95_ms,
        p.after_write_ratio_p95,
        p.ann_recall_at_10,
        p.ingest_per_s,
        p.rss_mb,
        rss_ratio(run, p),
    ]


def storage_table(runs: Sequence[RecallRun]) -> str:
    """What each size weighed in the store once ready, where it was read."""
    rows = [
        storage_row(run.store, p.size, p.storage) for run in runs for p in run.points if p.storage
    ]
    return format_table(STORAGE_HEADERS, rows)


def rss_ratio(run: RecallRun, p: RecallPoint) -> float | None:
    """What the store keeps in process against the vectors themselves plus the process it
    runs in (see ``NOTES``); None for a store that keeps its data in another process."""
    if run.store == "postgres":
        return None
    return round((p.rss_mb - p.vectors_mb) / (run.rss_start_mb + p.vectors_mb), 3)


def recall_payload(
    bench: RecallBench,
    runs: Sequence[RecallRun],
    *,
    model_rss_mb: float,
    rss_before_model_mb: float,
    synth_fidelity: float,
) -> dict[str, object]:
    return {
        "embedder": bench.embedder.model_id,
        "dim": bench.phrases.dim,
        "model_rss_mb": round(model_rss_mb, 1),
        "rss_before_model_mb": round(rss_before_model_mb, 1),
        "synth_fidelity": synth_fidelity,
        "shape": bench.shape,
        "per_namespace": PER_NAMESPACE if bench.shape == "many-namespaces" else None,
        "sizes": list(bench.sizes),
        "queries": len(bench.queries),
        "writes": len(bench.writes),
        "seed": bench.seed,
        "floor_k": FLOOR_K,
        "notes": NOTES,
        "runs": [
            {"store": r.store, "shape": r.shape, "rss_start_mb": r.rss_start_mb}
            | {"points": [vars(p) | {"rss_ratio": rss_ratio(r, p)} for p in r.points]}
            for r in runs
        ],
    }
