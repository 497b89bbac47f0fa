"""Fitting and checking the calibrated relevance on recalled memories with known evidence.

What ``memstack bench calibrate`` computes from what it recalled (``Seen``): the logistic
fit of ``longterm.calibration.Calibration``, the precision and recall of "holds evidence"
at a threshold, how often a question about another conversation keeps anything, the
default threshold, and how close the chances are to what is observed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Final

import numpy as np
import numpy.typing as npt

from memstack.longterm.calibration import Calibration

__all__ = [
    "IRRELEVANT_AT_MOST",
    "THRESHOLDS",
    "Seen",
    "at_threshold",
    "fit",
    "log_loss",
    "pick_threshold",
    "reliability",
]

THRESHOLDS: Final = (0.0, 0.02, 0.05, 0.08, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5)
"""Where precision and recall are shown (0: no cut)."""
IRRELEVANT_AT_MOST: Final = 0.05
"""The default threshold is the lowest at which at most this share of the blocks built
for another conversation's questions hold anything."""
_GRID: Final = tuple(round(0.01 * i, 2) for i in range(1, 100))
_BINS: Final = (0.0, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 1.0)
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
    relevance: float
    coverage: float
    evidence: bool


def _columns(seen: Sequence[Seen]) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    x = np.array([[1.0, s.relevance, s.coverage] for s in seen], dtype=np.float64)
    y = np.array([s.evidence for s in seen], dtype=np.float64)
    return x.reshape(-1, 3), y


def _chances(seen: Sequence[Seen], calibration: Calibration) -> npt.NDArray[np.float64]:
    return np.array([calibration.of(s.relevance, s.coverage) for s in seen], dtype=np.float64)


def fit(seen: Sequence[Seen]) -> Calibration:
    """The logistic regression of ``evidence`` on relevance and coverage (Newton's
    method, a slight ridge on the two weights), constants rounded to 3 places."""
    x, y = _columns(seen)
    if not len(y) or y.min() == y.max():
        raise ValueError(
            "calibration needs recalled memories that are evidence and some that are not"
        )
    ridge = _RIDGE * np.diag([0.0, 1.0, 1.0])
    w = np.zeros(3)
    for _ in range(_STEPS):
        p = 1.0 / (1.0 + np.exp(-(x @ w)))
        gradient = x.T @ (p - y) + ridge @ w
        hessian = (x * (p * (1 - p))[:, None]).T @ x + ridge + 1e-9 * np.eye(3)
        step = np.linalg.solve(hessian, gradient)
        w -= step
        if np.abs(step).max() < 1e-10:
            break
    return Calibration(
        intercept=round(float(w[0]), 3),
        relevance=round(float(w[1]), 3),
        coverage=round(float(w[2]), 3),
    )


def log_loss(seen: Sequence[Seen], calibration: Calibration) -> float:
    """Mean negative log-likelihood of the evidence under ``calibration`` (lower is better)."""
    _, y = _columns(seen)
    p = np.clip(_chances(seen, calibration), 1e-12, 1 - 1e-12)
    return round(float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p))), 4)


def at_threshold(
    seen: Sequence[Seen], calibration: Calibration, threshold: float
) -> dict[str, float | int]:
    """What a cut at ``threshold`` keeps of the recalled memories: ``kept`` (their share),
    ``precision`` (of those kept, the evidence), ``recall`` (of the evidence recalled,
    what is kept), ``hit`` (questions keeping some evidence), ``empty`` (questions keeping
    nothing) and ``irrelevant`` (questions about another conversation keeping anything)."""
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


def reliability(seen: Sequence[Seen], calibration: Calibration) -> list[dict[str, float | int]]:
    """Per band of the calibrated relevance, the mean chance given and the share of
    evidence observed (own questions): equal when the chance means what it says."""
    own = [s for s in seen if not s.foreign]
    chances = _chances(own, calibration)
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
                    "observed": round(float(y[inside].mean()), 4),
                }
            )
    return rows
