"""remember_conversation with reconciliation, end to end: the real local model on a real
SQLite file, and a scripted provider whose replies are shaped like a real model's."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest

from memstack import ManualClock
from memstack.embeddings import LocalEmbedder
from memstack.longterm import EXTRACTION_PROMPT, Collection, LongTermMemory
from memstack.longterm.reconcile import RECONCILE_PROMPT, ReconcileError
from memstack.providers.base import Completion, Message
from memstack.providers.scripted import ScriptedProvider
from memstack.storage import Filter, RecordStore, SQLiteRecordStore
from tests.longterm.conftest import NOW

SHOWN = re.compile(r"\[([0-9a-f]{32})\]")
MODEL = "gpt-4o-mini-2024-07-18"


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Iterator[RecordStore]:
    store = SQLiteRecordStore(tmp_path / "ltm.db")
    store.setup()
    yield store
    store.close()


def scripted(extracted: list[str], decide: Callable[[list[str]], str]) -> ScriptedProvider:
    """A model that extracts ``extracted`` and answers reconciliation with ``decide(ids)``,
    ``ids`` being the stored ids shown to it, in order."""

    def reply(messages: Sequence[Message]) -> Completion:
        if EXTRACTION_PROMPT in messages[0].content:
            memories = [{"text": t, "kind": "identity", "importance": 0.8} for t in extracted]
            return Completion(content="```json\n" + json.dumps({"memories": memories}) + "\n```")
        assert RECONCILE_PROMPT in messages[0].content
        return Completion(content=decide(SHOWN.findall(messages[1].content)))

    return ScriptedProvider(responder=reply)


def memory_with(store: RecordStore, embedder: LocalEmbedder, model: ScriptedProvider):
    return LongTermMemory(
        collection=Collection(user_id="alice"),
        store=store,
        embedder=embedder,
        extraction_provider=model,
        extraction_model=MODEL,
        clock=ManualClock(start=NOW),
    )


TURN = [Message(role="user", content="I just moved to Berlin!")]


def snapshot(store: RecordStore, memory: LongTermMemory) -> list[tuple[str, str, object]]:
    everything = store.list(memory.namespace, filter=Filter(include_superseded=True))
    return sorted((r.id, r.text, r.valid_to) for r in everything)


async def test_update_supersedes_the_old_fact(sqlite_store, local_embedder) -> None:
    model = scripted(
        ["The user lives in Berlin"],
        lambda ids: json.dumps({"decisions": [{"candidate": 0, "action": "update", "id": ids[0]}]}),
    )
    memory = memory_with(sqlite_store, local_embedder, model)
    old = await memory.remember("The user lives in Lisbon", created_at=NOW - 1000)
    assert old.id is not None
    (outcome,) = await memory.remember_conversation(TURN)
    assert outcome.status == "stored" and outcome.id is not None
    assert len(model.calls) == 2
    assert old.id in model.calls[1].messages[1].content  # the model was shown the old fact
    (top, *_) = await memory.recall("Where does the user live?", k=3)
    assert top.id == outcome.id
    assert (top.provenance, top.provenance_detail) == ("extracted", MODEL)
    assert top.scores.provenance == "extracted"
    versions = await memory.history(outcome.id)
    assert [(v.text, v.closed_reason) for v in versions] == [
        ("The user lives in Lisbon", "superseded"),
        ("The user lives in Berlin", None),
    ]


async def test_delete_retires_the_stored_fact_and_stores_nothing(
    sqlite_store, local_embedder
) -> None:
    model = scripted(
        ["The user no longer has a dog"],
        lambda ids: json.dumps({"decisions": [{"candidate": 0, "action": "delete", "id": ids[0]}]}),
    )
    memory = memory_with(sqlite_store, local_embedder, model)
    dog = await memory.remember("The user has a dog named Rex")
    assert dog.id is not None
    (outcome,) = await memory.remember_conversation(TURN)
    assert (outcome.status, outcome.id) == ("retired", dog.id)
    assert await memory.count() == 0
    (version,) = await memory.history(dog.id)
    assert (version.text, version.closed_reason, version.valid_to) == (
        "The user has a dog named Rex",
        "deleted",
        NOW,
    )


async def test_none_leaves_the_store_as_it_was(sqlite_store, local_embedder) -> None:
    model = scripted(
        ["The user lives in Lisbon, Portugal"],
        lambda ids: '{"decisions": [{"candidate": 0, "action": "none", "id": null}]}',
    )
    memory = memory_with(sqlite_store, local_embedder, model)
    await memory.remember("The user lives in Lisbon")
    before = snapshot(sqlite_store, memory)
    (outcome,) = await memory.remember_conversation(TURN)
    assert outcome.status == "unchanged"
    assert snapshot(sqlite_store, memory) == before


async def test_add_and_update_in_one_reply(sqlite_store, local_embedder) -> None:
    model = scripted(
        ["The user lives in Berlin", "The user is learning the cello"],
        lambda ids: json.dumps(
            {
                "decisions": [
                    {"candidate": 0, "action": "update", "id": ids[0]},
                    {"candidate": 1, "action": "add"},
                ]
            }
        ),
    )
    memory = memory_with(sqlite_store, local_embedder, model)
    await memory.remember("The user lives in Lisbon")
    outcomes = await memory.remember_conversation(TURN)
    assert [o.status for o in outcomes] == ["stored", "stored"]
    assert sorted(i.text for i in await memory.items()) == [
        "The user is learning the cello",
        "The user lives in Berlin",
    ]


MALFORMED = {
    "prose": lambda ids: "Sure! The first one is an update.",
    "an id never shown": lambda ids: (
        '{"decisions": [{"candidate": 0, "action": "update", "id": "0123456789abcdef"}]}'
    ),
    "a candidate left out": lambda ids: '{"decisions": []}',
    "an unknown action": lambda ids: '{"decisions": [{"candidate": 0, "action": "merge"}]}',
    "update without an id": lambda ids: '{"decisions": [{"candidate": 0, "action": "update"}]}',
    "an extra key": lambda ids: (
        '{"decisions": [{"candidate": 0, "action": "add", "reason": "new"}]}'
    ),
}


@pytest.mark.parametrize("decide", MALFORMED.values(), ids=MALFORMED.keys())
async def test_a_malformed_decision_reply_is_refused_and_changes_nothing(
    sqlite_store, local_embedder, decide
) -> None:
    model = scripted(["The user lives in Berlin"], decide)
    memory = memory_with(sqlite_store, local_embedder, model)
    await memory.remember("The user lives in Lisbon")
    before = snapshot(sqlite_store, memory)
    with pytest.raises(ReconcileError):
        await memory.remember_conversation(TURN)
    assert snapshot(sqlite_store, memory) == before


async def test_no_similar_memory_means_no_second_call(sqlite_store, local_embedder) -> None:
    model = scripted(["The user lives in Berlin"], lambda ids: "unused")
    memory = memory_with(sqlite_store, local_embedder, model)
    await memory.remember("The user's favourite colour is green")
    (outcome,) = await memory.remember_conversation(TURN)
    assert outcome.status == "stored"
    assert len(model.calls) == 1


async def test_reconcile_false_only_adds(sqlite_store, local_embedder) -> None:
    model = scripted(["The user lives in Berlin"], lambda ids: "unused")
    memory = memory_with(sqlite_store, local_embedder, model)
    await memory.remember("The user lives in Lisbon")
    (outcome,) = await memory.remember_conversation(TURN, reconcile=False)
    assert outcome.status == "stored"
    assert len(model.calls) == 1
    assert await memory.count() == 2
