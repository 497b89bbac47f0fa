"""The hybrid recall score: 0.7·cosine + 0.2·recency + 0.1·importance, with
keyword relevance blended into the cosine and the context terms of a conversation turn
(session evidence, the speaker the query names, time-aware queries) added to it."""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import accumulate
from typing import Any, Final, NamedTuple

import numpy as np
import numpy.typing as npt
import re2

from memstack.storage._text import tokenize
from memstack.storage.hybrid import KEYWORD_WEIGHT

__all__ = [
    "HALF_LIFE_DAYS",
    "KEYWORD_WEIGHT",
    "ContextCandidate",
    "ContextScores",
    "ContextTerms",
    "ContextWeights",
    "ScoreBreakdown",
    "asks_for_time",
    "context_terms",
    "final_score",
    "final_scores",
    "hybrid_score",
    "named_speaker",
    "recencies",
    "recency",
    "states_time",
]

W_SIMILARITY: Final = 0.7
"""Weight of relevance: cosine similarity, blended with keyword relevance when enabled."""
W_RECENCY: Final = 0.2
W_IMPORTANCE: Final = 0.1
HALF_LIFE_DAYS: Final = 30.0
_DAY: Final = 86_400.0


@dataclass(frozen=True, kw_only=True)
class ContextWeights:
    """How much each context term of a recall may add to a memory's relevance.

    Chosen as mechanisms first, weights second, on the LoCoMo development split: tuned on
    conv-26/30/41, checked on conv-42/43/44. Each term is small next to relevance (0..1)
    so it reorders near-ties rather than overruling what matched: ``session`` adds up to
    0.3 of the best relevance in the same session, ``speaker`` 0.05, ``time`` 0.1. Each
    earns its place: taking any one out lowers R@10, as ``memstack bench locomo --ablate
    session,speaker,time`` shows (its results go to docs/benchmarks.md).
    ``ContextWeights.off()`` gives the plain hybrid score.
    """

    session: float = 0.3
    speaker: float = 0.05
    time: float = 0.1

    @classmethod
    def off(cls) -> ContextWeights:
        return cls(session=0.0, speaker=0.0, time=0.0)


@dataclass(frozen=True, kw_only=True)
class ContextTerms:
    """One memory's context terms (see ``ScoreBreakdown``)."""

    session: float = 0.0
    speaker: float = 0.0
    time: float = 0.0


class ContextCandidate(NamedTuple):
    """What the context terms read of a recall candidate (a named tuple: a recall makes
    one per candidate, and a frozen dataclass costs several times as much to make)."""

    relevance: float
    text: str
    session_id: str | None
    speaker: str | None


def _re2(pattern: str | bytes) -> Any:
    """A case-insensitive RE2 pattern: linear-time by construction, and much faster
    than ``re`` with IGNORECASE on this alternation of words."""
    options = re2.Options()
    options.case_sensitive = False
    return re2.compile(pattern, options=options)


# "When ...", "How long ...", "What year/month/date/day/time ...", "How many days ...":
# questions answered by a time.
_TIME_QUESTION: Final = _re2(
    r"^\W{0,8}(?:when\b|how long\b|since when\b|what (?:year|month|date|day|time)\b"
    r"|how many (?:days|weeks|months|years)\b)"
)
_TIME_WORDS: Final = (
    r"\b(?:yesterday|today|tonight|tomorrow|ago|since|last (?:week|month|year|night|weekend)"
    r"|next (?:week|month|year)|(?:1[89]|20)\d\d|january|february|march|april|may|june|july"
    r"|august|september|october|november|december|monday|tuesday|wednesday|thursday|friday"
    r"|saturday|sunday|weekend|days?|weeks?|months?|years?)\b"
)
_TIME_TEXT: Final = _re2(_TIME_WORDS)
_TIME_TEXT_BYTES: Final = _re2(_TIME_WORDS.encode())


def asks_for_time(query: str) -> bool:
    """Whether ``query`` is answered by a time ("When did...", "How long...")."""
    return _TIME_QUESTION.search(query) is not None


def states_time(text: str) -> bool:
    """Whether ``text`` holds a time expression (a date, a weekday, "last week", "ago")."""
    return _TIME_TEXT.search(text) is not None


