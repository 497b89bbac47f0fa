"""Keyword handling shared by the backends: one tokenizer, and BM25 for the reference store.

A query is plain user text. It is split into words (Unicode letters and digits);
everything else (quotes, ``*``, parentheses, ``AND``/``OR``/``NEAR`` as operators) is
just a separator or an ordinary word, so no query can be a syntax error.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

__all__ = ["BM25_B", "BM25_K1", "MAX_QUERY_WORDS", "bm25_scores", "query_words", "tokenize"]

_WORD = re.compile(r"[^\W_]+")
MAX_QUERY_WORDS = 64
BM25_K1 = 1.2
BM25_B = 0.75


def tokenize(text: str) -> list[str]:
    """Lower-cased words: runs of Unicode letters and digits."""
    return _WORD.findall(text.lower())


def query_words(query: str) -> list[str]:
    """The distinct words of ``query`` in order, at most ``MAX_QUERY_WORDS``."""
    return list(dict.fromkeys(tokenize(query)))[:MAX_QUERY_WORDS]


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
