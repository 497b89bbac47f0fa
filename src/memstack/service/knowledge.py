"""Knowledge: documents an operator adds (not agent-written), searched and injected beside
memories. Kept simple: add, list, get, delete, search.

A document is split into passages of about ``CHUNK_CHARS`` characters, each embedded, so
search finds the relevant part of a long document (where each piece lives:
``knowledge_index``).

A document of at most ``SYNC_PASSAGES`` passages and ``SYNC_CHARS`` characters is
embedded before ``add`` returns and kept whole in one record. A larger one, up to
``MAX_DOCUMENT_CHARS``, is stored in parts with the status ``indexing`` and embedded by
the ``Indexer``, ``EMBED_BATCH`` passages a step: before ``add`` returns, or with
``add(background=True)`` (what the REST API does) after, its passages searchable as
they land and its progress in ``status``, ``passages_done`` and ``passages_total``.
Either way the secret filter reads the whole document first and refuses it, naming the
field, before anything is stored.
"""

from __future__ import annotations

import asyncio
import builtins
import uuid
from dataclasses import dataclass, fields, replace
from typing import Final, get_args

from memstack._json import JSON
from memstack._prompt_text import escape_prompt_text
from memstack.clock import Clock, SystemClock
from memstack.embeddings import Embedder
from memstack.errors import InvalidInput, NotFound
from memstack.secrets import refuse_secrets
from memstack.service.knowledge_index import (
    EMBED_BATCH,
    INDEXING,
    DocumentStatus,
    Indexer,
    chunks_space,
    docs_space,
    embed_passages,
    load_text,
    parts_space,
    passage_record,
)
from memstack.service.passages import CHUNK_CHARS, count_passages, split_passages
from memstack.service.principal import Principal
from memstack.service.render import xml_attr
from memstack.storage import Record, RecordStore
from memstack.storage.hybrid import hybrid_candidates

__all__ = [
    "CHUNK_CHARS",
    "EMBED_BATCH",
    "MAX_DOCUMENT_CHARS",
    "SYNC_CHARS",
    "SYNC_PASSAGES",
    "Document",
    "DocumentInfo",
    "DocumentStatus",
    "KnowledgeBase",
    "KnowledgeHit",
    "render_knowledge",
    "split_passages",
]

MAX_DOCUMENT_CHARS: Final = 10 * 1024 * 1024
MAX_TITLE_CHARS: Final = 300
MAX_TAGS: Final = 20
SYNC_PASSAGES: Final = 128
"""Passages embedded before ``add`` returns, whatever ``background`` says: about 100 kB
of prose at ``CHUNK_CHARS``."""
SYNC_CHARS: Final = 200_000
"""Characters a document embedded before ``add`` returns may have (with ``SYNC_PASSAGES``)."""
MAX_LIST_LIMIT: Final = 500
MAX_LIST_OFFSET: Final = 1_000_000
MAX_QUERY_CHARS: Final = 4_000
MAX_SOURCE_CHARS: Final = 2_000
"""The longest ``source`` a document may name (a path or a URL)."""
MAX_SEARCH_LIMIT: Final = 50
_STATUSES: Final = get_args(DocumentStatus)


@dataclass(frozen=True, kw_only=True)
class DocumentInfo:
    """A document without its text: what a listing shows."""

    id: str
    title: str
    tags: tuple[str, ...]
    source: str | None
    created_at: float
    chars: int
    status: DocumentStatus
    """``indexing`` while its passages are embedded, then ``ready``, or ``failed``."""
    passages_done: int
    """Passages embedded and searchable so far."""
    passages_total: int
    error: str | None = None
    """Why indexing failed."""


@dataclass(frozen=True, kw_only=True)
class Document(DocumentInfo):
    text: str


@dataclass(frozen=True, kw_only=True)
class KnowledgeHit:
    document_id: str
    title: str
    passage: str
    score: float


