"""The second look (issue 33): when the first look's evidence is thin, a second query made
of what its best memories name finds a memory that shares a name with them but no word
with the question; switched off, recall ranks exactly as before.

The real local model on every backend: asked "What name did the shelter puppy get?", the
first look finds the adoption ("My brother Lars adopted a beagle puppy from the Riverside
shelter") but not the answer ("Lars walks his beagle in Riverside park, where Biscuit..."),
which shares "Lars", "beagle" and "Riverside" with it and no word with the question."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from memstack import ManualClock
from memstack.embeddings import LocalEmbedder
from memstack.longterm import Collection, LongTermMemory
from memstack.longterm.inherit import carried_candidates
from memstack.longterm.scoring import ContextScores, ContextWeights, final_scores, recencies
from memstack.longterm.second_look import (
    THIN_BELOW,
    capped,
    centroid,
    expansion,
    second_look,
    seeds,
    thin,
)
from memstack.storage import (
    InMemoryRecordStore,
    PostgresRecordStore,
    Record,
    RecordStore,
    SQLiteRecordStore,
)
from memstack.storage.hybrid import Candidates, fused_candidates
from tests.longterm.conftest import NOW

QUESTION = "What name did the shelter puppy get?"
ADOPTION = "My brother Lars adopted a beagle puppy from the Riverside shelter."
ANSWER = "Lars walks his beagle in Riverside park, where Biscuit chases every duck."
CONVERSATION = (
    ADOPTION,
    ANSWER,
    "Our old dog sleeps all day now.",
    "We still need a name for the band.",
    "My sister got a kitten for company.",
    "I painted a sunset over the lake.",
    "We finished a treehouse with the kids.",
    "We went hiking last weekend.",
    "The flight back home was long.",
    "The kids keep asking for a hamster.",
    "A neighbour's cat naps on our porch.",
)
K = 4
SHARE = 0.3
"""The share ``memstack bench locomo --ablate second_look`` tries (``bench.locomo.TRIED``)."""


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def any_store(
    request: pytest.FixtureRequest, tmp_path: Path, clock: ManualClock
) -> Iterator[RecordStore]:
    """The in-memory store, a real SQLite file, a real PostgreSQL schema: one clock."""
    store: RecordStore
    if request.param == "memory":
        store = InMemoryRecordStore(clock=clock)
    elif request.param == "sqlite":
        store = SQLiteRecordStore(tmp_path / "ltm.db", clock=clock)
    else:
        url: str = request.getfixturevalue("postgres_url")
        schema: str = request.getfixturevalue("pg_schema")
        store = PostgresRecordStore(url, clock=clock, schema=schema)
    store.setup()
    yield store
    store.close()


@pytest.fixture
async def caroline(
    any_store: RecordStore, local_embedder: LocalEmbedder, clock: ManualClock
) -> LongTermMemory:
    memory = LongTermMemory(
        collection=Collection(user_id="alice"),
        store=any_store,
        embedder=local_embedder,
        clock=clock,
    )
    for text in CONVERSATION:
        outcome = await memory.remember(text, created_at=NOW - 86_400)
        assert outcome.status == "stored"
    return memory


def _looking(memory: LongTermMemory, share: float) -> LongTermMemory:
    memory.context_weights = ContextWeights(second_look=share)
    return memory


async def test_the_answer_is_found_by_the_second_look_and_not_without(
    caroline: LongTermMemory,
) -> None:
    first = await _looking(caroline, 0.0).recall(QUESTION, k=K, touch=False)
    assert first[0].text == ADOPTION
    assert ANSWER not in [m.text for m in first]
    assert max(m.scores.similarity for m in first) < THIN_BELOW  # thin evidence
    again = await _looking(caroline, SHARE).recall(QUESTION, k=K, touch=False)
    assert again[0].text == ADOPTION
    (answer,) = [m for m in again if m.text == ANSWER]
    s = answer.scores
    assert s.second_look > 0 and s.keyword == 0.0  # no word of the question
    assert s.score == pytest.approx(
        0.7 * (s.relevance + s.session + s.speaker + s.time + s.second_look)
        + 0.2 * s.recency
        + 0.1 * s.importance
    )
    assert [m.scores.score for m in again] == sorted((m.scores.score for m in again), reverse=True)


async def test_switched_off_recall_ranks_exactly_as_the_plain_hybrid_score(
    caroline: LongTermMemory, local_embedder: LocalEmbedder, clock: ManualClock
) -> None:
    """Off (the default), a thin question ranks by fused candidates and context terms
    alone, every score term as it was: the ranking recall made before the second look."""
    got = await caroline.recall(QUESTION, k=K, touch=False)
    assert caroline.context_weights == ContextWeights()
    vector = local_embedder.embed_batch([QUESTION])[0]
    found = fused_candidates(
        caroline.store,
        [caroline.namespace],
        query=QUESTION,
        vector=vector,
        pool=50,
        keyword_weight=caroline.keyword_weight,
        model_id=local_embedder.model_id,
    )
    assert max(found.similarity) < THIN_BELOW  # a question the second look would take
    records = found.records
    context = ContextScores.of_columns(
        QUESTION,
        relevance=found.relevance,
        texts=[r.text for r in records],
        sessions=[None] * len(records),
        speakers=[None] * len(records),
        weights=ContextWeights(),
    )
    scores = final_scores(
        relevance=found.relevance,
        lift=context.lifts,
        recency=recencies(
            created_at=[r.created_at for r in records],
            last_accessed_at=[r.last_accessed_at for r in records],
            now=clock.now(),
        ),
        importance=[r.importance for r in records],
    )
    order = sorted(
        range(len(records)), key=lambda i: (-scores[i], -found.relevance[i], records[i].id)
    )
    assert [m.id for m in got] == [records[i].id for i in order[:K]]
    assert [m.scores.score for m in got] == pytest.approx([scores[i] for i in order[:K]])
    assert all(m.scores.second_look == 0.0 for m in got)


async def test_clear_evidence_takes_no_second_look(caroline: LongTermMemory) -> None:
    """A question its best memory answers closely is ranked the same with the mechanism on."""
    question = "Which beagle puppy did Lars adopt from the Riverside shelter?"
    off = await _looking(caroline, 0.0).recall(question, k=K, touch=False)
    assert max(m.scores.similarity for m in off) >= THIN_BELOW
    on = await _looking(caroline, SHARE).recall(question, k=K, touch=False)
    assert [(m.id, m.scores) for m in on] == [(m.id, m.scores) for m in off]


async def test_a_memory_only_the_second_look_finds_joins_the_candidates(
    caroline: LongTermMemory, local_embedder: LocalEmbedder
) -> None:
    """With a pool too small to hold the answer, the second look brings it in, matched
    to the question by its cosine alone (no question word), with its term."""
    vector = local_embedder.embed_batch([QUESTION])[0]
    where = {
        "query": QUESTION,
        "vector": vector,
        "pool": 4,
        "keyword_weight": caroline.keyword_weight,
        "filter": None,
        "model_id": local_embedder.model_id,
    }
    found = carried_candidates(caroline.store, caroline.namespace, **where)
    assert ANSWER not in [r.text for r in found.records]
    joined, terms = second_look(
        caroline.store, caroline.namespace, found=found, share=SHARE, **where
    )
    assert terms is not None and len(terms) == len(joined.records)
    assert joined.records[: len(found.records)] == found.records  # the first look's, in order
    (row,) = [i for i, r in enumerate(joined.records) if r.text == ANSWER]
    assert row >= len(found.records) and terms[row] > 0
    (cosine,) = [
        h.score
        for h in caroline.store.vector_search(caroline.namespace, vector, k=20)
        if h.record.text == ANSWER
    ]
    assert joined.similarity[row] == pytest.approx(cosine, abs=1e-5)
    assert joined.keyword is not None and joined.keyword[row] == 0.0
    assert joined.relevance[row] == pytest.approx((1 - caroline.keyword_weight) * cosine, abs=1e-5)
    off = second_look(caroline.store, caroline.namespace, found=found, share=0.0, **where)
    assert off[0] is found and off[1] is None


@pytest.mark.parametrize(
    ("similarity", "below", "expected"),
    [
        ([], THIN_BELOW, False),  # nothing found: nothing to look from
        ([0.2, 0.5, 0.6], THIN_BELOW, True),
        ([0.2, 0.7], THIN_BELOW, False),
        ([THIN_BELOW], THIN_BELOW, False),  # reaching the bar is clear evidence
        ([0.5], 0.5, False),
        ([0.49], 0.5, True),
        ([-0.3, -0.1], THIN_BELOW, True),
    ],
)
def test_thin_evidence(similarity: list[float], below: float, expected: bool) -> None:
    assert thin(similarity, below) is expected


def test_expansion_holds_what_the_hits_name_and_the_question_lacks() -> None:
    words = expansion(
        "Where did Caroline move from?",
        ["Caroline: I moved from my home country, Sweden.", "Caroline: Sweden in May 2019!"],
    )
    # once each, in order; "moved" is the question's "move"; no "my", no "i"
    assert words == "home country sweden may 2019"


def test_expansion_keeps_at_most_a_query_of_words() -> None:
    many = " ".join(f"word{n}" for n in range(100))
    assert len(expansion("question", [many]).split()) == 64
    assert expansion("the cat", ["The cat: a cat."]) == ""


def test_centroid_leans_to_the_more_relevant_hit() -> None:
    a, b = np.array([1.0, 0.0], np.float32), np.array([0.0, 1.0], np.float32)
    mean = centroid([a, b], [3.0, 1.0])
    assert mean is not None and np.linalg.norm(mean) == pytest.approx(1.0)
    assert mean[0] > mean[1] > 0
    assert centroid([], []) is None
    assert centroid([a, -a], [1.0, 1.0]) is None  # they cancel out
    assert centroid([a], [0.0]) is None


def test_seeds_are_the_most_relevant_first_ties_by_id() -> None:
    records = [Record(id=i, namespace="n", text=i, created_at=NOW, updated_at=NOW) for i in "dcba"]
    found = Candidates(
        records=records, similarity=[0.0] * 4, keyword=None, relevance=[0.2, 0.5, 0.5, 0.9]
    )
    assert seeds(found, 3) == [3, 2, 1]  # "a" (0.9), then "b" before "c" at 0.5


def test_a_seed_gains_no_more_than_the_best_memory_beyond_the_seeds() -> None:
    assert capped([0.9, 0.2, 0.5, 0.1], [0, 1]) == [0.5, 0.2, 0.5, 0.1]
    assert capped([0.9, 0.8], [0, 1]) == [0.0, 0.0]  # nothing beyond them: no term
