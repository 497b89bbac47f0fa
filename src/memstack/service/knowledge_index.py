"""Where knowledge lives in the record store, and the indexer that embeds large
documents in the background.

Per tenant (``Namespace("kb", tenant, ...)``):

- ``docs``: a record per document: title, tags and source, and its state, in metadata.
  A document small enough to embed within its request keeps its text here; a larger
  one keeps ``""`` here, its text in ``parts`` and its indexing state beside the title:
  ``status`` (``indexing``, ``ready``, ``failed``), ``done`` of ``chunks`` passages,
  ``error``, and the lease of the worker indexing it (``worker``, ``lease_until``).
- ``parts``: a large document's text, ``<doc id>:<n>``, at most ``PART_CHARS`` each.
- ``chunks``: the passages, embedded, ``<doc id>:<i>`` for passage ``i``.

And ``Namespace("kb", "indexing")``: a record per document not yet indexed, of any tenant
(the document's id, its tenant in metadata), so a server finds unfinished work in one
short read instead of scanning every tenant.

The indexer embeds ``EMBED_BATCH`` passages a step and writes them in one transaction
with the document's progress, expecting the document as its last step left it
(``Expect``): the batch and the progress land together or not at all, and a write that
finds the document deleted, or taken over by another worker, changes nothing and stops
the job. Passage ids are a function of (document, passage number), so a batch done twice
(a worker that died between its write and its next lease renewal) writes the same
records again, never new ones.

A worker leases the document for ``LEASE_S`` and renews the lease with every step. A
server that starts, and every ``SWEEP_S`` after, takes up the documents whose lease ran
out (a server killed mid-way, or one that shut down and handed its lease back) and
carries on from the passage after the last one stored: the passages are a function of
the text, so the ``done`` already stored are skipped, not embedded again. A store or
model that is down pauses a document the same way (its lease runs out, a sweep tries
again); any other error that persists makes it ``failed``, with the reason.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import logging
import math
import os
import socket
import uuid
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from itertools import islice
from typing import Final, Literal

from memstack._json import JSON
from memstack.clock import Clock
from memstack.embeddings import Embedder
from memstack.errors import StoreUnavailable, WriteConflict
from memstack.service.passages import iter_passages, split_parts
from memstack.storage import Namespace, Record, RecordStore, Vector
from memstack.storage.backend import Expect

__all__ = [
    "EMBED_BATCH",
    "INDEXING",
    "LEASE_S",
    "SWEEP_S",
    "DocumentStatus",
    "Indexer",
    "Job",
    "chunks_space",
    "docs_space",
    "embed_passages",
    "embedded_passage",
    "load_text",
    "parts_space",
    "passage_record",
]

DocumentStatus = Literal["indexing", "ready", "failed"]
EMBED_BATCH: Final = 16
"""Passages embedded at a time: other requests' embeddings run between the batches, and
the model's working memory stays that of one small batch."""
LEASE_S: Final = 10.0
"""How long a worker holds a document without writing a step before another may take it."""
SWEEP_S: Final = 2.0
"""How often a running server looks for documents whose lease ran out."""
MAX_TAKEN: Final = 2
"""Documents a server takes up from others (each holds its text in memory while indexed)."""
STEP_TRIES: Final = 3
"""Attempts at one step (its embedding or its write) before the document is ``failed``."""
INDEXING: Final = Namespace("kb", "indexing")

_log = logging.getLogger("memstack.knowledge")


def docs_space(tenant: str) -> Namespace:
    return Namespace("kb", tenant, "docs")


def chunks_space(tenant: str) -> Namespace:
    return Namespace("kb", tenant, "chunks")


def parts_space(tenant: str) -> Namespace:
    return Namespace("kb", tenant, "parts")


def passage_record(tenant: str, doc: Record, number: int, passage: str, vector: Vector) -> Record:
    """Passage ``number`` of ``doc``, embedded: the same id whoever writes it."""
    title = str(doc.metadata.get("title", ""))
    return Record(
        id=f"{doc.id}:{number}",
        namespace=chunks_space(tenant).encode(),
        text=f"{title}\n{passage}",
        metadata={"doc_id": doc.id, "title": title, "passage": passage},
        created_at=doc.created_at,
        updated_at=doc.created_at,
        embedding=vector,
    )


