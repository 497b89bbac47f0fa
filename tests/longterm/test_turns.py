"""remember_turns: verbatim conversation memory with each turn's neighbours as context."""

from __future__ import annotations

import pytest

from memstack.errors import InvalidInput
from memstack.longterm import LongTermMemory, render_recalled
from memstack.longterm.turns import Turn, session_date

DAY = 1_683_554_160.0  # 8 May 2023, 13:56 UTC


def turn(speaker: str, text: str, session: str = "s1", **fields: object) -> Turn:
    return Turn(speaker=speaker, text=text, time=DAY, session_id=session, **fields)  # type: ignore[arg-type]


CHAT = [
    turn("Bob", "How long have you been married?"),
    turn("Alice", "5 years already!"),
    turn("Bob", "Wow, congratulations"),
    turn("Alice", "Thanks, we met in Lisbon"),
    turn("Bob", "Lovely city"),
]


async def contexts(memory: LongTermMemory) -> dict[str, str | None]:
    return {item.text: item.context for item in await memory.items()}


async def test_each_turn_is_stored_verbatim_with_its_neighbours_as_context(
    memory: LongTermMemory,
) -> None:
    outcomes = await memory.remember_turns(CHAT)
    assert [o.status for o in outcomes] == ["stored"] * 5
    items = {item.text: item for item in await memory.items()}
    answer = items["Alice: 5 years already!"]
    assert answer.kind == "event" and answer.created_at == DAY
    assert answer.metadata == {"speaker": "Alice", "session_id": "s1", "turn_seq": 1}
    assert session_date(DAY) == "8 May 2023"
    # two turns either side, in the order they were said; the turn itself is not repeated
    assert answer.context == (
        "[8 May 2023]\nBob: How long have you been married?\nBob: Wow, congratulations\n"
        "Alice: Thanks, we met in Lisbon"
    )
    first = items["Bob: How long have you been married?"]
    assert first.context == ("[8 May 2023]\nAlice: 5 years already!\nBob: Wow, congratulations")


async def test_turns_arriving_one_at_a_time_end_with_the_same_contexts(
    memory: LongTermMemory, store, embedder, clock
) -> None:
    for one in CHAT:
        await memory.remember_turns([one])
    streamed = await contexts(memory)
    batch = LongTermMemory(
        collection=memory.collection.__class__(user_id="bob", namespace="chat"),
        store=store,
        embedder=embedder,
        clock=clock,
    )
    await batch.remember_turns(CHAT)
    assert streamed == await contexts(batch)
    assert all(streamed.values())


async def test_sessions_keep_their_own_neighbours(memory: LongTermMemory) -> None:
    await memory.remember_turns(
        [turn("Bob", "Morning!", "a"), turn("Bob", "Evening!", "b"), turn("Ann", "Hi", "a")]
    )
    found = await contexts(memory)
    assert found["Bob: Morning!"] == "[8 May 2023]\nAnn: Hi"
    assert found["Bob: Evening!"] == "[8 May 2023]"


async def test_a_secret_turn_is_refused_and_never_appears_in_a_neighbours_context(
    memory: LongTermMemory,
) -> None:
    key = "sk-" + "A1b2C3d4" * 4
    outcomes = await memory.remember_turns(
        [turn("Bob", "here is the key"), turn("Bob", f"use {key}"), turn("Ann", "got it")]
    )
    assert [o.status for o in outcomes] == ["stored", "secret", "stored"]
    assert outcomes[1].secret_kind
    found = await contexts(memory)
    assert len(found) == 2
    assert all(key not in (context or "") for context in found.values())


async def test_the_same_turn_sent_again_is_replaced_where_it_stood(
    memory: LongTermMemory,
) -> None:
    await memory.remember_turns([turn("Bob", "one", id="t1"), turn("Ann", "two", id="t2")])
    await memory.remember_turns([turn("Bob", "one, corrected", id="t1")])
    items = {item.id: item for item in await memory.items()}
    assert len(items) == 2
    assert items["t1"].text == "Bob: one, corrected" and items["t1"].metadata["turn_seq"] == 0
    assert items["t2"].context == "[8 May 2023]\nBob: one, corrected"


async def test_context_radius_zero_stores_no_context(memory: LongTermMemory) -> None:
    await memory.remember_turns(CHAT, context_radius=0)
    assert set((await contexts(memory)).values()) == {None}


