"""The calibrated relevance: how strongly a memory matches the query, the same for every query.

The hybrid score ranks the memories of one query well, but its value means little from one
query to the next: the keyword part is divided by the best match among the candidates,
so the top keyword match gets 1.0 however weak it is. A caller that wants "only what is
relevant" needs a number that means the same for every query. ``Calibration`` turns two
terms a memory has on any surface (a recall, a keyed search) into such a number in
[0, 1]: a logistic curve over the hybrid relevance and the share of the query's words the
memory's text holds (stop words left out, as keyword search leaves them out). Neither
term depends on conversation sessions, so a fact and a turn are judged alike. The curve
rises with both, so a higher relevance never lowers it; it does not rank anything (the
hybrid score still ranks), it is what ``min_score`` cuts at.

What the value means: how much more a memory's match looks like that of a memory that
answers the question than like that of one that does not, read at even odds. It is the
chance that the memory answers *if* answering and not answering memories were equally
many: 0.5 is a match as typical of an answer as of the rest, 0.9 one nine times as
typical of an answer. It does not depend on how many memories the store holds or how few
of them answer, which is why a threshold such as mem0's 0.3 keeps the obvious answer.
It is not the chance of evidence among what a recall returns: there, about 1 in 10 of
LoCoMo's 10 best memories is evidence, and that chance is the value's odds divided by
about 9 (``memstack bench calibrate`` shows both against what is observed).

``CALIBRATION``'s constants were fitted by ``memstack bench calibrate`` (logistic
regression of "this memory is one of the question's evidence turns" over the 10 memories
recalled for each question of the LoCoMo development split's first half, ``TUNED_ON``
in ``bench.locomo``, with all-MiniLM-L6-v2, evidence and the rest weighed alike: balanced
class weights) and checked on its second half; the command prints the fit, the precision
and recall at each threshold, how often a question keeps its best-ranked evidence, how
often a question about another conversation gets a non-empty block, the same at 0.3 for
the scales this one was chosen over (the unweighted fit, the cosine similarity), and
writes them as JSON for ``memstack bench report``. Another embedding model spreads its
cosines otherwise: the value still rises with the match, but its meaning is MiniLM's
until the constants are fitted again with that model.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Final

from memstack.errors import InvalidInput
from memstack.storage._text import query_words, tokenize

if TYPE_CHECKING:
    from memstack.longterm.types import RecalledMemory

__all__ = [
    "CALIBRATION",
    "CONTEXT_MIN_SCORE",
    "Calibration",
    "calibrated",
    "check_min_score",
    "coverage",
]


@dataclass(frozen=True, kw_only=True)
class Calibration:
    """``1 / (1 + exp(-(intercept + relevance·r + coverage·c)))`` of a memory's hybrid
    relevance ``r`` and query-word coverage ``c``; both weights positive, so it rises
    with each."""

    intercept: float
    relevance: float
    coverage: float

    def of(self, relevance: float, coverage: float) -> float:
        """The calibrated relevance of one memory, in [0, 1]."""
        z = self.intercept + self.relevance * relevance + self.coverage * coverage
        if z < -700:  # exp would overflow; the value is 0 to the last bit anyway
            return 0.0
        return 1.0 / (1.0 + math.exp(-z))


CALIBRATION: Final = Calibration(intercept=-5.47, relevance=7.593, coverage=2.712)
"""Fitted by ``memstack bench calibrate`` on the LoCoMo development split's first half
with all-MiniLM-L6-v2 and balanced class weights (see the module's docstring)."""

CONTEXT_MIN_SCORE: Final = 0.43
"""The calibrated relevance a memory needs to go into a ``<recalled-memories>`` block
(``UserMemories.context``, ``ChatSession``): the lowest threshold at which, on the
development split's first half, at most 5% of the blocks built for questions about
another conversation hold anything (``calibrate_fit.pick_threshold``). ``memstack bench
calibrate`` checks it on the second half (the share of such blocks, and what the cut
costs the questions that have evidence). It is stricter than a caller's 0.3, which keeps
more of the evidence and lets more blocks about another conversation hold something."""


def coverage(words: Sequence[str], text: str) -> float:
    """The share of ``words`` (a query's ``query_words``) that ``text`` holds as words."""
    if not words:
        return 0.0
    held = set(tokenize(text))
    return sum(word in held for word in words) / len(words)


def check_min_score(value: object) -> float | None:
    """``value`` as a threshold of the calibrated relevance: None (no cut) or a number
    from 0 to 1; ``InvalidInput`` naming ``min_score`` otherwise."""
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or not 0 <= value <= 1
    ):
        raise InvalidInput(
            f"min_score must be a number from 0 to 1 (a calibrated relevance); got {value!r}.",
            field="min_score",
        )
    return float(value)


def calibrated(
    query: str, ranked: Sequence[RecalledMemory], min_score: float | None = None
) -> list[RecalledMemory]:
    """``ranked`` in its order, each with its calibrated relevance
    (``scores.calibrated``), keeping only those at or above ``min_score`` (all when
    None)."""
    words = query_words(query)
    out = []
    for item in ranked:
        value = CALIBRATION.of(item.scores.relevance, coverage(words, item.text))
        if min_score is None or value >= min_score:
            out.append(replace(item, scores=replace(item.scores, calibrated=value)))
    return out
