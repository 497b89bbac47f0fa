"""Knowledge: documents an operator adds (not agent-written), searched and injected beside
memories. Kept simple: add, list, get, delete, search.

A document is kept whole in ``kb/<tenant>/docs`` and split into passages of about
``CHUNK_CHARS`` characters in ``kb/<tenant>/chunks``, each embedded, so search finds the
relevant part of a long document.

The work one document costs is bounded: at most ``MAX_PASSAGES`` passages (a longer
document is refused, naming ``text`` and the limit), embedded ``EMBED_BATCH`` at a time so
other requests' embeddings run between the batches and the model's working memory stays
that of one small batch.
"""

from __future__ import annotations

import asyncio
import builtins
import re
import uuid
from dataclasses import dataclass
from typing import Final
from xml.sax.saxutils import escape

from memstack._json import JSON
from memstack.clock import Clock, SystemClock
from memstack.embeddings import Embedder
from memstack.errors import InvalidInput, NotFound
from memstack.longterm.secrets import refuse_secrets
from memstack.service.principal import Principal
from memstack.service.render import xml_attr
from memstack.storage import Filter, Namespace, Record, RecordStore, Vector
from memstack.storage.hybrid import hybrid_candidates

__all__ = ["Document", "KnowledgeBase", "KnowledgeHit", "render_knowledge"]

CHUNK_CHARS: Final = 800
MAX_DOCUMENT_CHARS: Final = 200_000
MAX_TITLE_CHARS: Final = 300
MAX_TAGS: Final = 20
MAX_PASSAGES: Final = 128
"""Passages one document may split into: about 100 kB of prose at ``CHUNK_CHARS``."""
EMBED_BATCH: Final = 16
MAX_LIST_OFFSET: Final = 1_000_000
_PARAGRAPH = re.compile(r"\n\s*\n")


