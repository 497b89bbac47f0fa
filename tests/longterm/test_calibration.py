"""The calibrated relevance (issues 33 and 42): a value in [0, 1] that rises with the match,
set on every recalled memory without changing the ranking, ``min_score`` cutting at it in
``LongTermMemory.recall`` and ``ChatSession``'s block, and a mem0-like threshold of 0.3
keeping the obvious answer with the real model."""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import pairwise

import pytest

from memstack import ManualClock
from memstack.embeddings import LocalEmbedder
from memstack.errors import InvalidInput
from memstack.longterm import Collection, LongTermMemory
from memstack.longterm.calibration import (
    CALIBRATION,
    CONTEXT_MIN_SCORE,
    Calibration,
    calibrated,
    check_min_score,
    coverage,
)
from memstack.longterm.chat import ChatSession
from memstack.longterm.render import render_recalled
from memstack.longterm.types import RecalledMemory
from memstack.providers import Completion, Message, ScriptedProvider
from memstack.storage import RecordStore, SQLiteRecordStore
from memstack.storage._text import query_words

FACTS = [
    "The user writes code in Neovim.",
    "Always use blue-green deployments.",
    "The user's dog Biscuit is a beagle.",
    "The user lives in Lisbon, near the river.",
    "The user's favourite editor theme is solarized.",
    "Deployments happen on Tuesdays.",
]
BAD = [-0.1, 1.01, math.nan, math.inf, "0.5", True, [0.5]]


def test_the_chance_rises_with_relevance_and_coverage_and_stays_in_0_1():
    grid = [x / 20 for x in range(-20, 41)]  # relevance may be negative (cosine) or > 1
    for cover in (0.0, 0.25, 0.5, 1.0):
        values = [CALIBRATION.of(r, cover) for r in grid]
        assert all(0.0 <= v <= 1.0 for v in values)
        assert all(a < b for a, b in pairwise(values))
    for relevance in (-0.2, 0.3, 0.8):
        values = [CALIBRATION.of(relevance, c / 10) for c in range(11)]
        assert all(a < b for a, b in pairwise(values))
    assert CALIBRATION.relevance > 0 and CALIBRATION.coverage > 0
    assert CALIBRATION.of(1.0, 1.0) > 0.5 > CALIBRATION.of(0.2, 0.0)
    assert Calibration(intercept=-1e6, relevance=1, coverage=1).of(0, 0) == 0.0  # no overflow
    assert 0 < CONTEXT_MIN_SCORE < 1


def test_coverage_is_the_share_of_the_query_s_words_the_text_holds():
    words = query_words("What editor does the user use?")  # stop words left out
    assert words == ["editor", "user", "use"]
    assert coverage(words, "The user writes code in Neovim.") == pytest.approx(1 / 3)
    assert coverage(words, "The USER's editor: use it!") == 1.0
    assert coverage(words, "Nothing in common.") == 0.0
    assert coverage([], "anything") == 0.0


@pytest.mark.parametrize("value", [None, 0, 1, 0.5, 0.0, 1.0])
def test_a_threshold_is_none_or_a_number_from_0_to_1(value: object):
    assert check_min_score(value) == (None if value is None else float(value))  # type: ignore[arg-type]


@pytest.mark.parametrize("value", BAD, ids=repr)
def test_anything_else_is_invalid_input_naming_min_score(value: object):
    with pytest.raises(InvalidInput) as raised:
        check_min_score(value)
    assert raised.value.field == "min_score" and "min_score" in str(raised.value)


@pytest.fixture
def sqlite(tmp_path) -> RecordStore:
    store = SQLiteRecordStore(tmp_path / "calibration.db")
    store.setup()
    return store


def _memory(store: RecordStore, embedder, clock: ManualClock) -> LongTermMemory:
    return LongTermMemory(
        collection=Collection(user_id="alice"), store=store, embedder=embedder, clock=clock
    )


async def _stored(memory: LongTermMemory) -> None:
    for text in FACTS:
        assert (await memory.remember(text)).status == "stored"


def _between(found: Sequence[RecalledMemory]) -> float:
    """A threshold with some of ``found`` below it and some above."""
    values = sorted({m.scores.calibrated for m in found})
    assert len(values) >= 3, values
    middle = len(values) // 2
    return (values[middle - 1] + values[middle]) / 2


async def test_recall_sets_the_chance_without_changing_the_ranking(real_store, embedder, clock):
    memory = _memory(real_store, embedder, clock)
    await _stored(memory)
    query = "What editor does the user use?"
    found = await memory.recall(query, len(FACTS), touch=False)
    assert len(found) == len(FACTS)
    words = query_words(query)
    for item in found:
        assert item.scores.calibrated == pytest.approx(
            CALIBRATION.of(item.scores.relevance, coverage(words, item.text))
        )
    # Ranked by the hybrid score as before: min_score=0 keeps everything, in that order.
    everything = await memory.recall(query, len(FACTS), touch=False, min_score=0)
    assert [m.id for m in everything] == [m.id for m in found]
    assert [m.score for m in found] == sorted((m.score for m in found), reverse=True)
    # The chance does not rank: the same memories handed to ``calibrated`` keep their order.
    assert [m.id for m in calibrated(query, found[::-1])] == [m.id for m in found[::-1]]


