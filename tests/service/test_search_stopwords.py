"""The keyed memory search leaves a question's generic words out of its keyword match
(issue 34): "what editor does the user use?" no longer matches "Always use blue-green
deployments" on "use", on every backend; long-term recall keeps its own, shorter list."""

from __future__ import annotations

import pytest

from memstack.service.memories import MemoryService
from memstack.service.principal import Principal
from memstack.storage._text import (
    SEARCH_STOPWORDS,
    STOPWORDS,
    keyword_query,
    query_words,
)
from tests.service.test_min_score import VALUES

ACME = Principal(tenant="acme")
QUESTION = "what editor does the user use?"


async def test_a_generic_verb_of_the_question_matches_no_fact(service: MemoryService):
    for key, value in VALUES.items():
        await service.store(ACME, agent_id="bot", key=key, value=value)
    hits = await service.search(ACME, QUESTION, agent_id="bot", mode="text", limit=10)
    assert hits[0].memory.key == "editor"
    assert "deploy" not in {h.memory.key for h in hits}
    hybrid = await service.search(ACME, QUESTION, agent_id="bot", limit=10)
    keyword = {h.memory.key: h.keyword for h in hybrid}
    assert keyword["deploy"] == 0 and keyword["editor"] == 1
    # The fact that does hold a content word of the question still matches on it.
    assert keyword["city"] > 0


@pytest.mark.parametrize(
    ("query", "words"),
    [
        (QUESTION, "editor user"),
        ("Which tools are used, and how often?", "tools"),
        ("What do you use?", "use"),  # nothing else is left: kept, as query_words keeps it
        ("Biscuit the beagle", "biscuit beagle"),
    ],
)
def test_keyword_query_drops_the_search_stopwords(query: str, words: str):
    assert keyword_query(query, SEARCH_STOPWORDS) == words


def test_recall_keeps_the_shorter_list():
    assert STOPWORDS < SEARCH_STOPWORDS
    assert query_words(QUESTION) == ["editor", "user", "use"]