@dataclass(frozen=True, kw_only=True)
class Document:
    id: str
    title: str
    text: str
    tags: tuple[str, ...]
    source: str | None
    created_at: float


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

    @staticmethod
    def _docs(tenant: str) -> Namespace:
        return Namespace("kb", tenant, "docs")

    @staticmethod
    def _chunks(tenant: str) -> Namespace:
        return Namespace("kb", tenant, "chunks")

    async def add(
        self,
        principal: Principal,
        *,
        title: str,
        text: str,
        tags: list[str] | None = None,
        source: str | None = None,
    ) -> Document:
        title = _check_str(title, "title", MAX_TITLE_CHARS)
        text = _check_str(text, "text", MAX_DOCUMENT_CHARS)
        clean_tags = _check_tags(tags)
        if source is not None:
            source = _check_str(source, "source", 2_000)
        doc = Document(
            id=f"doc_{uuid.uuid4().hex}",
            title=title,
            text=text,
            tags=clean_tags,
            source=source,
            created_at=self.clock.now(),
        )
        await asyncio.to_thread(self._store, principal.tenant, doc)
        return doc

    def _store(self, tenant: str, doc: Document) -> None:
        fields: dict[str, JSON] = {
            "title": doc.title,
            "text": doc.text,
            "source": doc.source,
            "tags": list(doc.tags),
        }
        refuse_secrets(fields, where="knowledge")  # here, in the worker thread, off the loop
        passages = check_passages(doc.text)
        vectors = self._embed([f"{doc.title}: {p}" for p in passages])
        meta: dict[str, JSON] = {"title": doc.title, "tags": list(doc.tags), "source": doc.source}
        chunks = [
            Record(
                id=f"{doc.id}:{i}",
                namespace=self._chunks(tenant).encode(),
                text=f"{doc.title}\n{passage}",
                metadata={"doc_id": doc.id, "title": doc.title, "passage": passage},
                created_at=doc.created_at,
                updated_at=doc.created_at,
                embedding=vectors[i],
            )
            for i, passage in enumerate(passages)
        ]
        document = Record(
            id=doc.id,
            namespace=self._docs(tenant).encode(),
            text=doc.text,
            kind="document",
            metadata={**meta, "chunks": len(passages)},
            created_at=doc.created_at,
            updated_at=doc.created_at,
        )
        # one transaction: a document is never listed without its passages
        self.records.upsert([*chunks, document], model_id=self.embedder.model_id)

    def _embed(self, texts: builtins.list[str]) -> builtins.list[Vector]:
        """``texts`` embedded ``EMBED_BATCH`` at a time."""
        vectors: list[Vector] = []
        for start in range(0, len(texts), EMBED_BATCH):
            vectors.extend(self.embedder.embed_batch(texts[start : start + EMBED_BATCH]))
        return vectors

    async def get(self, principal: Principal, document_id: str) -> Document:
        found = await asyncio.to_thread(
            self.records.get, self._docs(principal.tenant), [document_id]
        )
        if not found:
            raise NotFound(f"no document {document_id!r}.", field="id")
        return _document(found[0])

    async def list(
        self, principal: Principal, *, limit: int = 50, offset: int = 0
    ) -> tuple[builtins.list[Document], int]:
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 500:
            raise InvalidInput("limit must be an int from 1 to 500.", field="limit")
        if not _whole_in(offset, 0, MAX_LIST_OFFSET):
            raise InvalidInput(
                f"offset must be an int from 0 to {MAX_LIST_OFFSET}.", field="offset"
            )
        ns = self._docs(principal.tenant)
        rows = await asyncio.to_thread(self.records.list, ns, limit=limit, offset=offset)
        total = await asyncio.to_thread(self.records.count, ns)
        return [_document(r) for r in rows], total

    async def delete(self, principal: Principal, document_id: str) -> Document:
        doc = await self.get(principal, document_id)
        await asyncio.to_thread(self._delete, principal.tenant, doc)
        return doc

    def _delete(self, tenant: str, doc: Document) -> None:
        chunks = self.records.list(
            self._chunks(tenant), filter=Filter(metadata={"doc_id": doc.id}), limit=10_000
        )
        self.records.write(
            deletes={self._chunks(tenant): [c.id for c in chunks], self._docs(tenant): [doc.id]}
        )

    async def search(
        self, principal: Principal, query: str, *, limit: int = 5
    ) -> builtins.list[KnowledgeHit]:
        query = _check_str(query, "query", 4_000)
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 50:
            raise InvalidInput("limit must be an int from 1 to 50.", field="limit")
        return await asyncio.to_thread(self._search, principal.tenant, query, limit)

    def _search(self, tenant: str, query: str, limit: int) -> builtins.list[KnowledgeHit]:
        vector = self.embedder.embed_batch([query])[0]
        hits = hybrid_candidates(
            self.records,
            [self._chunks(tenant)],
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
        part = f"<document title={xml_attr(hit.title)}>\n{escape(hit.passage)}\n</document>"
        if used + len(part) + 1 > budget_chars:
            continue
        parts.append(part)
        used += len(part) + 1
    return "\n".join(["<knowledge>", *parts, "</knowledge>"]) if parts else ""


def check_passages(text: str) -> builtins.list[str]:
    """``text``'s passages; ``InvalidInput`` naming ``text`` when they are over ``MAX_PASSAGES``."""
    passages = split_passages(text)
    if len(passages) > MAX_PASSAGES:
        raise InvalidInput(
            f"text splits into {len(passages)} passages of about {CHUNK_CHARS} characters; "
            f"the limit is {MAX_PASSAGES} per document. Split it into several documents.",
            field="text",
        )
    return passages


def split_passages(text: str, size: int = CHUNK_CHARS) -> builtins.list[str]:
    """Paragraph-aligned passages of at most about ``size`` characters (long paragraphs
    are cut at word boundaries)."""
    passages: list[str] = []
    current = ""
    for paragraph in (p.strip() for p in _PARAGRAPH.split(text)):
        if not paragraph:
            continue
        for piece in _cut(paragraph, size):
            if current and len(current) + len(piece) + 2 > size:
                passages.append(current)
                current = piece
            else:
                current = f"{current}\n\n{piece}" if current else piece
    if current:
        passages.append(current)
    return passages or [text.strip()]


def _cut(paragraph: str, size: int) -> builtins.list[str]:
    if len(paragraph) <= size:
        return [paragraph]
    pieces, line = [], ""
    for word in paragraph.split():
        if line and len(line) + len(word) + 1 > size:
            pieces.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    if line:
        pieces.append(line)
    return pieces


def _document(record: Record) -> Document:
    meta = record.metadata
    tags = meta.get("tags")
    source = meta.get("source")
    return Document(
        id=record.id,
        title=str(meta.get("title", "")),
        text=record.text,
        tags=tuple(str(t) for t in tags) if isinstance(tags, list) else (),
        source=source if isinstance(source, str) else None,
        created_at=record.created_at,
    )


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