async def test_min_score_cuts_what_is_below_and_nothing_above(real_store, embedder, clock):
    memory = _memory(real_store, embedder, clock)
    await _stored(memory)
    query = "Where does the user live, and what editor does the user use?"
    found = await memory.recall(query, len(FACTS), touch=False)
    threshold = _between(found)
    clock.advance(60)
    kept = await memory.recall(query, len(FACTS), min_score=threshold)
    expected = [m.id for m in found if m.scores.calibrated >= threshold]
    assert [m.id for m in kept] == expected and 0 < len(kept) < len(found)
    assert all(m.scores.calibrated >= threshold for m in kept)
    # Only what was handed out is touched: what the cut left out was not recalled.
    touched = {m.id: m.last_accessed_at for m in await memory.items(limit=100)}
    assert {i for i, at in touched.items() if at == clock.now()} == set(expected)
    assert await memory.recall(query, len(FACTS), min_score=1.0, touch=False) == []


@pytest.mark.parametrize("value", BAD, ids=repr)
async def test_recall_refuses_a_bad_min_score(memory: LongTermMemory, value: object):
    with pytest.raises(InvalidInput) as raised:
        await memory.recall("anything", min_score=value)  # type: ignore[arg-type]
    assert raised.value.field == "min_score"


def _chat(messages: Sequence[Message]) -> Completion:
    return Completion(content="ok")


def _block(provider: ScriptedProvider) -> str:
    """The ``<recalled-memories>`` block of the last model call, "" when there was none."""
    blocks = [m.content for m in provider.calls[-1].messages if "<recalled-memories>" in m.content]
    return blocks[0] if blocks else ""


async def test_chat_session_injects_only_what_reaches_its_threshold(sqlite, embedder, clock):
    memory = _memory(sqlite, embedder, clock)
    await _stored(memory)
    query = "Where does the user live, and what editor does the user use?"
    found = await memory.recall(query, 5, touch=False)
    threshold = _between(found)
    provider = ScriptedProvider(responder=_chat)
    session = ChatSession(provider=provider, model="m", memory=memory, min_score=threshold)
    await session.send(query, memory_enabled=True)
    kept = [m for m in found if m.scores.calibrated >= threshold]
    assert _block(provider) == render_recalled(kept) and 0 < len(kept) < len(found)
    everything = ChatSession(provider=provider, model="m", memory=memory, min_score=None)
    await everything.send(query)
    assert _block(provider).count("\n- [") == 5
    assert ChatSession(provider=provider, model="m").min_score == CONTEXT_MIN_SCORE
    with pytest.raises(InvalidInput) as raised:
        ChatSession(provider=provider, model="m", min_score=2)
    assert raised.value.field == "min_score"


@pytest.fixture(scope="module")
def minilm() -> LocalEmbedder:
    return LocalEmbedder()


async def test_with_the_real_model_the_default_block_holds_nothing_irrelevant(sqlite, minilm):
    """With all-MiniLM-L6-v2, what the calibration was fitted for: the default threshold
    keeps the memory that answers and leaves out those that share a word only, and a
    question about nothing remembered gets no block at all."""
    memory = _memory(sqlite, minilm, ManualClock(start=1_780_000_000.0))
    await _stored(memory)
    provider = ScriptedProvider(responder=_chat)
    session = ChatSession(provider=provider, model="m", memory=memory)
    await session.send("What breed is the user's dog?")
    assert _block(provider).count("\n- [") == 1 and "beagle" in _block(provider)
    await session.send("What editor does the user use?")
    block = _block(provider)
    assert "editor theme" in block and "blue-green" not in block and "beagle" not in block
    await session.send("What is the capital of Peru?")
    assert _block(provider) == ""
    found = await memory.recall("What is the capital of Peru?", 5, touch=False)
    assert len(found) == 5 and max(m.scores.calibrated for m in found) < CONTEXT_MIN_SCORE


async def test_with_the_real_model_the_obvious_answer_clears_a_mem0_threshold(sqlite, minilm):
    """Issue 42: a mem0 user's ``threshold`` of 0.3 keeps the memory that answers, among a
    few unrelated ones, and leaves out one that shares only the word "use"."""
    memory = _memory(sqlite, minilm, ManualClock(start=1_780_000_000.0))
    for text in (
        "Switched to Helix editor.",
        "Always use blue-green deployments",
        "Lives in Lisbon with two cats.",
        "Prefers tea over coffee.",
    ):
        assert (await memory.remember(text)).status == "stored"
    query = "what editor does the user use?"
    found = {m.text: m.scores.calibrated for m in await memory.recall(query, 4, touch=False)}
    assert found["Switched to Helix editor."] >= 0.3 > found["Always use blue-green deployments"]
    kept = await memory.recall(query, 4, touch=False, min_score=0.3)
    assert [m.text for m in kept] == ["Switched to Helix editor."]
    assert await memory.recall("What is the capital of Peru?", 4, min_score=0.3) == []