async def test_context_is_returned_but_never_rendered(memory: LongTermMemory) -> None:
    await memory.remember_turns(CHAT)
    recalled = await memory.recall("How long married?", 5)
    assert any(r.context for r in recalled)
    block = render_recalled(recalled)
    assert "5 years already!" in block
    assert "[8 May 2023]" not in block  # the context's first line, which no text holds


async def test_keyword_search_reaches_the_answer_through_its_context(
    memory: LongTermMemory,
) -> None:
    # "married" is said only by Bob's question; Alice's answer holds it in its context
    await memory.remember_turns(CHAT, context_radius=0)
    without = [r.text for r in await memory.recall("married", 5) if r.scores.keyword > 0]
    assert without == ["Bob: How long have you been married?"]
    await memory.clear()
    await memory.remember_turns(CHAT)
    with_context = [r.text for r in await memory.recall("married", 5) if r.scores.keyword > 0]
    assert "Alice: 5 years already!" in with_context


@pytest.mark.parametrize(
    ("bad", "field"),
    [
        (turn("", "hi"), "turns[0].speaker"),
        (turn("Bob", "  "), "turns[0].text"),
        (turn("Bob", "hi", session=""), "turns[0].session_id"),
        (Turn(speaker="Bob", text="hi", time=float("nan"), session_id="s"), "turns[0].time"),
        (turn("Bob", "hi", metadata={"speaker": "Eve"}), "turns[0].metadata"),
        (turn("Bob", "hi", metadata={"x": object()}), "turns[0].metadata"),
        ("Bob: hi", "turns[0]"),
    ],
)
async def test_bad_turns_name_the_field_and_store_nothing(
    memory: LongTermMemory, bad: object, field: str
) -> None:
    with pytest.raises(InvalidInput) as error:
        await memory.remember_turns([bad])  # type: ignore[list-item]
    assert error.value.field is not None and error.value.field.startswith(field)
    assert await memory.count() == 0


async def test_context_radius_is_checked(memory: LongTermMemory) -> None:
    with pytest.raises(InvalidInput, match="context_radius"):
        await memory.remember_turns(CHAT, context_radius=11)
    assert await memory.count() == 0


# -- the context terms of the score ---------------------------------------------------


def candidate(relevance: float, text: str = "x", session: str | None = None, speaker=None):
    from memstack.longterm.scoring import ContextCandidate

    return ContextCandidate(relevance=relevance, text=text, session_id=session, speaker=speaker)


def test_session_evidence_is_a_share_of_the_best_relevance_in_the_session() -> None:
    from memstack.longterm.scoring import ContextWeights, context_terms

    terms = context_terms(
        "anything",
        [
            candidate(0.9, session="a"),
            candidate(0.2, session="a"),
            candidate(0.5, session="b"),
            candidate(0.8),
        ],
        ContextWeights(),
    )
    assert [t.session for t in terms] == pytest.approx([0.27, 0.27, 0.15, 0.0])


def test_the_speaker_term_needs_exactly_one_named_speaker() -> None:
    from memstack.longterm.scoring import ContextWeights, context_terms, named_speaker

    pool = [candidate(0.5, speaker="Alice"), candidate(0.5, speaker="Bob Stone")]
    assert [t.speaker for t in context_terms("What did alice say?", pool, ContextWeights())] == [
        0.05,
        0.0,
    ]
    assert named_speaker("Did Alice meet Bob Stone?", ["Alice", "Bob Stone"]) is None
    assert named_speaker("Did Bob meet anyone?", ["Alice", "Bob Stone"]) is None
    assert named_speaker("Where is Alicent?", ["Alice"]) is None  # whole words only


def test_the_time_term_lifts_dated_memories_on_when_questions_only() -> None:
    from memstack.longterm.scoring import ContextWeights, asks_for_time, context_terms

    pool = [candidate(0.5, "we moved last year"), candidate(0.5, "we moved to Berlin")]
    assert [t.time for t in context_terms("When did they move?", pool, ContextWeights())] == [
        0.1,
        0.0,
    ]
    assert [t.time for t in context_terms("Where did they move?", pool, ContextWeights())] == [
        0.0,
        0.0,
    ]
    assert asks_for_time("How long have you lived there?")
    assert not asks_for_time("Tell me when you can")


