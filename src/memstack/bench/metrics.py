"""Retrieval metrics of the LoCoMo README: R@k, Hit@k and MRR, overall and per category."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TypedDict

__all__ = ["METRIC_NAMES", "QuestionResult", "Summary", "aggregate", "score_ranking"]

METRIC_NAMES = ("R@5", "Hit@5", "R@10", "Hit@10", "MRR")


@dataclass(frozen=True, kw_only=True)
class QuestionResult:
    category: int
    metrics: dict[str, float]


def score_ranking(ranking: Sequence[str], evidence: Iterable[str], category: int) -> QuestionResult:
    """Metrics for one question: ``ranking`` is the retrieved dialogue ids, best first."""
    wanted = set(evidence)
    metrics: dict[str, float] = {}
    for k in (5, 10):
        found = wanted.intersection(ranking[:k])
        metrics[f"R@{k}"] = len(found) / len(wanted)
        metrics[f"Hit@{k}"] = 1.0 if found else 0.0
    first = next((rank for rank, dia_id in enumerate(ranking, 1) if dia_id in wanted), None)
    metrics["MRR"] = 1.0 / first if first else 0.0
    return QuestionResult(category=category, metrics=metrics)


class Summary(TypedDict):
    overall: dict[str, float]
    per_category: dict[str, dict[str, float]]
    questions: int


def aggregate(results: Sequence[QuestionResult]) -> Summary:
    """``{"overall": {...}, "per_category": {"1": {...}, ...}, "questions": n}``: means."""
    by_category: dict[int, list[QuestionResult]] = defaultdict(list)
    for result in results:
        by_category[result.category].append(result)
    return {
        "overall": _mean(results),
        "per_category": {str(c): _mean(rs) for c, rs in sorted(by_category.items())},
        "questions": len(results),
    }


def _mean(results: Sequence[QuestionResult]) -> dict[str, float]:
    if not results:
        return {name: 0.0 for name in METRIC_NAMES}
    return {
        name: round(sum(r.metrics[name] for r in results) / len(results), 4)
        for name in METRIC_NAMES
    }
