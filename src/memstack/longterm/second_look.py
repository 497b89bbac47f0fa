"""The second look: when a recall's evidence is thin, ask again with what its top hits name.

A multi-hop question needs memories that share something with each other but not the
question's words. Asked "Where did Caroline move from?", the first look finds "I moved
from my home country"; the answer, "a gift from my grandma in my home country, Sweden",
shares "home country" with that turn and nothing with the question. So when the first
look's evidence is thin (``thin``: no memory's meaning is close to the question's),
the words its top hits hold that the query lacks (names, places, dates, rare words) and
the mean of their embeddings make a second hybrid query over the same memories. Every
memory that query finds gets a share of its relevance there as a context term
(``ContextTerms.second_look``, beside the session and speaker terms), and those the first
look missed join the candidates, scored against the query like any other.

Off unless ``ContextWeights.second_look`` is above 0 (the share). ``memstack bench locomo
--ablate second_look`` measures it; docs/benchmarks.md holds what it did there.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Final

import numpy as np
import numpy.typing as npt

from memstack.longterm.inherit import Carried
from memstack.storage import Filter, Record, RecordStore
from memstack.storage._keywords import stem_words
from memstack.storage._text import MAX_QUERY_WORDS, STOPWORDS, tokenize
from memstack.storage.hybrid import Candidates, fused_candidates

__all__ = [
    "SEEDS",
    "THIN_BELOW",
    "capped",
    "centroid",
    "expansion",
    "second_look",
    "seeds",
    "thin",
]

SEEDS: Final = 3
"""How many of the first look's best memories the second look asks with: one is a single
reading of the question, more bring in words of memories that do not answer it."""
THIN_BELOW: Final = 0.65
"""Evidence is thin when no candidate's cosine with the query reaches this. Cosine, not
the hybrid relevance: its keyword half is divided by the best match of each query, so the
best memory's relevance stays high however weak the match; a cosine means the same from
one query to the next. A memory that close answers the question, and a second look would
only add noise."""
_MIN_WORD: Final = 3
"""Shorter words ("ok", "go") name nothing a second query could follow."""


def thin(similarity: Sequence[float], below: float = THIN_BELOW) -> bool:
    """Whether the first look found no clear answer: candidates there are, and the best
    cosine among them stays under ``below`` (no candidates: nothing to look from)."""
    return bool(similarity) and max(similarity) < below


def seeds(found: Candidates, n: int = SEEDS) -> list[int]:
    """The rows of the ``n`` most relevant candidates, best first (ties: the smaller id),
    the memories whose names the second look follows."""
    relevance, records = found.relevance, found.records
    order = sorted(range(len(records)), key=lambda i: (-relevance[i], records[i].id))
    return order[:n]


def expansion(query: str, texts: Sequence[str]) -> str:
    """The words of ``texts`` the query lacks, in order, each once: what the top hits
    name that the question did not. Told apart by stem, as keyword search tells them
    ("moved" is the question's "move"); stop words and words under three letters left out,
    keyword search weighs the rest by how rare they are."""
    seen = set(stem_words(tokenize(query)))
    words: list[str] = []
    for text in texts:
        kept = [w for w in tokenize(text) if len(w) >= _MIN_WORD and w not in STOPWORDS]
        for word, stem in zip(kept, stem_words(kept), strict=True):
            if stem not in seen:
                seen.add(stem)
                words.append(word)
    return " ".join(words[:MAX_QUERY_WORDS])


def centroid(
    vectors: Sequence[npt.NDArray[np.float32]], weights: Sequence[float]
) -> npt.NDArray[np.float32] | None:
    """The unit mean of the top hits' embeddings, each weighed by its relevance (a clear
    best hit leads the meaning the second look follows); None when there is none, or they
    cancel out."""
    if not vectors or sum(weights) <= 0:
        return None
    mean = np.average(np.stack(vectors).astype(np.float64), axis=0, weights=weights)
    norm = float(np.linalg.norm(mean))
    return None if norm == 0.0 else (mean / norm).astype(np.float32)


def second_look(
    store: RecordStore,
    namespace: str,
    *,
    query: str,
    vector: npt.NDArray[np.float32],
    found: Carried,
    share: float,
    pool: int,
    keyword_weight: float,
    filter: Filter | None,
    model_id: str | None,
) -> tuple[Carried, list[float] | None]:
    """``found`` with what a second look adds when its evidence is ``thin``: the
    candidates it missed and, per candidate in order, ``share`` of its relevance to the
    second query (None: no second look, ``found`` is returned as it was)."""
    if share <= 0 or not thin(found.similarity):
        return found, None
    rows = seeds(found)
    words = expansion(query, [found.records[i].text for i in rows])
    embedded = [
        (e, found.relevance[i]) for i in rows if (e := found.records[i].embedding) is not None
    ]
    again = centroid([e for e, _ in embedded], [max(0.0, r) for _, r in embedded])
    if not words and again is None:
        return found, None
    second = fused_candidates(
        store,
        [namespace],
        query=words,
        vector=again,
        pool=pool,
        keyword_weight=keyword_weight if words else 0.0,  # no words: no keyword half
        filter=filter,
        model_id=model_id,
    )
    echo = {found.records[i].id for i in rows}
    blend = keyword_weight if again is not None else 1.0  # no vector: keywords alone
    joined, bonus = _joined(found, beyond(second, echo, blend), vector, share, keyword_weight)
    return joined, capped(bonus, rows)


def beyond(second: Candidates, seed_ids: set[str], keyword_weight: float) -> Candidates:
    """``second`` with its keyword scores divided by the best among the memories that
    are not seeds (at most 1): a seed holds every word of the second query, and divided by
    its score a memory that shares only a name with it would count for little."""
    if second.keyword is None:
        return second
    best = max(
        (k for r, k in zip(second.records, second.keyword, strict=True) if r.id not in seed_ids),
        default=0.0,
    )
    if best <= 0:
        return second
    keyword = [min(1.0, k / best) for k in second.keyword]
    relevance = [
        (1 - keyword_weight) * s + keyword_weight * k
        for s, k in zip(second.similarity, keyword, strict=True)
    ]
    return replace(second, keyword=keyword, relevance=relevance)


def capped(bonus: Sequence[float], seed_rows: Sequence[int]) -> list[float]:
    """``bonus`` with each seed's term cut to the best term of a memory that is not a
    seed: a seed matches the second query by its own words and meaning, so its own term
    would only echo the first look. Capped, the seeds keep their lead and gain nothing
    from themselves."""
    seeded = set(seed_rows)
    best = max((b for i, b in enumerate(bonus) if i not in seeded), default=0.0)
    return [min(b, best) if i in seeded else b for i, b in enumerate(bonus)]


def _joined(
    found: Carried,
    second: Candidates,
    vector: npt.NDArray[np.float32],
    share: float,
    keyword_weight: float,
) -> tuple[Carried, list[float]]:
    """``found`` with the memories only ``second`` holds appended, and each candidate's
    share of its ``second`` relevance. An appended memory matches the query by its cosine
    alone: its keyword match was too weak to be gathered, so it counts as none."""
    at = {r.id: i for i, r in enumerate(found.records)}
    new = [r for r in second.records if r.id not in at]
    at.update((r.id, len(found.records) + n) for n, r in enumerate(new))
    bonus = [0.0] * len(at)
    for record, relevance in zip(second.records, second.relevance, strict=True):
        bonus[at[record.id]] = share * relevance
    cosines = [_cosine(r, vector) for r in new]
    keyword = found.keyword
    joined = replace(
        found,
        records=found.records + new,
        similarity=found.similarity + cosines,
        keyword=None if keyword is None else keyword + [0.0] * len(new),
        relevance=found.relevance
        + [c if keyword is None else (1 - keyword_weight) * c for c in cosines],
        via=None if found.via is None else found.via + [None] * len(new),
    )
    return joined, bonus


def _cosine(record: Record, vector: npt.NDArray[np.float32]) -> float:
    """The record's cosine with the query (0 without an embedding, as a search counts it)."""
    if record.embedding is None:
        return 0.0
    norms = float(np.linalg.norm(record.embedding) * np.linalg.norm(vector))
    return 0.0 if norms == 0.0 else float(np.dot(record.embedding, vector)) / norms
