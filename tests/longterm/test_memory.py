import pytest

from memstack import ConfigError, InvalidInput
from memstack.embeddings import HashEmbedder
from memstack.longterm import Candidate, Collection, LongTermMemory
from memstack.providers import Completion, Message, ScriptedProvider

DAY = 86_400.0


async def test_recall_ranks_the_closest_memory_first(memory: LongTermMemory):
    await memory.remember("The user prefers green tea in the morning", kind="preference")
    await memory.remember("The user lives in Oslo", kind="identity")
    await memory.remember("The user is building a Rust compiler", kind="project")
    recalled = await memory.recall("which tea does the user prefer", k=2)
    assert recalled[0].text == "The user prefers green tea in the morning"
    best = recalled[0].scores
    assert best.score == pytest.approx(
        0.7 * best.relevance + 0.2 * best.recency + 0.1 * best.importance
    )
    assert best.keyword == 1.0 and best.similarity > recalled[1].scores.similarity
    assert len(recalled) == 2


async def test_recall_bumps_last_accessed_unless_told_not_to(memory, clock):
    outcome = await memory.remember("The user likes hiking in the mountains")
    clock.advance(10 * DAY)
    (peeked,) = await memory.recall("hiking", k=1, touch=False)
    assert peeked.last_accessed_at is None
    assert peeked.scores.recency == pytest.approx(0.5 ** (10 / 30))
    await memory.recall("hiking", k=1)
    (again,) = await memory.recall("hiking", k=1, touch=False)
    assert again.id == outcome.id
    assert again.last_accessed_at == clock.now()
    assert again.scores.recency == pytest.approx(1.0)


async def test_recency_and_importance_break_ties(memory, clock):
    old = await memory.remember("The user owns a red bicycle", created_at=clock.now() - 60 * DAY)
    new = await memory.remember(
        "The user owns a red bicycle!", created_at=clock.now(), importance=0.5
    )
    assert new.status == "duplicate"  # near-identical text is refused...
    fresh = await memory.remember("The user owns a blue bicycle")  # ...a different fact is not
    ranked = await memory.recall("bicycle", k=2, touch=False)
    assert ranked[0].id == fresh.id and ranked[1].id == old.id
    assert ranked[0].scores.recency == pytest.approx(1.0)
    assert ranked[1].scores.recency == pytest.approx(0.25)


async def test_keyword_weight_zero_is_pure_cosine(store, embedder, clock):
    memory = LongTermMemory(
        collection=Collection(user_id="u"),
        store=store,
        embedder=embedder,
        clock=clock,
        keyword_weight=0,
    )
    await memory.remember("The user collects vinyl records")
    (item,) = await memory.recall("vinyl", k=1)
    assert item.scores.relevance == item.scores.similarity
    assert item.scores.keyword == 0.0


async def test_secrets_are_refused_and_never_stored(memory: LongTermMemory):
    outcome = await memory.remember("my openai key is sk-abcdefghijklmnopqrstuvwx1234")
    assert outcome.status == "secret" and outcome.secret_kind == "openai_key" and outcome.id is None
    assert await memory.count() == 0


async def test_duplicates_are_refused_with_what_they_duplicate(memory: LongTermMemory):
    first = await memory.remember("The user is vegetarian")
    second = await memory.remember("The user is vegetarian")
    assert second.status == "duplicate"
    assert second.duplicate_of == first.id
    assert second.similarity == pytest.approx(1.0)
    assert await memory.count() == 1


async def test_duplicates_within_one_batch(memory: LongTermMemory):
    outcomes = await memory.remember_many(
        [
            Candidate(text="The user has two cats"),
            Candidate(text="The user has two cats"),
            Candidate(text="The user plays chess"),
        ]
    )
    assert [o.status for o in outcomes] == ["stored", "duplicate", "stored"]
    assert outcomes[1].duplicate_of == outcomes[0].id
    without = await memory.remember_many([Candidate(text="The user plays chess")], dedupe=False)
    assert without[0].status == "stored"


