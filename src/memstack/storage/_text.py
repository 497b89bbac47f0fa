"""Keyword handling shared by the backends: one tokenizer, and BM25 for the reference store.

A query is plain user text. It is split into words (Unicode letters and digits);
everything else (quotes, ``*``, parentheses, ``AND``/``OR``/``NEAR`` as operators) is
just a separator or an ordinary word, so no query can be a syntax error. English stop
words are dropped from a query (unless nothing else is left): with any-word matching
they only add noise, and they cost recall on LoCoMo.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

__all__ = [
    "BM25_B",
    "BM25_K1",
    "MAX_QUERY_WORDS",
    "STOPWORDS",
    "bm25_scores",
    "query_words",
    "tokenize",
]

_WORD = re.compile(r"[^\W_]+")
MAX_QUERY_WORDS = 64
BM25_K1 = 1.2
BM25_B = 0.75

STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before
    being below between both but by can cannot could did do does doing down during each few
    for from further had has have having he her here hers herself him himself his how i if in
    into is it its itself me more most my myself no nor not of off on once only or other ought
    our ours ourselves out over own same she should so some such than that the their theirs
    them themselves then there these they this those through to too under until up very was
    we were what when where which while who whom why will with would you your yours yourself
    yourselves s t d ll m re ve""".split()
)


def tokenize(text: str) -> list[str]:
    """Lower-cased words: runs of Unicode letters and digits."""
    return _WORD.findall(text.lower())


def query_words(query: str) -> list[str]:
    """The distinct words of ``query`` in order, stop words dropped unless they are all
    there is, at most ``MAX_QUERY_WORDS``."""
    words = list(dict.fromkeys(tokenize(query)))
    content = [w for w in words if w not in STOPWORDS]
    return (content or words)[:MAX_QUERY_WORDS]


def bm25_scores(query: Sequence[str], documents: Sequence[Sequence[str]]) -> list[float]:
    """Okapi BM25 of each tokenized document for the query words (0.0: no word matches).

    Uses the non-negative IDF ``ln(1 + (N - df + 0.5) / (df + 0.5))``.
    """
    n = len(documents)
    if n == 0 or not query:
        return [0.0] * n
    counts = [Counter(doc) for doc in documents]
    average = sum(len(doc) for doc in documents) / n or 1.0
    idf = {}
    for word in set(query):
        df = sum(1 for c in counts if word in c)
        idf[word] = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
    scores = []
    for doc, c in zip(documents, counts, strict=True):
        norm = BM25_K1 * (1.0 - BM25_B + BM25_B * len(doc) / average)
        scores.append(sum(idf[w] * c[w] * (BM25_K1 + 1.0) / (c[w] + norm) for w in idf if c[w]))
    return scores
