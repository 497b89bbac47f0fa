"""The hybrid recall score of spec 001: 0.7·cosine + 0.2·recency + 0.1·importance."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

__all__ = [
    "HALF_LIFE_DAYS",
    "KEYWORD_WEIGHT",
    "ScoreBreakdown",
    "hybrid_score",
    "recency",
]

W_SIMILARITY: Final = 0.7
"""Weight of relevance: cosine similarity, blended with keyword relevance when enabled."""
W_RECENCY: Final = 0.2
W_IMPORTANCE: Final = 0.1
HALF_LIFE_DAYS: Final = 30.0
_DAY: Final = 86_400.0


KEYWORD_WEIGHT: Final = 0.3
"""Share of keyword (BM25) relevance in the relevance term; measured on LoCoMo, where
0.2-0.5 all beat both pure rankings and 0.3 was best."""


@dataclass(frozen=True, kw_only=True)
class ScoreBreakdown:
    similarity: float
    """Cosine similarity of the query and the memory."""
    keyword: float
    """BM25 relevance divided by the best BM25 score among the candidates (0..1)."""
    relevance: float
    """The relevance term: cosine blended with keyword relevance."""
    recency: float
    importance: float
    score: float


def recency(*, created_at: float, last_accessed_at: float | None, now: float) -> float:
    """Exponential decay with a 30-day half-life on the later of created / last accessed.

    1.0 for something touched now, 0.5 after 30 days; never above 1 (a future
    timestamp counts as now).
    """
    anchor = max(created_at, last_accessed_at or created_at)
    age_days = max(0.0, now - anchor) / _DAY
    return float(0.5 ** (age_days / HALF_LIFE_DAYS))


def hybrid_score(
    *,
    similarity: float,
    recency: float,
    importance: float,
    keyword: float | None = None,
    keyword_weight: float = KEYWORD_WEIGHT,
) -> ScoreBreakdown:
    """0.7·relevance + 0.2·recency + 0.1·importance.

    Relevance is the cosine similarity, as spec 001 has it, when there is no keyword
    evidence (``keyword`` is None: no candidate matched the query's words); otherwise
    ``(1 - keyword_weight)·cosine + keyword_weight·keyword``.
    """
    relevance = (
        similarity
        if keyword is None
        else (1 - keyword_weight) * similarity + keyword_weight * keyword
    )
    score = W_SIMILARITY * relevance + W_RECENCY * recency + W_IMPORTANCE * importance
    return ScoreBreakdown(
        similarity=similarity,
        keyword=keyword or 0.0,
        relevance=relevance,
        recency=recency,
        importance=importance,
        score=score,
    )