def embedded_passage(title: str, passage: str) -> str:
    """What a passage's vector is made from (``memories reembed`` makes it again)."""
    return f"{title}: {passage}"


def embed_passages(embedder: Embedder, title: str, passages: Sequence[str]) -> list[Vector]:
    """``passages`` embedded ``EMBED_BATCH`` at a time, each prefixed by the title."""
    texts = [embedded_passage(title, p) for p in passages]
    vectors: list[Vector] = []
    for start in range(0, len(texts), EMBED_BATCH):
        vectors.extend(embedder.embed_batch(texts[start : start + EMBED_BATCH]))
    return vectors


def load_text(records: RecordStore, tenant: str, doc: Record) -> str:
    """A document's text: its record's, or its parts' joined."""
    parts = doc.metadata.get("parts")
    if not isinstance(parts, int):
        return doc.text
    found = records.get(parts_space(tenant), [f"{doc.id}:{n}" for n in range(parts)])
    return "".join(part.text for part in found)


def _int(doc: Record, key: str) -> int:
    value = doc.metadata.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _lease_until(doc: Record) -> float:
    value = doc.metadata.get("lease_until")
    return float(value) if isinstance(value, int | float) else 0.0


def _changed(doc: Record, now: float, **changes: JSON) -> Record:
    """``doc`` with these metadata changes, stamped later than ``doc`` (so an ``Expect``
    of it tells the two apart even within one clock tick)."""
    later = max(now, math.nextafter(doc.updated_at, math.inf))
    return replace(doc, metadata={**doc.metadata, **changes}, updated_at=later)


@dataclass(kw_only=True, eq=False)
class Job:
    """One document this process indexes: the document as it last wrote it (``seen``),
    its text, and the passages still to come."""

    tenant: str
    seen: Record
    text: str
    passages: Iterator[str] | None = None
    pending: list[str] = field(default_factory=list)
    """The passages of the step in progress: taken from ``passages``, not yet stored."""
    dropped: bool = False
    """The document was deleted here: stop before the next step."""

    @property
    def status(self) -> str:
        return str(self.seen.metadata.get("status"))


