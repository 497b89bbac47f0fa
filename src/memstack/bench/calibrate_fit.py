"""Fitting and checking the calibrated relevance on recalled memories with known evidence.

What ``memstack bench calibrate`` computes from what it recalled (``Seen``): the logistic
fit of ``longterm.calibration.Calibration`` with balanced class weights (evidence and the
rest weigh alike, however few of the recalled memories are evidence), the precision and
recall of "holds evidence" at a threshold, how often a question's best-ranked evidence
survives it, how often a question about another conversation keeps anything, the default
threshold, and how the values compare with the evidence observed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Final

import numpy as np
import numpy.typing as npt

from memstack.longterm.calibration import Calibration

__all__ = [
    "IRRELEVANT_AT_MOST",
    "PLAIN_THRESHOLD",
    "THRESHOLDS",
    "Seen",
    "at_threshold",
    "base_rate",
    "fit",
    "log_loss",
    "pick_threshold",
    "reliability",
    "survival",
]

THRESHOLDS: Final = (0.0, 0.02, 0.05, 0.08, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8)
"""Where precision and recall are shown (0: no cut)."""
PLAIN_THRESHOLD: Final = 0.3
"""The threshold a mem0 user passes (``threshold``) expecting the obvious answer to clear
it: the command shows what survives it on each half, for each scale compared."""
IRRELEVANT_AT_MOST: Final = 0.05
"""The default threshold is the lowest at which at most this share of the blocks built
for another conversation's questions hold anything."""
_GRID: Final = tuple(round(0.01 * i, 2) for i in range(1, 100))
_BINS: Final = (0.0, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9, 1.0)
_RIDGE: Final = 1e-3
_STEPS: Final = 100


@dataclass(frozen=True, kw_only=True)
class Seen:
    """One memory recalled for one question, with the terms the calibration reads."""

    half: str
    """``tuned`` (the conversations the constants are fitted on) or ``other``."""
    question: int
    """Which question (numbered across the run)."""
    foreign: bool
    """Asked of another conversation's memory: nothing recalled can be its evidence."""
    rank: int
    """Its place among the question's recalled memories (0: the best ranked)."""
    relevance: float
    similarity: float
    """The cosine similarity of query and memory (a scale compared, not one fitted)."""
    coverage: float
    evidence: bool


def _columns(seen: Sequence[Seen]) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    x = np.array([[1.0, s.relevance, s.coverage] for s in seen], dtype=np.float64)
    y = np.array([s.evidence for s in seen], dtype=np.float64)
    return x.reshape(-1, 3), y


def _chances(seen: Sequence[Seen], calibration: Calibration) -> npt.NDArray[np.float64]:
    return np.array([calibration.of(s.relevance, s.coverage) for s in seen], dtype=np.float64)


def _weights(y: npt.NDArray[np.float64], *, balanced: bool) -> npt.NDArray[np.float64]:
    """Each memory's weight: with ``balanced``, ``n / (2 · n_class)``, so the evidence and
    the rest each weigh half of the whole; otherwise 1."""
    if not balanced:
        return np.ones_like(y)
    positives = float(y.sum())
    return np.where(y == 1, len(y) / (2 * positives), len(y) / (2 * (len(y) - positives)))


def base_rate(seen: Sequence[Seen]) -> float:
    """The share of evidence among the memories recalled for own questions."""
    own = [s.evidence for s in seen if not s.foreign]
    return round(sum(own) / len(own), 4) if own else 0.0


def fit(seen: Sequence[Seen], *, balanced: bool = True) -> Calibration:
    """The logistic regression of ``evidence`` on relevance and coverage (Newton's
    method, a slight ridge on the two weights), constants rounded to 3 places.

    ``balanced`` (what ships) weighs the evidence and the other memories alike, so the
    value answers "does this memory match like evidence or like the rest" at even odds,
    whatever share of the memories is evidence; without it the value is the chance of
    evidence at the base rate of ``seen`` (about 1 in 10 of LoCoMo's 10 best)."""
    x, y = _columns(seen)
    if not len(y) or y.min() == y.max():
        raise ValueError(
            "calibration needs recalled memories that are evidence and some that are not"
        )
    weight = _weights(y, balanced=balanced)
    ridge = _RIDGE * np.diag([0.0, 1.0, 1.0])
    w = np.zeros(3)
    for _ in range(_STEPS):
        p = 1.0 / (1.0 + np.exp(-(x @ w)))
        gradient = x.T @ (weight * (p - y)) + ridge @ w
        hessian = (x * (weight * p * (1 - p))[:, None]).T @ x + ridge + 1e-9 * np.eye(3)
        step = np.linalg.solve(hessian, gradient)
        w -= step
        if np.abs(step).max() < 1e-10:
            break
    return Calibration(
        intercept=round(float(w[0]), 3),
        relevance=round(float(w[1]), 3),
        coverage=round(float(w[2]), 3),
    )