async def test_eviction_drops_the_lowest_scored_above_max_items(store, embedder, clock):
    memory = LongTermMemory(
        collection=Collection(user_id="u"), store=store, embedder=embedder, clock=clock, max_items=3
    )
    stale = await memory.remember(
        "Fact about apples", importance=0.1, created_at=clock.now() - 200 * DAY
    )
    await memory.remember("Fact about bananas", importance=0.9, created_at=clock.now() - 200 * DAY)
    await memory.remember("Fact about cherries", importance=0.1)
    await memory.remember("Fact about dates", importance=0.5)
    assert await memory.count() == 3
    assert stale.id not in {item.id for item in await memory.items()}


async def test_max_items_zero_never_evicts(store, embedder, clock):
    memory = LongTermMemory(
        collection=Collection(user_id="u"), store=store, embedder=embedder, clock=clock, max_items=0
    )
    await memory.remember_many(
        [Candidate(text=f"distinct fact number {i} about topic {i * 7}") for i in range(30)]
    )
    assert await memory.count() == 30


async def test_forget_clear_count_items(memory: LongTermMemory):
    a = await memory.remember("The user speaks Norwegian")
    await memory.remember("The user speaks Spanish as well, badly")
    assert await memory.count() == 2
    assert await memory.forget(a.id or "") is True
    assert await memory.forget(a.id or "") is False
    assert [i.text for i in await memory.items()] == ["The user speaks Spanish as well, badly"]
    assert await memory.clear() == 1
    assert await memory.count() == 0


async def test_users_never_see_each_other(store, embedder, clock):
    alice = LongTermMemory(
        collection=Collection(user_id="alice"), store=store, embedder=embedder, clock=clock
    )
    bob = LongTermMemory(
        collection=Collection(user_id="bob"), store=store, embedder=embedder, clock=clock
    )
    await alice.remember("Alice's favourite colour is teal")
    assert await bob.recall("favourite colour", k=5) == []
    assert await bob.clear() == 0
    assert await alice.count() == 1


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda m: m.recall("", 5), "query"),
        (lambda m: m.recall("x", 0), "k"),
        (lambda m: m.recall("x", 101), "k"),
        (lambda m: m.recall("x", True), "k"),
        (lambda m: m.remember("x" * 5000), "text"),
        (lambda m: m.remember("ok", importance=1.5), "importance"),
        (lambda m: m.remember("ok", importance=float("nan")), "importance"),
        (lambda m: m.remember("ok", kind="gossip"), "kind"),
        (lambda m: m.remember("ok", metadata={"x": {1, 2}}), "metadata['x']"),
        (lambda m: m.remember("ok", created_at=float("inf")), "created_at"),
        (lambda m: m.forget(""), "memory_id"),
    ],
)
async def test_bad_input_names_the_field_and_stores_nothing(memory, call, field):
    await memory.remember("The user keeps bees")
    with pytest.raises(InvalidInput) as excinfo:
        await call(memory)
    assert excinfo.value.field == field
    assert await memory.count() == 1


def test_constructor_validation(store, embedder):
    with pytest.raises(InvalidInput, match="max_items"):
        LongTermMemory(
            collection=Collection(user_id="u"), store=store, embedder=embedder, max_items=-1
        )
    with pytest.raises(InvalidInput, match="keyword_weight"):
        LongTermMemory(
            collection=Collection(user_id="u"), store=store, embedder=embedder, keyword_weight=2
        )


EXTRACTED = """{"memories": [
  {"text": "The user prefers answers in French", "kind": "preference", "importance": 0.9},
  {"text": "The user's API key is sk-abcdefghijklmnopqrstuvwxyz123", "importance": 1},
  {"text": "The user prefers answers in French", "kind": "preference", "importance": 0.9},
  {"text": "The user works at a bakery", "kind": "identity", "importance": 0.6}
]}"""