class KnowledgeBase:
    def __init__(
        self, *, records: RecordStore, embedder: Embedder, clock: Clock | None = None
    ) -> None:
        self.records = records
        self.embedder = embedder
        self.clock: Clock = clock or SystemClock()
        self.indexer = Indexer(records=records, embedder=embedder, clock=self.clock)
        """Embeds the documents too large to embed before ``add`` returns."""

    async def add(
        self,
        principal: Principal,
        *,
        title: str,
        text: str,
        tags: list[str] | None = None,
        source: str | None = None,
        background: bool = False,
    ) -> Document:
        """Store and index a document. One over ``SYNC_PASSAGES`` passages (or
        ``SYNC_CHARS`` characters) is indexed by the ``Indexer``: before this returns, or
        with ``background`` after, returning it with the status ``indexing``. If the model
        or the store goes down while it is indexed before returning, ``StoreUnavailable``
        (the document stays stored, ``indexing``, and a server carries on with it)."""
        principal.check_global_write()
        title = _check_str(title, "title", MAX_TITLE_CHARS)
        text = _check_str(text, "text", MAX_DOCUMENT_CHARS)
        clean_tags = _check_tags(tags)
        if source is not None:
            source = _check_str(source, "source", MAX_SOURCE_CHARS)
        now = self.clock.now()
        tenant = principal.tenant
        meta: dict[str, JSON] = {"title": title, "tags": list(clean_tags), "source": source}
        doc = Record(
            id=f"doc_{uuid.uuid4().hex}",
            namespace=docs_space(tenant).encode(),
            text=text,
            kind="document",
            metadata=meta,
            created_at=now,
            updated_at=now,
        )
        total = await asyncio.to_thread(_vetted, doc)
        if total <= SYNC_PASSAGES and len(text) <= SYNC_CHARS:
            return _document(await asyncio.to_thread(self._store, tenant, doc), text)
        large = replace(
            doc,
            text="",
            metadata={**meta, "chunks": total, "chars": len(text), "status": "indexing", "done": 0},
        )
        job = await asyncio.to_thread(self.indexer.create, tenant, large, text)
        if background:
            self.indexer.submit(job)
            return _document(job.seen, text)
        return _document(await self.indexer.run(job) or job.seen, text)

    def _store(self, tenant: str, doc: Record) -> Record:
        """``doc`` and its passages, embedded, in one transaction: a document is never
        listed without its passages."""
        passages = split_passages(doc.text)
        vectors = embed_passages(self.embedder, str(doc.metadata["title"]), passages)
        chunks = [passage_record(tenant, doc, i, p, vectors[i]) for i, p in enumerate(passages)]
        stored = replace(doc, metadata={**doc.metadata, "chunks": len(passages)})
        self.records.upsert([*chunks, stored], model_id=self.embedder.model_id)
        return stored

    async def get(self, principal: Principal, document_id: str) -> Document:
        record = await self._record(principal, document_id)
        text = await asyncio.to_thread(load_text, self.records, principal.tenant, record)
        return _document(record, text)

    async def status(self, principal: Principal, document_id: str) -> DocumentInfo:
        """The document without its text: its indexing progress, read cheaply."""
        return _info(await self._record(principal, document_id))

    async def _record(self, principal: Principal, document_id: str) -> Record:
        found = await asyncio.to_thread(
            self.records.get, docs_space(principal.tenant), [document_id]
        )
        if not found:
            raise NotFound(f"no document {document_id!r}.", field="id")
        return found[0]

    async def list(
        self, principal: Principal, *, limit: int = 50, offset: int = 0
    ) -> tuple[builtins.list[DocumentInfo], int]:
        if not _whole_in(limit, 1, MAX_LIST_LIMIT):
            raise InvalidInput(f"limit must be an int from 1 to {MAX_LIST_LIMIT}.", field="limit")
        if not _whole_in(offset, 0, MAX_LIST_OFFSET):
            raise InvalidInput(
                f"offset must be an int from 0 to {MAX_LIST_OFFSET}.", field="offset"
            )
        ns = docs_space(principal.tenant)
        rows = await asyncio.to_thread(self.records.list, ns, limit=limit, offset=offset)
        total = await asyncio.to_thread(self.records.count, ns)
        return [_info(r) for r in rows], total

    async def delete(self, principal: Principal, document_id: str) -> DocumentInfo:
        """Delete the document, its passages and its parts; a job indexing it stops (here
        before its next step, elsewhere when its next write finds the document gone)."""
        principal.check_global_write(field="id")
        record = await self._record(principal, document_id)
        self.indexer.drop(document_id)
        await asyncio.to_thread(self._delete, principal.tenant, record)
        return _info(record)

    def _delete(self, tenant: str, doc: Record) -> None:
        chunks, parts = _count(doc.metadata.get("chunks")), _count(doc.metadata.get("parts"))
        self.records.write(
            deletes={
                chunks_space(tenant): [f"{doc.id}:{i}" for i in range(chunks)],
                parts_space(tenant): [f"{doc.id}:{n}" for n in range(parts)],
                docs_space(tenant): [doc.id],
                INDEXING: [doc.id] if parts else [],
            }
        )

    async def search(
        self, principal: Principal, query: str, *, limit: int = 5
    ) -> builtins.list[KnowledgeHit]:
        query = _check_str(query, "query", MAX_QUERY_CHARS)
        if not _whole_in(limit, 1, MAX_SEARCH_LIMIT):
            raise InvalidInput(f"limit must be an int from 1 to {MAX_SEARCH_LIMIT}.", field="limit")
        return await asyncio.to_thread(self._search, principal.tenant, query, limit)

    def _search(self, tenant: str, query: str, limit: int) -> builtins.list[KnowledgeHit]:
        vector = self.embedder.embed_batch([query])[0]
        hits = hybrid_candidates(
            self.records,
            [chunks_space(tenant)],
            query=query,
            vector=vector,
            pool=max(4 * limit, 20),
            keyword_weight=0.3,
            model_id=self.embedder.model_id,
        )
        return [
            KnowledgeHit(
                document_id=str(h.record.metadata.get("doc_id")),
                title=str(h.record.metadata.get("title")),
                passage=str(h.record.metadata.get("passage")),
                score=round(h.relevance, 6),
            )
            for h in hits[:limit]
        ]