def log_loss(seen: Sequence[Seen], calibration: Calibration, *, balanced: bool = True) -> float:
    """Mean negative log-likelihood of the evidence under ``calibration`` (lower is
    better); with ``balanced``, weighted as ``fit`` weighs (the mean of the evidence's
    mean and the rest's)."""
    _, y = _columns(seen)
    p = np.clip(_chances(seen, calibration), 1e-12, 1 - 1e-12)
    weight = _weights(y, balanced=balanced and 0 < y.sum() < len(y))
    losses = y * np.log(p) + (1 - y) * np.log(1 - p)
    return round(float(-np.sum(weight * losses) / np.sum(weight)), 4)


def survival(
    seen: Sequence[Seen], value: Callable[[Seen], float], threshold: float
) -> dict[str, float]:
    """What a cut at ``threshold`` of the scale ``value`` leaves the questions:
    ``top_evidence`` (of the questions with evidence among their recalled memories, the
    share whose best-ranked evidence is kept), ``hit`` (of all own questions, the share
    keeping some evidence) and ``foreign_empty`` (of the questions about another
    conversation, the share keeping nothing)."""
    top: dict[int, Seen] = {}
    for s in seen:
        if s.evidence and (s.question not in top or s.rank < top[s.question].rank):
            top[s.question] = s
    own = {s.question for s in seen if not s.foreign}
    hit = {s.question for s in seen if s.evidence and value(s) >= threshold}
    foreign = {s.question for s in seen if s.foreign}
    reached = {s.question for s in seen if s.foreign and value(s) >= threshold}
    return {
        "top_evidence": _share(sum(value(s) >= threshold for s in top.values()), len(top)),
        "hit": _share(len(hit), len(own)),
        "foreign_empty": _share(len(foreign - reached), len(foreign)),
    }


def at_threshold(
    seen: Sequence[Seen], calibration: Calibration, threshold: float
) -> dict[str, float | int]:
    """What a cut at ``threshold`` keeps of the recalled memories: ``kept`` (their share),
    ``precision`` (of those kept, the evidence), ``recall`` (of the evidence recalled,
    what is kept), ``hit`` (questions keeping some evidence), ``top_evidence`` (questions
    keeping their best-ranked evidence, of those with evidence recalled), ``empty``
    (questions keeping nothing) and ``irrelevant`` (questions about another conversation
    keeping anything)."""
    own = [s for s in seen if not s.foreign]
    kept = [s for s in own if calibration.of(s.relevance, s.coverage) >= threshold]
    evidence = sum(s.evidence for s in own)
    questions = {s.question for s in own}
    keeping = {s.question for s in kept}
    foreign = {s.question for s in seen if s.foreign}
    irrelevant = {
        s.question
        for s in seen
        if s.foreign and calibration.of(s.relevance, s.coverage) >= threshold
    }
    return {
        "min_score": threshold,
        "kept": _share(len(kept), len(own)),
        "precision": _share(sum(s.evidence for s in kept), len(kept)),
        "recall": _share(sum(s.evidence for s in kept), evidence),
        "hit": _share(len({s.question for s in kept if s.evidence}), len(questions)),
        "top_evidence": survival(
            seen, lambda s: calibration.of(s.relevance, s.coverage), threshold
        )["top_evidence"],
        "empty": _share(len(questions - keeping), len(questions)),
        "irrelevant": _share(len(irrelevant), len(foreign)),
    }


def _share(part: int, whole: int) -> float:
    return round(part / whole, 4) if whole else 0.0


def pick_threshold(seen: Sequence[Seen], calibration: Calibration) -> float | None:
    """The lowest threshold (in hundredths) at which at most ``IRRELEVANT_AT_MOST`` of
    the questions about another conversation keep anything; None without such questions."""
    best: dict[int, float] = {}
    for s in seen:
        if s.foreign:
            value = calibration.of(s.relevance, s.coverage)
            best[s.question] = max(best.get(s.question, 0.0), value)
    if not best:
        return None
    tops = list(best.values())
    for threshold in _GRID:
        if sum(top >= threshold for top in tops) <= IRRELEVANT_AT_MOST * len(tops):
            return threshold
    return 1.0


def reliability(
    seen: Sequence[Seen], calibration: Calibration, rate: float
) -> list[dict[str, float | int]]:
    """Per band of the calibrated relevance (own questions): the mean value
    (``predicted``), the mean chance of evidence it gives at the base rate ``rate`` the fit
    was balanced from (``chance``: the even odds moved back to ``rate``) and the share of
    evidence observed; ``chance`` and ``observed`` agree when the fit holds."""
    own = [s for s in seen if not s.foreign]
    chances = _chances(own, calibration)
    odds = rate / (1 - rate) if 0 < rate < 1 else 1.0
    at_rate = chances * odds / (chances * odds + (1 - chances))
    _, y = _columns(own)
    rows: list[dict[str, float | int]] = []
    for low, high in pairwise(_BINS):
        inside = (chances >= low) & ((chances < high) if high < 1 else (chances <= high))
        if inside.any():
            rows.append(
                {
                    "from": low,
                    "to": high,
                    "memories": int(inside.sum()),
                    "predicted": round(float(chances[inside].mean()), 4),
                    "chance": round(float(at_rate[inside].mean()), 4),
                    "observed": round(float(y[inside].mean()), 4),
                }
            )
    return rows