async def test_remember_conversation_extracts_filters_and_dedupes(store, embedder, clock):
    provider = ScriptedProvider([Completion(content=EXTRACTED)])
    memory = LongTermMemory(
        collection=Collection(user_id="u"),
        store=store,
        embedder=embedder,
        clock=clock,
        extraction_provider=provider,
        extraction_model="gpt-4o-mini",
    )
    outcomes = await memory.remember_conversation(
        [
            Message(role="system", content="SYSTEM PROMPT TEXT"),
            Message(
                role="user", content="Please answer in French from now on. I work at a bakery."
            ),
            Message(role="tool", content="TOOL RESULT sk-live-secret", tool_call_id="c1"),
            Message(role="assistant", content="D'accord !"),
        ]
    )
    assert [o.status for o in outcomes] == ["stored", "secret", "duplicate", "stored"]
    assert sorted(i.text for i in await memory.items()) == [
        "The user prefers answers in French",
        "The user works at a bakery",
    ]
    (call,) = provider.calls
    assert call.model == "gpt-4o-mini" and call.json_output
    sent = "\n".join(m.content for m in call.messages)
    assert "SYSTEM PROMPT TEXT" not in sent and "TOOL RESULT" not in sent
    assert "User: Please answer in French" in sent and "Assistant: D'accord !" in sent


async def test_remember_conversation_with_garbage_reply_stores_nothing(store, embedder, clock):
    memory = LongTermMemory(
        collection=Collection(user_id="u"),
        store=store,
        embedder=embedder,
        clock=clock,
        extraction_provider=ScriptedProvider(["I think the user likes cats."]),
        extraction_model="m",
    )
    assert await memory.remember_conversation([Message(role="user", content="I like cats")]) == []
    assert await memory.count() == 0


async def test_remember_conversation_needs_a_provider(memory: LongTermMemory):
    with pytest.raises(ConfigError, match="extraction_provider"):
        await memory.remember_conversation([Message(role="user", content="hi")])


async def test_nothing_to_mine_makes_no_call(store, embedder, clock):
    provider = ScriptedProvider([])
    memory = LongTermMemory(
        collection=Collection(user_id="u"),
        store=store,
        embedder=embedder,
        clock=clock,
        extraction_provider=provider,
        extraction_model="m",
    )
    assert (
        await memory.remember_conversation([Message(role="tool", content="x", tool_call_id="1")])
        == []
    )
    assert provider.calls == []


class _OtherModel(HashEmbedder):
    """Vectors of the same size from another model."""

    @property
    def model_id(self) -> str:
        return "other:64"


async def test_a_collection_is_searched_only_with_the_model_that_filled_it(store, clock):
    collection = Collection(user_id="u")
    first = LongTermMemory(collection=collection, store=store, embedder=HashEmbedder(), clock=clock)
    await first.remember("Alice prefers green tea")
    for embedder in (_OtherModel(), HashEmbedder(dim=32)):
        other = LongTermMemory(collection=collection, store=store, embedder=embedder, clock=clock)
        with pytest.raises((ConfigError, InvalidInput), match=r"hash:64|64-dimension"):
            await other.recall("tea")
        with pytest.raises((ConfigError, InvalidInput), match=r"hash:64|64-dimension"):
            await other.remember("Bob likes coffee")
    assert store.namespace_info(collection.name).model_id == "hash:64"
    assert await first.count() == 1


async def test_remember_many_dedupes_within_the_batch_and_against_the_store(memory):
    await memory.remember("Alice prefers green tea over coffee")
    outcomes = await memory.remember_many(
        [
            Candidate(text="Alice prefers green tea over coffee"),
            Candidate(text="Bob is learning the piano"),
            Candidate(text="Bob is learning the piano"),
        ]
    )
    stored = [o for o in outcomes if o.status == "stored"]
    assert [o.status for o in outcomes] == ["duplicate", "stored", "duplicate"]
    assert outcomes[2].duplicate_of == stored[0].id
    assert outcomes[0].duplicate_of not in (None, stored[0].id)
    assert await memory.count() == 2


class _FailingQueries(HashEmbedder):
    """Embeds documents; refuses queries (any text with a question mark)."""

    def embed_batch(self, texts):
        if any("?" in t for t in texts):
            raise ConfigError("the embedding service refused the query")
        return super().embed_batch(texts)


async def test_a_failing_query_embedding_fails_the_recall(store, clock):
    memory = LongTermMemory(
        collection=Collection(user_id="u"), store=store, embedder=_FailingQueries(), clock=clock
    )
    await memory.remember("The user plays the cello")
    with pytest.raises(ConfigError, match="refused the query"):
        await memory.recall("what does the user play?")
