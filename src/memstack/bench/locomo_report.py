"""The printed report of ``memstack bench locomo``."""

from __future__ import annotations

from typing import Final

from memstack.bench.locomo import TUNED_ON, LocomoReport
from memstack.bench.report import BM25_REFERENCE, metrics_table

__all__ = ["locomo_text"]

_CATEGORIES: Final = "1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop"


def locomo_text(report: LocomoReport, *, conversations: int, data_name: str) -> str:
    """The metrics beside the baselines, per category, the timings, then the halves and
    the ablation table when the run has them."""
    lines = [
        f"LoCoMo retrieval: {report.memstack['questions']} questions from {conversations} "
        f"conversations ({data_name}); store={report.store}, embedder={report.embedder}",
        metrics_table(
            {
                "memstack": report.memstack["overall"],
                "bm25": report.baselines["bm25"]["overall"],
                "vector": report.baselines["vector"]["overall"],
                "bm25 (README reference)": BM25_REFERENCE,
            }
        ),
        f"\nmemstack per category ({_CATEGORIES}):",
        metrics_table({f"category {c}": m for c, m in report.memstack["per_category"].items()}),
        _timings(report),
    ]
    if report.halves:
        lines.append(f"\nweights tuned on {', '.join(TUNED_ON)}; checked on the rest:")
        lines.append(metrics_table({name: h["overall"] for name, h in report.halves.items()}))
    if report.ablations:
        lines.append("\nablation (one mechanism off per row):")
        table = {"all on": report.memstack["overall"]}
        table |= {f"without {name}": a["overall"] for name, a in report.ablations.items()}
        lines.append(metrics_table(table))
    if report.load.evidence_dropped:
        dropped = ", ".join(report.load.evidence_dropped)
        lines.append(f"evidence ids naming no turn, dropped: {dropped}")
    return "\n".join(lines)


def _timings(report: LocomoReport) -> str:
    return (
        f"\ningest {report.ingest_per_s:.0f} memories/s (embedding included); "
        f"recall p50 {report.recall_ms['p50']:.1f} ms, p95 {report.recall_ms['p95']:.1f} ms; "
        f"query embedding alone p50 {report.embed_ms['p50']:.1f} ms "
        f"(recall / embedding {report.recall_over_embed}x)"
    )