def which_state_time(texts: Sequence[str]) -> list[bool]:
    """``states_time`` of each text. A recall asks it of all its candidates, mostly the
    same turns query after query, so each text's answer is kept (``_STATED``, bounded);
    the texts not known yet are found in one scan of them all (a separator no pattern
    spans between them), of UTF-8 bytes: on ``str`` the RE2 binding turns every match's
    byte offset back into characters, which scanning bytes skips."""
    known = [_STATED.get(t) for t in texts]
    if None not in known:
        return [bool(k) for k in known]
    new = list(dict.fromkeys(t for t, k in zip(texts, known, strict=True) if k is None))
    encoded = [t.encode() for t in new]
    starts = list(accumulate((len(t) + 1 for t in encoded), initial=0))
    found = [False] * len(new)
    for match in _TIME_TEXT_BYTES.finditer(b"\n".join(encoded)):
        found[bisect_right(starts, match.start()) - 1] = True
    fresh = dict(zip(new, found, strict=True))
    if len(_STATED) + len(fresh) > _STATED_MAX:
        _STATED.clear()
    _STATED.update(fresh)  # recalls on other threads may read or clear it meanwhile
    return [fresh[t] if k is None else k for t, k in zip(texts, known, strict=True)]


_STATED_MAX: Final = 16_384
_STATED: dict[str, bool] = {}
"""``states_time`` of texts seen lately (a pure function of the text), at most
``_STATED_MAX``: emptied when full."""


def named_speaker(query: str, speakers: Iterable[str]) -> str | None:
    """The one speaker among ``speakers`` that ``query`` names (every word of the name,
    whole words, any case), or None when it names none or several."""
    words = set(tokenize(query))
    named = {s for s in speakers if (parts := tokenize(s)) and words.issuperset(parts)}
    return named.pop() if len(named) == 1 else None


class ContextScores:
    """The context terms of one recall's candidates, worked out once for the whole set:
    ``lifts[i]`` is what they add to candidate ``i``'s relevance and ``terms(i)`` the same
    broken down. Recall ranks every candidate by its lift and builds the breakdown only
    for the memories it returns. ``current_session``, the conversation the query comes
    from, counts as the best evidence: its turns get the session term of the session
    that matched best."""

    def __init__(
        self,
        query: str,
        candidates: Sequence[ContextCandidate],
        weights: ContextWeights,
        *,
        current_session: str | None = None,
    ) -> None:
        self._score(
            query,
            [c.relevance for c in candidates],
            [c.text for c in candidates],
            [c.session_id for c in candidates],
            [c.speaker for c in candidates],
            weights,
            current_session,
        )

    @classmethod
    def of_columns(
        cls,
        query: str,
        *,
        relevance: Sequence[float],
        texts: Sequence[str],
        sessions: Sequence[str | None],
        speakers: Sequence[str | None],
        weights: ContextWeights,
        current_session: str | None = None,
    ) -> ContextScores:
        """The same from one list per field (``ContextCandidate``'s), in candidate order:
        a recall has them as columns and needs no object per candidate."""
        scores = cls.__new__(cls)
        scores._score(query, relevance, texts, sessions, speakers, weights, current_session)
        return scores

    def _score(
        self,
        query: str,
        relevance: Sequence[float],
        texts: Sequence[str],
        sessions: Sequence[str | None],
        speakers: Sequence[str | None],
        weights: ContextWeights,
        current_session: str | None = None,
    ) -> None:
        best: dict[str | None, float] = {}
        for session, r in zip(sessions, relevance, strict=True):
            if r > best.get(session, -math.inf):
                best[session] = r
        best.pop(None, None)
        if current_session in best:  # the caller's own conversation: evidence as good as any
            best[current_session] = max(best.values())
        speaker = named_speaker(query, {s for s in speakers if s}) if weights.speaker else None
        timed = bool(weights.time) and asks_for_time(query)
        share = weights.session
        self._session = [share * best[s] if s in best else 0.0 for s in sessions]
        self._speaker = [
            weights.speaker if speaker is not None and s == speaker else 0.0 for s in speakers
        ]
        if timed:
            self._time = [weights.time if t else 0.0 for t in which_state_time(texts)]
        else:
            self._time = [0.0] * len(texts)
        self.lifts = [
            a + b + c for a, b, c in zip(self._session, self._speaker, self._time, strict=True)
        ]
        """Each candidate's summed context terms, in order."""

    def terms(self, i: int) -> ContextTerms:
        return ContextTerms(session=self._session[i], speaker=self._speaker[i], time=self._time[i])


