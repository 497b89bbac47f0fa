"""Long-term memory end to end: the real local model on a real SQLite file and PostgreSQL."""

from memstack import ManualClock
from memstack.longterm import Collection, LongTermMemory, render_recalled
from memstack.storage import SQLiteRecordStore


async def test_semantic_recall_dedupe_and_isolation(real_store, local_embedder):
    clock = ManualClock(start=1_780_000_000.0)
    alice = LongTermMemory(
        collection=Collection(user_id="alice"),
        store=real_store,
        embedder=local_embedder,
        clock=clock,
    )
    bob = LongTermMemory(
        collection=Collection(user_id="bob"), store=real_store, embedder=local_embedder, clock=clock
    )
    await alice.remember("Alice prefers green tea over coffee", kind="preference", importance=0.8)
    await alice.remember("Alice is writing a compiler in Rust", kind="project")
    await alice.remember("Alice moved to Oslo in 2021", kind="identity")
    await bob.remember("Bob drinks espresso every morning", kind="preference")

    recalled = await alice.recall("What beverage should I offer her?", k=3)
    assert recalled[0].text == "Alice prefers green tea over coffee"
    assert all("Bob" not in item.text for item in recalled)
    assert 0 < recalled[0].scores.similarity <= 1

    duplicate = await alice.remember("Alice prefers green tea over coffee.")
    assert duplicate.status == "duplicate"
    assert duplicate.similarity is not None and duplicate.similarity >= 0.92
    assert (await alice.remember("Alice has a cat called Miso")).status == "stored"
    assert await alice.count() == 4

    block = render_recalled(recalled[:1])
    assert "Alice prefers green tea over coffee" in block


async def test_memories_survive_reopening_the_sqlite_file(tmp_path, local_embedder):
    collection = Collection(user_id="carol", namespace="chat", workspace_id="thread-1")
    first = SQLiteRecordStore(tmp_path / "memstack.db")
    first.setup()
    memory = LongTermMemory(collection=collection, store=first, embedder=local_embedder)
    await memory.remember("Carol is allergic to peanuts", kind="fact", importance=1.0)
    first.close()

    second = SQLiteRecordStore(tmp_path / "memstack.db")
    second.setup()
    try:
        reopened = LongTermMemory(collection=collection, store=second, embedder=local_embedder)
        (item,) = await reopened.recall("food allergies", k=1)
        assert item.text == "Carol is allergic to peanuts"
        assert item.importance == 1.0
    finally:
        second.close()


async def test_changing_a_recalled_memorys_metadata_changes_nothing_stored(
    real_store, local_embedder
):
    # A recall reads its candidates from the store's memo without copying them; what it
    # hands out must still be the caller's own.
    memory = LongTermMemory(
        collection=Collection(user_id="dana"), store=real_store, embedder=local_embedder
    )
    await memory.remember("Dana keeps bees", metadata={"tags": ["hobby"], "source": "chat"})
    first = await memory.recall("bees", 1, touch=False)  # a touch would empty the memo
    first[0].metadata["tags"].append("changed")  # type: ignore[union-attr]
    first[0].metadata["source"] = "changed"
    again = await memory.recall("bees", 1, touch=False)
    assert again[0].metadata == {"tags": ["hobby"], "source": "chat"}