def render_knowledge(hits: list[KnowledgeHit], *, budget_chars: int = 4_000) -> str:
    """The ``<knowledge>`` block injected beside ``<memories>``; ``""`` when empty."""
    parts: list[str] = []
    used = len("<knowledge>\n</knowledge>")
    for hit in hits:
        passage = escape_prompt_text(hit.passage)
        part = f"<document title={xml_attr(hit.title)}>\n{passage}\n</document>"
        if used + len(part) + 1 > budget_chars:
            continue
        parts.append(part)
        used += len(part) + 1
    return "\n".join(["<knowledge>", *parts, "</knowledge>"]) if parts else ""


def _vetted(doc: Record) -> int:
    """How many passages ``doc`` splits into, once the secret filter has read all of it
    (``InvalidInput`` naming the field that holds a credential)."""
    meta = doc.metadata
    checked: dict[str, JSON] = {
        "title": meta["title"],
        "text": doc.text,
        "source": meta["source"],
        "tags": meta["tags"],
    }
    refuse_secrets(checked, where="knowledge")
    return count_passages(doc.text)


def _info(record: Record) -> DocumentInfo:
    meta = record.metadata
    tags, source, status = meta.get("tags"), meta.get("source"), meta.get("status", "ready")
    total = _count(meta.get("chunks"))
    error = meta.get("error")
    return DocumentInfo(
        id=record.id,
        title=str(meta.get("title", "")),
        tags=tuple(str(t) for t in tags) if isinstance(tags, list) else (),
        source=source if isinstance(source, str) else None,
        created_at=record.created_at,
        chars=_count(meta["chars"]) if "chars" in meta else len(record.text),
        status=status if status in _STATUSES else "ready",  # type: ignore[arg-type]
        passages_done=_count(meta["done"]) if "done" in meta else total,
        passages_total=total,
        error=error if isinstance(error, str) else None,
    )


def _document(record: Record, text: str) -> Document:
    info = _info(record)
    return Document(**{f.name: getattr(info, f.name) for f in fields(DocumentInfo)}, text=text)


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _check_str(value: object, field: str, limit: int) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(f"{field} must be a non-empty string.", field=field)
    if len(value) > limit:
        raise InvalidInput(f"{field} is over {limit} characters.", field=field)
    return value


def _whole_in(value: object, low: int, high: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def _check_tags(tags: object) -> tuple[str, ...]:
    if tags is None:
        return ()
    if not isinstance(tags, list) or len(tags) > MAX_TAGS:
        raise InvalidInput(f"tags must be a list of at most {MAX_TAGS} strings.", field="tags")
    for tag in tags:
        if not isinstance(tag, str) or not tag.strip() or len(tag) > 64:
            raise InvalidInput(
                "each tag must be a non-empty string of at most 64 characters.", field="tags"
            )
    return tuple(tags)