def context_terms(
    query: str, candidates: Sequence[ContextCandidate], weights: ContextWeights
) -> list[ContextTerms]:
    """Each candidate's context terms, from what the whole candidate set shows: the best
    relevance per session, the speaker the query names, whether it asks for a time."""
    scores = ContextScores(query, candidates, weights)
    return [scores.terms(i) for i in range(len(candidates))]


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
    calibrated: float = 0.0
    """The chance, in [0, 1], that the memory answers the query, the same for every query
    (``longterm.calibration``): what ``min_score`` cuts at. Recall sets it; 0 in a
    breakdown built by hand."""
    session: float = 0.0
    """Session evidence: a share of the best relevance among the candidates of the same
    conversation session (``metadata["session_id"]``)."""
    speaker: float = 0.0
    """For a memory by the one speaker the query names (``metadata["speaker"]``)."""
    time: float = 0.0
    """For a memory that states a time, when the query asks when or how long."""
    provenance: str | None = None
    """How the memory was learned (not a score term: shown so a reader can weigh it)."""
    inherited_from: str | None = None
    """The id of a version this memory replaced whose match it carries: the query matched
    that closed version better than this one, so ``similarity`` and ``keyword`` are that
    version's (None: the memory's own)."""


def recency(*, created_at: float, last_accessed_at: float | None, now: float) -> float:
    """Exponential decay with a 30-day half-life on the later of created / last accessed.

    1.0 for something touched now, 0.5 after 30 days; never above 1 (a future
    timestamp counts as now).
    """
    anchor = max(created_at, last_accessed_at or created_at)
    age_days = max(0.0, now - anchor) / _DAY
    return float(0.5 ** (age_days / HALF_LIFE_DAYS))


def recencies(
    *, created_at: Sequence[float], last_accessed_at: Sequence[float | None], now: float
) -> npt.NDArray[np.float64]:
    """``recency`` of many memories in one pass (may differ from it in the last bit)."""
    created = np.asarray(created_at, dtype=np.float64)
    accessed = np.asarray(
        [a or c for a, c in zip(last_accessed_at, created_at, strict=True)], dtype=np.float64
    )
    age_days = np.maximum(0.0, now - np.maximum(created, accessed)) / _DAY
    return np.power(0.5, age_days / HALF_LIFE_DAYS)


def final_scores(
    *,
    relevance: npt.ArrayLike,
    lift: npt.ArrayLike,
    recency: npt.ArrayLike,
    importance: npt.ArrayLike,
) -> npt.NDArray[np.float64]:
    """``final_score`` of many candidates at once, the same arithmetic element by element."""
    rel, up, rec, imp = (
        np.asarray(a, dtype=np.float64) for a in (relevance, lift, recency, importance)
    )
    return W_SIMILARITY * (rel + up) + W_RECENCY * rec + W_IMPORTANCE * imp


def final_score(*, relevance: float, lift: float, recency: float, importance: float) -> float:
    """The score alone (what ``hybrid_score`` breaks down), ``lift`` the summed context
    terms: recall ranks every candidate by it and builds the breakdown only for those it
    returns."""
    return W_SIMILARITY * (relevance + lift) + W_RECENCY * recency + W_IMPORTANCE * importance


def hybrid_score(
    *,
    similarity: float,
    recency: float,
    importance: float,
    keyword: float | None = None,
    keyword_weight: float = KEYWORD_WEIGHT,
    context: ContextTerms | None = None,
    provenance: str | None = None,
    inherited_from: str | None = None,
) -> ScoreBreakdown:
    """0.7·(relevance + context terms) + 0.2·recency + 0.1·importance.

    Relevance is the cosine similarity when there is no keyword
    evidence (``keyword`` is None: no candidate matched the query's words); otherwise
    ``(1 - keyword_weight)·cosine + keyword_weight·keyword``. The context terms
    (``context_terms``) are 0 for a memory with no session, speaker or time to go by,
    which leaves the plain formula as it was.
    """
    relevance = (
        similarity
        if keyword is None
        else (1 - keyword_weight) * similarity + keyword_weight * keyword
    )
    terms = context or ContextTerms()
    lift = terms.session + terms.speaker + terms.time
    score = final_score(relevance=relevance, lift=lift, recency=recency, importance=importance)
    return ScoreBreakdown(
        similarity=similarity,
        keyword=keyword or 0.0,
        relevance=relevance,
        recency=recency,
        importance=importance,
        score=score,
        session=terms.session,
        speaker=terms.speaker,
        time=terms.time,
        provenance=provenance,
        inherited_from=inherited_from,
    )