class Indexer:
    """Indexes large documents a bounded step at a time, on the running event loop.

    ``submit`` starts a job beside the request that added the document; ``run`` indexes
    one before returning; ``start`` (at server start) also takes up documents whose
    lease ran out, every ``SWEEP_S``; ``stop`` ends every job after its current step
    and hands its lease back, so the next server carries on at once."""

    def __init__(
        self, *, records: RecordStore, embedder: Embedder, clock: Clock, worker: str | None = None
    ) -> None:
        self.records = records
        self.embedder = embedder
        self.clock = clock
        self.worker = worker or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._jobs: dict[str, Job] = {}
        self._tasks: set[asyncio.Task[Record | None]] = set()
        self._sweeper: asyncio.Task[None] | None = None
        self._wake: asyncio.Event | None = None
        self._stopping = False

    # -- starting a document --------------------------------------------------------

    def create(self, tenant: str, doc: Record, text: str) -> Job:
        """Store ``doc`` (text ``""``, its state in metadata), ``text`` in parts
        (``split_parts``) and its entry in ``INDEXING``, leased to this worker, in one
        transaction."""
        now = self.clock.now()
        pieces = [
            Record(
                id=f"{doc.id}:{n}",
                namespace=parts_space(tenant).encode(),
                text=part,
                kind="part",
                created_at=doc.created_at,
                updated_at=doc.created_at,
            )
            for n, part in enumerate(split_parts(text))
        ]
        leased = _changed(
            doc, now, parts=len(pieces), worker=self.worker, lease_until=now + LEASE_S
        )
        entry = Record(
            id=doc.id,
            namespace=INDEXING.encode(),
            text="",
            metadata={"tenant": tenant},
            created_at=now,
            updated_at=now,
        )
        self.records.write(upserts=[*pieces, leased, entry])
        return Job(tenant=tenant, seen=leased, text=text)

    def submit(self, job: Job) -> None:
        """Index ``job`` in the background, on the running event loop."""
        self._spawn(job)

    async def run(self, job: Job) -> Record | None:
        """Index ``job`` now; the document as last written, None if it was deleted or
        another worker took it over. ``StoreUnavailable`` when the store or the model
        stays down: the document stays ``indexing``, and a server takes it up later."""
        self._jobs[job.seen.id] = job
        try:
            return await self._index(job, inline=True)
        finally:
            self._jobs.pop(job.seen.id, None)

    def indexing(self) -> frozenset[str]:
        """The ids of the documents this process is indexing now."""
        return frozenset(self._jobs)

    def drop(self, document_id: str) -> None:
        """The document was deleted: its job here stops before its next step."""
        job = self._jobs.get(document_id)
        if job is not None:
            job.dropped = True

    # -- the server's lifetime ------------------------------------------------------

    def start(self) -> None:
        """Take up unfinished documents now and every ``SWEEP_S`` (on the running loop)."""
        if self._sweeper is None or self._sweeper.done():
            self._stopping = False
            self._wake = asyncio.Event()
            self._sweeper = asyncio.get_running_loop().create_task(self._sweep())

    async def stop(self) -> None:
        """End every job after its current step, handing its lease back; waits at most
        about ``LEASE_S``."""
        self._stopping = True
        if self._wake is not None:
            self._wake.set()
        waiting: set[asyncio.Task[object]] = set(self._tasks)
        if self._sweeper is not None:
            waiting.add(self._sweeper)
        if not waiting:
            return
        _, late = await asyncio.wait(waiting, timeout=LEASE_S)
        for task in late:
            task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.gather(*late, return_exceptions=True)

    # -- the job ----------------------------------------------------------------------

    def _spawn(self, job: Job) -> None:
        self._jobs[job.seen.id] = job
        task = asyncio.get_running_loop().create_task(self._index(job))
        self._tasks.add(task)

        def finished(done: asyncio.Task[Record | None]) -> None:
            self._tasks.discard(done)
            if self._jobs.get(job.seen.id) is job:
                del self._jobs[job.seen.id]

        task.add_done_callback(finished)

    async def _index(self, job: Job, *, inline: bool = False) -> Record | None:
        """Steps until the document is ready. A step that fails is tried ``STEP_TRIES``
        times; then a store or model that is down (``StoreUnavailable``) leaves the
        document ``indexing``, for a server to take up once the lease runs out, and any
        other error makes it ``failed``."""
        tries = 0
        while job.status == "indexing":
            if job.dropped:
                return None
            if self._stopping:
                await asyncio.to_thread(self._hand_back, job)
                return job.seen
            try:
                job.seen = await asyncio.to_thread(self._step, job)
                tries = 0
            except WriteConflict:
                return None  # deleted, or another worker took it over: it is theirs
            except Exception as exc:
                tries += 1
                if tries < STEP_TRIES:
                    await asyncio.sleep(0.5 * 2**tries)
                    continue
                if isinstance(exc, StoreUnavailable):
                    _log.warning("knowledge: %s paused: %s", job.seen.id, exc)
                    if inline:
                        raise
                    return job.seen
                _log.error("knowledge: indexing %s failed: %s", job.seen.id, exc)
                return await asyncio.to_thread(self._fail, job, exc)
        return job.seen

    def _step(self, job: Job) -> Record:
        """Embed and store the next ``EMBED_BATCH`` passages with the new progress."""
        doc, done, total = job.seen, _int(job.seen, "done"), _int(job.seen, "chunks")
        if job.passages is None:
            job.passages = iter_passages(job.text)
            deque(islice(job.passages, done), maxlen=0)  # stored already
        if not job.pending:
            job.pending = list(islice(job.passages, min(EMBED_BATCH, total - done)))
        if done + len(job.pending) < total and len(job.pending) < EMBED_BATCH:
            raise RuntimeError(f"the text has fewer passages than the {total} counted")
        title = str(doc.metadata.get("title", ""))
        vectors = embed_passages(self.embedder, title, job.pending)
        chunks = [
            passage_record(job.tenant, doc, done + i, passage, vectors[i])
            for i, passage in enumerate(job.pending)
        ]
        now = self.clock.now()
        done += len(chunks)
        if done >= total:
            after = _changed(doc, now, done=done, status="ready", worker=None, lease_until=None)
        else:
            after = _changed(doc, now, done=done, lease_until=now + LEASE_S)
        self.records.write(
            upserts=[*chunks, after],
            deletes={INDEXING: [doc.id]} if done >= total else None,
            expect=[Expect(namespace=docs_space(job.tenant).encode(), id=doc.id, seen=doc)],
            model_id=self.embedder.model_id,
        )
        job.pending = []
        return after

    def _fail(self, job: Job, exc: Exception) -> Record | None:
        done = _int(job.seen, "done")
        failed = _changed(
            job.seen,
            self.clock.now(),
            status="failed",
            error=f"indexing stopped after {done} passages: {exc}"[:1_000],
            worker=None,
            lease_until=None,
        )
        try:
            self._write_state(job, failed, final=True)
        except StoreUnavailable:
            return None  # the lease runs out and a server tries again
        return failed

    def _hand_back(self, job: Job) -> None:
        """Give up the lease now, so the next server need not wait for it to run out."""
        free = _changed(job.seen, self.clock.now(), worker=None, lease_until=0.0)
        with contextlib.suppress(StoreUnavailable):
            self._write_state(job, free)
            job.seen = free

    def _write_state(self, job: Job, after: Record, *, final: bool = False) -> None:
        doc = job.seen
        self.records.write(
            upserts=[after],
            deletes={INDEXING: [doc.id]} if final else None,
            expect=[Expect(namespace=docs_space(job.tenant).encode(), id=doc.id, seen=doc)],
        )

    # -- taking up others' documents --------------------------------------------------

    async def _sweep(self) -> None:
        wake = self._wake
        assert wake is not None
        while not self._stopping:
            room = MAX_TAKEN - len(self._jobs)
            if room > 0:
                try:
                    taken = await asyncio.to_thread(self._take, set(self._jobs), room)
                except Exception as exc:  # a store down now may be up at the next sweep
                    _log.warning("knowledge: looking for unfinished documents failed: %s", exc)
                    taken = []
                for job in taken:
                    if self._stopping:
                        await asyncio.to_thread(self._hand_back, job)
                    else:
                        self._spawn(job)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(wake.wait(), SWEEP_S)

    def _take(self, held: builtins.set[str], room: int) -> builtins.list[Job]:
        """Lease up to ``room`` unfinished documents whose lease ran out, with their text."""
        jobs: list[Job] = []
        for entry in self.records.list(INDEXING, limit=100, order="created_asc"):
            tenant = entry.metadata.get("tenant")
            if len(jobs) >= room:
                break
            if entry.id in held or not isinstance(tenant, str):
                continue
            job = self._lease(tenant, entry)
            if job is not None:
                jobs.append(job)
        return jobs

    def _lease(self, tenant: str, entry: Record) -> Job | None:
        space = docs_space(tenant).encode()
        found = self.records.get(space, [entry.id])
        now = self.clock.now()
        expect = [Expect(namespace=space, id=entry.id, seen=found[0] if found else None)]
        try:
            if not found or found[0].metadata.get("status") != "indexing":
                self.records.write(deletes={INDEXING: [entry.id]}, expect=expect)
                return None
            if _lease_until(found[0]) > now:
                return None
            leased = _changed(found[0], now, worker=self.worker, lease_until=now + LEASE_S)
            self.records.write(upserts=[leased], expect=expect)
        except WriteConflict:
            return None  # another server came first
        _log.info("knowledge: carrying on with %s at passage %d", entry.id, _int(leased, "done"))
        return Job(tenant=tenant, seen=leased, text=load_text(self.records, tenant, leased))
