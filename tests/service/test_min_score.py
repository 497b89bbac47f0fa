"""``min_score`` in the service (issue 33): a user's recall and block, and the keyed
memories' search (issue 34), cut at the calibrated relevance on every backend."""

from __future__ import annotations

import math

import pytest

from memstack import ManualClock
from memstack.embeddings import HashEmbedder
from memstack.errors import InvalidInput
from memstack.longterm.calibration import CALIBRATION, CONTEXT_MIN_SCORE, coverage
from memstack.longterm.render import render_recalled
from memstack.service.memories import MemoryService
from memstack.service.principal import Principal
from memstack.service.users import UserMemories
from memstack.storage import RecordStore
from memstack.storage._text import query_words
from tests.service.test_users import turns_in

A = Principal(tenant="acme", long_term=True)
QUERY = "Biscuit the beagle walks by the river in Lisbon"
VALUES = {
    "pet": "The dog Biscuit is a beagle.",
    "walks": "Biscuit loves long walks by the river.",
    "city": "The user lives in Lisbon.",
    "music": "The user plays the violin on Sundays.",
    "deploy": "Always use blue-green deployments.",
    "editor": "The user writes code in Neovim.",
}
BAD = [-0.1, 1.5, math.nan, "0.5", True]


def _between(values: list[float]) -> float:
    """A threshold with some of ``values`` below it and some above."""
    distinct = sorted(set(values))
    assert len(distinct) >= 3, distinct
    middle = len(distinct) // 2
    return (distinct[middle - 1] + distinct[middle]) / 2


@pytest.fixture
def users(records: RecordStore, clock: ManualClock) -> UserMemories:
    return UserMemories(records=records, embedder=HashEmbedder(), clock=clock)


async def test_a_user_s_recall_and_block_cut_at_min_score(users: UserMemories):
    await users.add_turns(A, "u1", turns_in())
    found = await users.recall(A, "u1", QUERY, k=9, touch=False)
    threshold = _between([m.scores.calibrated for m in found])
    kept = await users.recall(A, "u1", QUERY, k=9, touch=False, min_score=threshold)
    expected = [m for m in found if m.scores.calibrated >= threshold]
    assert [m.id for m in kept] == [m.id for m in expected] and 0 < len(kept) < len(found)
    # The block's default is CONTEXT_MIN_SCORE; 0 keeps all k. Each block touches what it
    # holds, so each is compared with a recall of the moment before it.
    for given, cut in ((threshold, threshold), (None, CONTEXT_MIN_SCORE), (0, 0)):
        now = await users.recall(A, "u1", QUERY, k=9, touch=False)
        block = await users.context(A, "u1", QUERY, k=9, min_score=given)
        assert block == render_recalled([m for m in now if m.scores.calibrated >= cut])
    assert block.count("\n- [") == 9


@pytest.mark.parametrize("value", BAD, ids=repr)
async def test_a_bad_min_score_is_refused_even_when_memory_is_vetoed(
    users: UserMemories, value: object
):
    for vetoed in (None, False):
        with pytest.raises(InvalidInput) as raised:
            await users.recall(A, "u1", "dog", min_score=value, memory_enabled=vetoed)  # type: ignore[arg-type]
        assert raised.value.field == "min_score"
        with pytest.raises(InvalidInput) as raised:
            await users.context(A, "u1", "dog", min_score=value, memory_enabled=vetoed)  # type: ignore[arg-type]
        assert raised.value.field == "min_score"


async def test_the_keyed_search_calibrates_its_score_and_cuts_at_min_score(
    service: MemoryService,
):
    for key, value in VALUES.items():
        await service.store(A, agent_id="bot", key=key, value=value)
    words = query_words(QUERY)
    for mode in ("hybrid", "semantic", "text"):
        hits = await service.search(A, QUERY, agent_id="bot", mode=mode, limit=len(VALUES))
        assert hits, mode
        for hit in hits:  # the hybrid relevance read through the recall's calibration
            text = f"{hit.memory.key}: {hit.memory.value}"
            chance = CALIBRATION.of(hit.score, coverage(words, text))
            assert hit.calibrated == pytest.approx(chance, abs=1e-5)
            assert 0 <= hit.calibrated <= 1
    hits = await service.search(A, QUERY, agent_id="bot", limit=len(VALUES))
    threshold = _between([h.calibrated for h in hits])
    kept = await service.search(A, QUERY, agent_id="bot", limit=len(VALUES), min_score=threshold)
    expected = [h.memory.id for h in hits if h.calibrated >= threshold]
    assert [h.memory.id for h in kept] == expected and 0 < len(kept) < len(hits)
    # Of the ``limit`` best, never more: a cut does not reach further down the ranking.
    top = await service.search(A, QUERY, agent_id="bot", limit=2, min_score=0)
    assert [h.memory.id for h in top] == [h.memory.id for h in hits[:2]]


@pytest.mark.parametrize("value", BAD, ids=repr)
async def test_the_keyed_search_refuses_a_bad_min_score(service: MemoryService, value: object):
    with pytest.raises(InvalidInput) as raised:
        await service.search(A, "dog", min_score=value)  # type: ignore[arg-type]
    assert raised.value.field == "min_score"
