"""The printed report of ``memstack bench locomo``."""

from __future__ import annotations

from typing import Final

from memstack.bench.locomo import TUNED_ON, LocomoReport, switched
from memstack.bench.locomo_mem0 import Mem0Report
from memstack.bench.locomo_remote import RemoteReport
from memstack.bench.report import BM25_REFERENCE, metrics_table

__all__ = ["locomo_text", "mem0_text", "remote_text"]

_CATEGORIES: Final = "1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop"
_CACHED_RATIO: Final = 2.0
"""REST ingest this many times the embedder alone: the server cannot have embedded it."""


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
        table |= {switched(name): a["overall"] for name, a in report.ablations.items()}
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


def remote_text(remote: RemoteReport, local: LocomoReport) -> str:
    """The run through the REST API beside the in-process one: the metrics overall and
    per category, how many rankings are identical, the recall overhead and the ingest."""
    table = {"in process": local.memstack["overall"], "REST": remote.memstack["overall"]}
    for category, metrics in local.memstack["per_category"].items():
        table[f"in process, category {category}"] = metrics
        table[f"REST, category {category}"] = remote.memstack["per_category"].get(category, {})
    recall, here = remote.recall_ms, remote.local_recall_ms
    return "\n".join(
        [
            f"\nthrough the REST API at {remote.url} (one request a session; recall k=10, "
            "touch=false):",
            metrics_table(table),
            f"identical rankings: {remote.identical}/{remote.compared}",
            f"recall over REST p50 {recall['p50']:.1f} ms, p95 {recall['p95']:.1f} ms; in "
            f"process p50 {here['p50']:.1f} ms, p95 {here['p95']:.1f} ms; overhead per recall "
            f"{remote.overhead_ms:+.2f} ms at the p50 ({remote.overhead_ratio}x)",
            f"ingest over REST {remote.ingest_per_s:.0f} turns/s ({remote.requests} requests, "
            f"p50 {remote.request_ms['p50']:.1f} ms); in process "
            f"{remote.local_ingest_per_s:.0f} turns/s (one batch a conversation); embedder "
            f"alone {remote.embed_alone_per_s:.0f} turns/s on the same texts and batches "
            f"(p50 {remote.embed_batch_ms['p50']:.1f} ms a batch)",
            f"REST ingest / embedder alone = {remote.ingest_over_embed} (target >= 0.9)"
            + (f"; {remote.refused} turns refused by the secret filter" if remote.refused else ""),
            *_cached(remote),
        ]
    )


def mem0_text(via: Mem0Report, local: LocomoReport) -> str:
    """The run through mem0's client beside the in-process one: the metrics overall and
    per category, how many rankings are identical or hold the same turns, and what mem0's
    add and search cost beyond memstack's own client on the same server."""
    table = {"in process": local.memstack["overall"], "mem0 client": via.memstack["overall"]}
    for category, metrics in local.memstack["per_category"].items():
        table[f"in process, category {category}"] = metrics
        table[f"mem0 client, category {category}"] = via.memstack["per_category"].get(category, {})
    search, recall, add, turns = via.search_ms, via.recall_ms, via.add_ms, via.add_turns_ms
    return "\n".join(
        [
            f"\nthrough mem0's Python client at {via.url} (one add(infer=False) a session; "
            "search top_k=10, threshold=0):",
            metrics_table(table),
            f"identical rankings: {via.identical}/{via.compared}; the same ten turns in any "
            f"order: {via.same_set}/{via.compared}",
            f"mem0 search p50 {search['p50']:.1f} ms, p95 {search['p95']:.1f} ms; memstack "
            f"recall on the same server p50 {recall['p50']:.1f} ms, p95 {recall['p95']:.1f} "
            f"ms; added per search {via.search_added_ms:+.2f} ms at the p50",
            f"mem0 add p50 {add['p50']:.1f} ms, p95 {add['p95']:.1f} ms ({via.requests} "
            f"calls, {via.turns} turns); memstack add_turns p50 {turns['p50']:.1f} ms, p95 "
            f"{turns['p95']:.1f} ms; added per add {via.add_added_ms:+.2f} ms at the p50",
        ]
    )


def _cached(remote: RemoteReport) -> list[str]:
    """A warning when the server embedded faster than the model can: it answered from its
    cache of recent texts' vectors, which a rerun on the same server fills."""
    faster = remote.ingest_over_embed
    if faster is None or faster < _CACHED_RATIO:
        return []
    return [
        f"warning: the server ingested {faster}x faster than the embedder alone: it had "
        "these texts' vectors cached (a rerun against the same server?). Its timings mean "
        "something only on a freshly started server."
    ]
