"""Keyword handling shared by the backends: one tokenizer, query words, BM25 constants.

A query is plain user text. It is split into words (Unicode letters and digits);
everything else (quotes, ``*``, parentheses, ``AND``/``OR``/``NEAR`` as operators) is
just a separator or an ordinary word, so no query can be a syntax error. English stop
words are dropped from a query (unless nothing else is left): with any-word matching
they only add noise, and they cost recall on LoCoMo.
"""

from __future__ import annotations

import re

__all__ = [
    "BM25_B",
    "BM25_K1",
    "MAX_QUERY_WORDS",
    "STOPWORDS",
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
