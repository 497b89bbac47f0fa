"""Supersession carries the match (issue 33): a current memory is found through the
versions it closed, on every backend and through ``as_of``; closed versions stay hidden.

The real local model on every backend: "Where does Bob live?" matches the closed "Bob
lives in Lisbon" best, and without the carried match the unrelated "Bob is allergic to
peanuts" ranks above Berlin."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memstack import ManualClock
from memstack.embeddings import LocalEmbedder
from memstack.longterm import Candidate, Collection, LongTermMemory
from memstack.storage import (
    InMemoryRecordStore,
    PostgresRecordStore,
    RecordStore,
    SQLiteRecordStore,
)
from memstack.storage.hybrid import fused_candidates
from tests.longterm.conftest import NOW

DAY = 86_400.0
QUESTION = "Where does Bob live?"
T1, T2, T3 = NOW - 3 * DAY, NOW - 2 * DAY, NOW - DAY
"""Close together: recency alone would not put Berlin above the peanuts."""


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
def bob(
    any_store: RecordStore, local_embedder: LocalEmbedder, clock: ManualClock
) -> LongTermMemory:
    return LongTermMemory(
        collection=Collection(user_id="alice"),
        store=any_store,
        embedder=local_embedder,
        clock=clock,
    )


async def _stored(memory: LongTermMemory, text: str, at: float, *old: str) -> str:
    outcome = await memory.remember(text, created_at=at, supersedes=list(old))
    assert outcome.status == "stored" and outcome.id is not None
    return outcome.id


async def _moved(memory: LongTermMemory) -> tuple[str, str, str]:
    """Lisbon and peanuts at T1; Berlin superseding Lisbon at T3."""
    lisbon = await _stored(memory, "Bob lives in Lisbon", T1)
    peanuts = await _stored(memory, "Bob is allergic to peanuts", T1)
    berlin = await _stored(memory, "Bob moved from Lisbon to Berlin", T3, lisbon)
    return lisbon, peanuts, berlin


async def test_the_bob_question_ranks_berlin_first(bob: LongTermMemory) -> None:
    lisbon, peanuts, berlin = await _moved(bob)
    every = {m.id: m for m in await bob.recall(QUESTION, k=3, include_superseded=True)}
    assert every[lisbon].scores.similarity > every[berlin].scores.similarity

    found = await bob.recall(QUESTION, k=3)
    assert [m.id for m in found] == [berlin, peanuts]  # the closed Lisbon is not returned
    top = found[0].scores
    assert top.inherited_from == lisbon
    assert top.similarity == pytest.approx(every[lisbon].scores.similarity)
    assert found[1].scores.inherited_from is None


async def test_as_of_before_the_move_answers_lisbon_on_its_own(bob: LongTermMemory) -> None:
    lisbon, peanuts, _ = await _moved(bob)
    before = await bob.recall(QUESTION, k=3, as_of=T3 - DAY / 2)
    assert [m.id for m in before] == [lisbon, peanuts]
    assert before[0].scores.inherited_from is None


async def test_a_chain_of_three_versions_carries_the_match_through_both(
    bob: LongTermMemory,
) -> None:
    lisbon = await _stored(bob, "Bob lives in Lisbon", T1)
    peanuts = await _stored(bob, "Bob is allergic to peanuts", T1)
    porto = await _stored(bob, "Bob relocated to Porto for work", T2, lisbon)
    berlin = await _stored(bob, "Bob moved from Porto to Berlin", T3, porto)

    found = await bob.recall(QUESTION, k=3)
    assert [m.id for m in found] == [berlin, peanuts]
    assert found[0].scores.inherited_from == lisbon  # two replacements back

    between = await bob.recall(QUESTION, k=3, as_of=T3 - DAY / 2)
    assert [m.id for m in between] == [porto, peanuts]
    assert between[0].scores.inherited_from == lisbon


async def test_include_superseded_ranks_every_version_on_its_own(bob: LongTermMemory) -> None:
    lisbon, peanuts, berlin = await _moved(bob)
    every = await bob.recall(QUESTION, k=3, include_superseded=True)
    assert every[0].id == lisbon and not every[0].current
    assert {m.id for m in every} == {lisbon, peanuts, berlin}
    assert [m.scores.inherited_from for m in every] == [None, None, None]
    scores = {m.id: m.scores for m in every}
    assert scores[berlin].similarity < scores[lisbon].similarity  # Berlin's own


async def test_a_successor_closed_itself_carries_nothing(bob: LongTermMemory) -> None:
    lisbon, peanuts, berlin = await _moved(bob)
    assert await bob.retire(berlin)
    found = await bob.recall(QUESTION, k=3)
    assert [m.id for m in found] == [peanuts]
    assert found[0].scores.inherited_from is None
    assert lisbon not in [m.id for m in await bob.recall(QUESTION, k=3)]


async def test_a_successor_outside_the_candidates_is_found_through_its_old_version(
    bob: LongTermMemory, local_embedder: LocalEmbedder
) -> None:
    """Sixty neighbours match the question better than Berlin does, by cosine and by
    keywords: Berlin is no candidate of its own (the pool is 50), Lisbon is."""
    lisbon, _, berlin = await _moved(bob)
    text = "Bob's neighbour {} lives in the house next door"
    await bob.remember_many(
        [Candidate(text=text.format(n), created_at=T1) for n in range(60)], dedupe=False
    )
    plain = fused_candidates(
        bob.store,
        [bob.namespace],
        query=QUESTION,
        vector=local_embedder.embed_batch([QUESTION])[0],
        pool=50,
        keyword_weight=bob.keyword_weight,
    )
    assert berlin not in [r.id for r in plain.records]

    found = await bob.recall(QUESTION, k=1)
    assert [m.id for m in found] == [berlin]
    assert found[0].scores.inherited_from == lisbon
    assert await bob.recall(QUESTION, k=1, provenances=["extracted"]) == []  # Berlin: stated
