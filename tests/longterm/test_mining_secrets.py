"""Conversation mining filters secrets right after extraction (issue 30, spec 001): a
candidate holding a credential is never embedded, never shown to the model in the
reconciliation prompt, never compared in dedupe and never stored; and a stored memory
that holds one (stored before the filter knew its shape) is never shown to the model."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Sequence

import pytest

from memstack import ManualClock
from memstack.longterm import EXTRACTION_PROMPT, Collection, LongTermMemory, secret_kind
from memstack.longterm.reconcile import RECONCILE_PROMPT
from memstack.providers.base import Completion, Message
from memstack.providers.scripted import ScriptedProvider
from memstack.storage import Filter, InMemoryRecordStore, Record
from tests.embeddings.recording import RecordingEmbedder
from tests.longterm.conftest import NOW
from tests.longterm.secret_corpus import _pypi, _telegram, hexs, tok

CLEAN = ["The user lives in Berlin now", "The user prefers tea over coffee"]
SECRET = [
    f"The user's OpenAI key is sk-proj-{tok(48)}",
    "The user's router password = letmein",
    f"The user publishes with the PyPI token {_pypi()}",
    f"The user's Twilio account is AC{hexs(32)}",
    f"The user's alerts bot token is {_telegram()}",
    "The user's staging config has api_key: abc",
]
# Extracted in this order: a secret between two clean facts, so dropping it shifts indexes.
EXTRACTED = [SECRET[0], CLEAN[0], *SECRET[1:4], CLEAN[1], *SECRET[4:]]
# Stored before issue 30, when a weak password in an assignment still passed the filter.
LEGACY = "The user prefers tea over coffee; router password = letmein"
CANDIDATE_LINE = re.compile(r"^Candidate (\d+):", re.MULTILINE)


def model() -> ScriptedProvider:
    """Extracts ``EXTRACTED``; adds every candidate reconciliation shows it."""

    def reply(messages: Sequence[Message]) -> Completion:
        if EXTRACTION_PROMPT in messages[0].content:
            memories = [{"text": t, "kind": "fact", "importance": 0.7} for t in EXTRACTED]
            return Completion(content=json.dumps({"memories": memories}))
        assert RECONCILE_PROMPT in messages[0].content
        shown = CANDIDATE_LINE.findall(messages[1].content)
        decisions = [{"candidate": int(n), "action": "add"} for n in shown]
        return Completion(content=json.dumps({"decisions": decisions}))

    return ScriptedProvider(responder=reply)


def holds_a_secret(text: str) -> bool:
    return secret_kind(text) is not None or any(s in text for s in [*SECRET, LEGACY])


@pytest.mark.parametrize("reconcile", [True, False])
async def test_no_secret_reaches_a_prompt_the_embedder_or_the_store(reconcile: bool) -> None:
    store = InMemoryRecordStore()
    store.setup()
    embedder, provider = RecordingEmbedder(dim=64), model()
    memory = LongTermMemory(
        collection=Collection(user_id="alice"),
        store=store,
        embedder=embedder,
        extraction_provider=provider,
        extraction_model="gpt-4o-mini",
        clock=ManualClock(start=NOW),
    )
    old = await memory.remember("The user lives in Lisbon", created_at=NOW - 1000)
    assert old.id is not None
    store.upsert([_legacy_record(memory, embedder)])
    embedded_before = len(embedder.seen)

    outcomes = await memory.remember_conversation(
        [Message(role="user", content="I moved to Berlin; tea, not coffee, please.")],
        reconcile=reconcile,
    )

    assert [o.text for o in outcomes] == EXTRACTED  # one outcome per candidate, in order
    assert [o.status == "secret" for o in outcomes] == [t in SECRET for t in EXTRACTED]
    assert all(o.secret_kind for o in outcomes if o.status == "secret")
    assert len(provider.calls) == 1 + reconcile
    if reconcile:  # the stored facts similar to the clean candidates were shown
        shown = provider.calls[1].messages[1].content
        assert all(text in shown for text in CLEAN) and old.id in shown
    sent = [m.content for call in provider.calls[1:] for m in call.messages]
    assert not [text for text in sent if holds_a_secret(text)]
    embedded = embedder.seen[embedded_before:]
    assert sorted(embedded) == sorted(CLEAN)
    stored = store.list(memory.namespace, filter=Filter(include_superseded=True))
    assert not [r.text for r in stored if holds_a_secret(r.text) and r.text != LEGACY]
    assert {r.text for r in stored} >= set(CLEAN)
    store.close()


def _legacy_record(memory: LongTermMemory, embedder: RecordingEmbedder) -> Record:
    """A memory stored, through the store itself, before the filter knew its shape."""
    return Record(
        id=uuid.uuid4().hex,
        namespace=memory.namespace,
        text=LEGACY,
        created_at=NOW - 500,
        updated_at=NOW - 500,
        embedding=embedder.inner.embed_batch([LEGACY])[0],
    )
