"""Keyword handling shared by the backends: one tokenizer, query words, BM25 constants.

A query is plain user text. It is split into words (Unicode letters and digits);
everything else (quotes, ``*``, parentheses, ``AND``/``OR``/``NEAR`` as operators) is
just a separator or an ordinary word, so no query can be a syntax error. English stop
words are dropped from a query (unless nothing else is left): with any-word matching
they only add noise, and they cost recall on LoCoMo.

Two lists, as data here and nowhere else: ``STOPWORDS`` (Snowball's English list, which
PostgreSQL's ``english`` text search drops too) for every keyword search, long-term
recall included; ``SEARCH_STOPWORDS`` adds PubMed's list for the keyed memory search
(``MemoryService.search``), whose memories are short facts asked about in questions:
there a generic verb of the question ("what editor does the user *use*?") otherwise
matches an unrelated fact ("Always use blue-green deployments") as strongly as the
fact asked about. Recall keeps the shorter list: measured on LoCoMo (``memstack bench
locomo`` with each list), the longer one cost recall a little, while a keyed search over
the same turns ranked them as well with it as without.
"""

from __future__ import annotations

import re

__all__ = [
    "BM25_B",
    "BM25_K1",
    "MAX_QUERY_WORDS",
    "PUBMED_STOPWORDS",
    "SEARCH_STOPWORDS",
    "STOPWORDS",
    "keyword_query",
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
PUBMED_STOPWORDS = frozenset(
    """a about again all almost also although always among an and another any are as at be
    because been before being between both but by can could did do does done due during
    each either enough especially etc for found from further had has have having here
    how however i if in into is it its itself just kg km made mainly make may mg might
    ml mm most mostly must nearly neither no nor obtained of often on our overall
    perhaps pmid quite rather really regarding seem seen several should show showed
    shown shows significantly since so some such than that the their theirs them then
    there therefore these they this those through thus to upon use used using various
    very was we were what when which while with within without would""".split()
)
"""The stopword list of PubMed (NCBI), as its search drops them from a query."""
SEARCH_STOPWORDS = STOPWORDS | PUBMED_STOPWORDS
"""The keyed memory search's stop words (see the module's docstring)."""


def tokenize(text: str) -> list[str]:
    """Lower-cased words: runs of Unicode letters and digits."""
    return _WORD.findall(text.lower())


def query_words(query: str, stopwords: frozenset[str] = STOPWORDS) -> list[str]:
    """The distinct words of ``query`` in order, ``stopwords`` dropped unless they are
    all there is, at most ``MAX_QUERY_WORDS``."""
    words = list(dict.fromkeys(tokenize(query)))
    content = [w for w in words if w not in stopwords]
    return (content or words)[:MAX_QUERY_WORDS]


def keyword_query(query: str, stopwords: frozenset[str]) -> str:
    """``query`` as the words a keyword search should match: its ``query_words`` without
    ``stopwords``, or all of them when nothing else is left."""
    words = query_words(query)
    return " ".join([w for w in words if w not in stopwords] or words)
