"""Large knowledge documents on every backend (issue 29): stored in parts and indexed a
batch at a time, the text back whole, nothing left after a delete; a document whose
worker died is taken up once its lease runs out, each passage stored once; a step that
keeps failing leaves the document ``failed`` with the reason, while a model that is down
leaves it ``indexing`` for a server to carry on with."""

import asyncio
from collections.abc import Sequence

import pytest

from memstack import ManualClock
from memstack._json import JSON
from memstack.embeddings import HashEmbedder, Vectors
from memstack.embeddings.base import EmbedderWrapper
from memstack.errors import StoreUnavailable
from memstack.service.knowledge import SYNC_PASSAGES, KnowledgeBase
from memstack.service.knowledge_index import LEASE_S, STEP_TRIES, Indexer, docs_space
from memstack.service.passages import PART_CHARS, split_passages
from memstack.service.principal import Principal
from memstack.storage import Record, RecordStore
from tests.embeddings.recording import RecordingEmbedder

ACME = Principal(tenant="acme")
SPACES = ("kb/acme/docs", "kb/acme/parts", "kb/acme/chunks", "kb/indexing")
WAIT_S = 120.0  # a safety bound, not a speed requirement
META: dict[str, JSON] = {"title": "T", "tags": [], "source": None, "status": "indexing", "done": 0}


def _varied(chars: int) -> str:
    """Paragraphs of distinct words (a full-text index of many terms per part)."""
    paragraphs, size, word = [], 0, 0
    while size < chars:
        paragraph = " ".join(f"term{n}q" for n in range(word, word + 60))
        word += 60
        paragraphs.append(paragraph)
        size += len(paragraph) + 2
    return "\n\n".join(paragraphs)


async def test_a_large_document_comes_back_whole_and_leaves_nothing_when_deleted(
    records: RecordStore, clock: ManualClock
):
    kb = KnowledgeBase(records=records, embedder=HashEmbedder(), clock=clock)
    text = _varied(1_200_000)
    passages = split_passages(text)
    doc = await kb.add(ACME, title="Glossary", text=text, tags=["ref"])
    assert doc.status == "ready" and doc.passages_done == doc.passages_total == len(passages)
    parts = records.list("kb/acme/parts", limit=100)
    assert len(parts) >= len(text) / PART_CHARS and all(len(p.text) <= PART_CHARS for p in parts)
    again = await kb.get(ACME, doc.id)
    assert again.text == text and again.chars == len(text) and again.tags == ("ref",)
    [listed], total = await kb.list(ACME)
    assert total == 1 and listed.status == "ready" and listed.chars == len(text)
    last = passages[-1].split()[-1]
    hits = await kb.search(ACME, last)
    assert hits and hits[0].passage == passages[-1]
    await kb.delete(ACME, doc.id)
    assert [records.count(space) for space in SPACES] == [0, 0, 0, 0]


async def test_a_document_whose_worker_died_is_taken_up_once_its_lease_runs_out(
    records: RecordStore, clock: ManualClock
):
    kb = KnowledgeBase(records=records, embedder=HashEmbedder(), clock=clock)
    text = "\n\n".join(f"p{i} " + "The heron waits by the weir at dawn. " * 20 for i in range(300))
    dead = Indexer(records=records, embedder=kb.embedder, clock=clock, worker="dead")
    seen = Record(
        id="doc_1",
        namespace=docs_space("acme").encode(),
        text="",
        kind="document",
        metadata=META | {"chunks": 300, "chars": len(text)},
        created_at=clock.now(),
        updated_at=clock.now(),
    )
    dead.create("acme", seen, text)  # leased to a worker that never runs a step
    taker = Indexer(records=records, embedder=kb.embedder, clock=clock, worker="taker")
    taker.start()
    try:
        await asyncio.sleep(0.3)  # a sweep or more: the lease holds
        assert taker.indexing() == frozenset()
        assert (await kb.status(ACME, "doc_1")).passages_done == 0
        clock.advance(LEASE_S + 1)

        async def ready() -> bool:
            return (await kb.status(ACME, "doc_1")).status == "ready"

        deadline = asyncio.get_running_loop().time() + WAIT_S
        while not await ready():
            assert asyncio.get_running_loop().time() < deadline, "not taken up"
            await asyncio.sleep(0.05)
    finally:
        await taker.stop()
    ids = sorted(r.id for r in records.list("kb/acme/chunks", limit=1_000))
    assert ids == sorted(f"doc_1:{i}" for i in range(300))
    assert records.count("kb/indexing") == 0
    [doc] = records.get("kb/acme/docs", ["doc_1"])
    assert doc.metadata["worker"] is None and doc.metadata["done"] == 300


class WrongModel(EmbedderWrapper):
    """Embeds as ``inner`` until a batch holds ``fail_on``; then a vector of another size,
    which the store refuses (an error no retry cures)."""

    def __init__(self, *, fail_on: str) -> None:
        self.inner = HashEmbedder(dim=32)
        self.fail_on = fail_on
        self.failed = 0

    def embed_batch(self, texts: Sequence[str]) -> Vectors:
        if self.fail_on in texts:
            self.failed += 1
            return HashEmbedder(dim=8).embed_batch(texts)
        return self.inner.embed_batch(texts)


def _notes() -> tuple[str, str]:
    """A document of 200 passages, and the embedded text of its passage 40 (batch 3)."""
    text = "\n\n".join(f"p{i} " + "The otter swims under the bridge. " * 20 for i in range(200))
    assert len(split_passages(text)) == 200 > SYNC_PASSAGES
    return text, f"Notes: {split_passages(text)[40]}"


@pytest.mark.parametrize("records", ["sqlite"], indirect=True)
async def test_a_step_that_keeps_failing_leaves_the_document_failed(
    records: RecordStore, clock: ManualClock
):
    text, forty = _notes()
    broken = WrongModel(fail_on=forty)
    kb = KnowledgeBase(records=records, embedder=broken, clock=clock)
    doc = await kb.add(ACME, title="Notes", text=text)
    assert doc.status == "failed" and doc.passages_done == 32, doc
    assert doc.error is not None and "after 32 passages" in doc.error, doc.error
    assert broken.failed == STEP_TRIES
    assert records.count("kb/acme/chunks") == 32  # what landed stays searchable
    assert records.count("kb/indexing") == 0  # no server takes it up again


@pytest.mark.parametrize("records", ["sqlite"], indirect=True)
async def test_a_model_that_is_down_pauses_the_document_until_a_server_carries_on(
    records: RecordStore, clock: ManualClock
):
    text, forty = _notes()
    down = RecordingEmbedder(fail_on=forty)
    kb = KnowledgeBase(records=records, embedder=down, clock=clock)
    with pytest.raises(StoreUnavailable, match="cannot embed"):
        await kb.add(ACME, title="Notes", text=text)
    [info], _ = await kb.list(ACME)
    assert info.status == "indexing" and info.passages_done == 32 and info.error is None
    assert records.count("kb/indexing") == 1  # left for a server to take up
    server = Indexer(records=records, embedder=down.inner, clock=clock, worker="server")
    clock.advance(LEASE_S + 1)
    server.start()
    try:
        deadline = asyncio.get_running_loop().time() + WAIT_S
        while (info := await kb.status(ACME, info.id)).status == "indexing":
            assert asyncio.get_running_loop().time() < deadline, f"not carried on: {info}"
            await asyncio.sleep(0.05)
    finally:
        await server.stop()
    assert info.status == "ready" and info.passages_done == 200
    assert records.count("kb/acme/chunks") == 200 and records.count("kb/indexing") == 0