def test_each_candidates_lift_is_the_sum_of_its_context_terms() -> None:
    from memstack.longterm.scoring import ContextScores, ContextWeights

    pool = [
        candidate(0.9, "we met on Monday", session="a", speaker="Alice"),
        candidate(0.4, "we met at the cafe", session="a", speaker="Bob"),
        candidate(0.6, "last year", session="b", speaker="Alice"),
        candidate(0.3, "nothing dated"),
    ]
    scores = ContextScores("When did Alice meet Bob's sister?", pool, ContextWeights())
    terms = [scores.terms(i) for i in range(len(pool))]  # two speakers named: no speaker term
    assert [v for t in terms for v in (t.session, t.speaker, t.time)] == pytest.approx(
        [0.27, 0.0, 0.1, 0.27, 0.0, 0.0, 0.18, 0.0, 0.1, 0.0, 0.0, 0.0]
    )
    assert scores.lifts == pytest.approx([t.session + t.speaker + t.time for t in terms])
    alone = ContextScores("When did Alice leave?", pool, ContextWeights())
    assert alone.lifts == pytest.approx([0.42, 0.27, 0.33, 0.0])


def test_with_the_context_terms_off_the_score_is_spec_001s() -> None:
    from memstack.longterm.scoring import ContextTerms, hybrid_score

    plain = hybrid_score(similarity=0.6, recency=0.5, importance=0.5)
    lifted = hybrid_score(
        similarity=0.6,
        recency=0.5,
        importance=0.5,
        context=ContextTerms(session=0.2, speaker=0.05, time=0.1),
    )
    assert plain.score == pytest.approx(0.7 * 0.6 + 0.2 * 0.5 + 0.1 * 0.5)
    assert lifted.score == pytest.approx(plain.score + 0.7 * 0.35)
    assert (lifted.session, lifted.speaker, lifted.time) == (0.2, 0.05, 0.1)
    assert lifted.relevance == plain.relevance


async def test_recall_shows_every_term_and_contextweights_off_switches_them_off(
    store, embedder, clock
) -> None:
    from memstack.longterm import Collection
    from memstack.longterm.scoring import ContextWeights

    def memory(weights: ContextWeights | None) -> LongTermMemory:
        return LongTermMemory(
            collection=Collection(user_id="u", namespace="chat"),
            store=store,
            embedder=embedder,
            clock=clock,
            context_weights=weights,
        )

    await memory(None).remember_turns(CHAT)
    on = {r.text: r.scores for r in await memory(None).recall("When did Alice marry?", 5)}
    answer = on["Alice: 5 years already!"]
    assert answer.session > 0 and answer.speaker == 0.05 and answer.time == 0.1
    off = await memory(ContextWeights.off()).recall("When did Alice marry?", 5)
    assert all((r.scores.session, r.scores.speaker, r.scores.time) == (0, 0, 0) for r in off)


async def test_recall_ranks_by_the_score_its_breakdown_shows(memory: LongTermMemory) -> None:
    await memory.remember_turns(CHAT)
    await memory.remember("Alice married Bob five years ago", importance=0.9)
    recalled = await memory.recall("When did Alice marry?", 6)
    scores = [r.score for r in recalled]
    assert scores == sorted(scores, reverse=True) and len(recalled) == 6
    for r in recalled:
        s = r.scores
        lifted = s.relevance + s.session + s.speaker + s.time
        assert s.score == pytest.approx(0.7 * lifted + 0.2 * s.recency + 0.1 * s.importance)


def test_which_state_time_matches_states_time_text_by_text() -> None:
    from memstack.longterm.scoring import states_time, which_state_time

    texts = [
        "We met last week",
        "",
        "last",
        "week of fun",
        "no time here",
        "In 2019 I moved",
        "Sunday",
        "last\nweek",
    ]
    assert which_state_time(texts) == [states_time(t) for t in texts]
    assert which_state_time(texts) == [True, False, False, True, False, True, True, True]
    assert which_state_time([]) == []


def test_which_state_time_keeps_each_texts_answer_within_its_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from memstack.longterm import scoring

    monkeypatch.setattr(scoring, "_STATED", {})
    monkeypatch.setattr(scoring, "_STATED_MAX", 4)
    first = ["We met yesterday", "no time", "We met yesterday", "in 2020"]
    assert scoring.which_state_time(first) == [True, False, True, True]
    assert scoring._STATED == {"We met yesterday": True, "no time": False, "in 2020": True}
    # known and new together; past the bound it starts over
    mixed = ["no time", "next week", "plain", "months ago", "in 2020"]
    assert scoring.which_state_time(mixed) == [scoring.states_time(t) for t in mixed]
    assert len(scoring._STATED) <= 4
    assert scoring.which_state_time(mixed) == [False, True, False, True, True]
