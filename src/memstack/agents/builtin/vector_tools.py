"""vector_index, vector_text_search, vector_hybrid_search: vector search tools for the model,
on the knowledge base.

The tools are bound to a ``KnowledgeBase`` and the ``Principal`` whose documents they
read and write (``vector_tools(knowledge, principal)``). ``vector_index`` stores the text
as a knowledge document through ``KnowledgeBase.add``, so it passes the one secret
filter (run first on the tool's own fields, so a refusal names the field the model gave)
and is split into embedded passages like any other document; its ``source_id`` is
the document's title and source, and indexing the same ``source_id`` again replaces what
it indexed before (an upsert by source). ``vector_text_search`` ranks passages by the
cosine of their vectors with the query's; ``vector_hybrid_search`` fuses that ranking
with the store's keyword ranking by reciprocal rank fusion (``1 / (rank + k_constant)``
summed over both lists), so a passage both rankings place high comes first.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Final, cast

from memstack._json import JSON, JSONObject
from memstack.agents.builtin._errors import tool_error
from memstack.errors import Forbidden, InvalidInput, NotFound
from memstack.secrets import refuse_secrets
from memstack.service.knowledge import (
    MAX_QUERY_CHARS,
    MAX_SEARCH_LIMIT,
    MAX_TAGS,
    MAX_TITLE_CHARS,
    SYNC_CHARS,
    KnowledgeBase,
)
from memstack.service.knowledge_index import chunks_space, docs_space
from memstack.service.principal import Principal
from memstack.storage import Filter, Record
from memstack.tools import Tool

if TYPE_CHECKING:
    from memstack.context import ProcessingContext

__all__ = [
    "MAX_INDEX_CHARS",
    "VECTOR_TOOL_NAMES",
    "VecHybridSearchTool",
    "VecIndexTool",
    "VecTextSearchTool",
    "vector_tools",
]

MAX_INDEX_CHARS: Final = SYNC_CHARS
"""Longest text one ``vector_index`` call takes: embedded before the call returns."""
MAX_TAG_CHARS: Final = 64
VECTOR_TOOL_NAMES: Final = ("vector_index", "vector_text_search", "vector_hybrid_search")
_KEYWORD_SPLIT: Final = re.compile(r"[\s,.!?\-_=|]+")
_ADD_FIELDS: Final = {"text": "text", "title": "source_id", "source": "source_id"}
"""The tool's field for each field ``KnowledgeBase.add`` may refuse (the rest: metadata)."""


class _KnowledgeTool(Tool):
    def __init__(self, knowledge: KnowledgeBase, principal: Principal) -> None:
        self.knowledge = knowledge
        self.principal = principal


# -- vector_index ---------------------------------------------------------------------


class VecIndexTool(_KnowledgeTool):
    name = "vector_index"
    description = (
        "Index a text into the knowledge base so vector_text_search and vector_hybrid_search "
        "find it. `source_id` names where it comes from; indexing the same `source_id` "
        "again replaces the earlier text. `metadata` (strings, numbers, booleans) is kept "
        "as the document's tags."
    )
    input_schema: JSONObject = {
        "type": "object",
        "properties": {
            "text": {
                "type": "string",
                "minLength": 1,
                "maxLength": MAX_INDEX_CHARS,
                "description": "The text to index.",
            },
            "source_id": {
                "type": "string",
                "minLength": 1,
                "maxLength": MAX_TITLE_CHARS,
                "description": 'Unique name of the text\'s source, e.g. "notes/meeting-3.md".',
            },
            "metadata": {
                "type": "object",
                "maxProperties": MAX_TAGS,
                "additionalProperties": {"type": ["string", "number", "boolean"]},
                "description": 'Metadata to keep with the text, e.g. {"author": "Ann"}.',
            },
        },
        "required": ["text", "source_id"],
        "additionalProperties": False,
    }

    async def process(self, context: ProcessingContext, params: Mapping[str, JSON]) -> JSON:
        source_id = cast(str, params["source_id"])
        if not source_id.strip():
            raise tool_error(
                self.name, "source_id", "`source_id` is blank; name the text's source."
            )
        metadata = cast("dict[str, JSON]", params.get("metadata") or {})
        tags = _tags(self.name, metadata)
        text = cast(str, params["text"])
        await asyncio.to_thread(self._refuse_secrets, text, source_id, metadata)
        earlier = await asyncio.to_thread(self._indexed, source_id)
        try:
            document = await self.knowledge.add(
                self.principal, title=source_id, text=text, tags=tags, source=source_id
            )
        except Forbidden:
            raise
        except InvalidInput as exc:
            field = _ADD_FIELDS.get(exc.field or "", "metadata")
            raise tool_error(
                self.name, field, f"the knowledge base refused `{field}`: {exc}"
            ) from exc
        replaced = [doc.id for doc in earlier if doc.id != document.id]
        for old in replaced:
            try:
                await self.knowledge.delete(self.principal, old)
            except NotFound:
                pass  # deleted meanwhile
        return {
            "status": "success",
            "document_id": document.id,
            "source_id": source_id,
            "passages": document.passages_total,
            "replaced": cast(JSON, replaced),
            "message": f"Indexed {source_id!r} as {document.id} "
            f"({document.passages_total} passages).",
        }

    def _refuse_secrets(self, text: str, source_id: str, metadata: dict[str, JSON]) -> None:
        """The secret filter ``KnowledgeBase.add`` runs too, run first on the tool's own
        fields, so its refusal names the field the model gave (``metadata.password``)."""
        try:
            refuse_secrets(
                {"text": text, "source_id": source_id, "metadata": metadata}, where="knowledge"
            )
        except InvalidInput as exc:
            raise tool_error(self.name, exc.field or "text", str(exc)) from None

    def _indexed(self, source_id: str) -> list[Record]:
        """The documents indexed from ``source_id`` before (normally at most one)."""
        return self.knowledge.records.list(
            docs_space(self.principal.tenant),
            filter=Filter(metadata={"source": source_id}),
            limit=100,
        )

    def user_message(self, params: Mapping[str, JSON]) -> str:
        return f"Indexing text from {params.get('source_id', 'a source')}"


def _tags(tool: str, metadata: Mapping[str, JSON]) -> list[str]:
    """``metadata`` as the document's tags, ``key=value`` each."""
    tags: list[str] = []
    for key, value in metadata.items():
        tag = f"{key}={value if isinstance(value, str) else json.dumps(value)}"
        if len(tag) > MAX_TAG_CHARS or not key.strip():
            raise tool_error(
                tool,
                f"metadata.{key}",
                f"`metadata.{key}` must have a non-blank key, and key=value must be at most "
                f"{MAX_TAG_CHARS} characters; shorten it or leave it out.",
            )
        tags.append(tag)
    return tags


# -- searching ------------------------------------------------------------------------


def _query_schema(default_results: int, extra: JSONObject) -> JSONObject:
    return {
        "type": "object",
        "properties": {
            "text": {
                "type": "string",
                "minLength": 1,
                "maxLength": MAX_QUERY_CHARS,
                "description": "The text to search for.",
            },
            "n_results": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_SEARCH_LIMIT,
                "description": f"Number of passages to return (default {default_results}).",
            },
            **extra,
        },
        "required": ["text"],
        "additionalProperties": False,
    }


def _hits(records: Sequence[Record], scores: Mapping[str, float]) -> JSONObject:
    by_id = {record.id: record for record in records}
    results: list[JSON] = []
    for passage_id, score in scores.items():
        record = by_id.get(passage_id)
        if record is None:
            continue  # deleted between the ranking and the read
        meta = record.metadata
        results.append(
            {
                "id": passage_id,
                "document_id": str(meta.get("doc_id")),
                "title": str(meta.get("title")),
                "text": str(meta.get("passage")),
                "score": round(score, 6),
            }
        )
    return {"results": results}


class _SearchTool(_KnowledgeTool):
    def _blank(self, text: str) -> None:
        if not text.strip():
            raise tool_error(self.name, "text", "`text` is blank; give the words to search for.")

    def _semantic(self, text: str, k: int) -> list[tuple[str, float]]:
        return self.knowledge.records.vector_ids(
            chunks_space(self.principal.tenant),
            self.knowledge.embedder.embed_batch([text])[0],
            k=k,
            model_id=self.knowledge.embedder.model_id,
        )

    def _fetch(self, ranked: Mapping[str, float]) -> JSONObject:
        space = chunks_space(self.principal.tenant)
        return _hits(self.knowledge.records.get(space, list(ranked)), ranked)


class VecTextSearchTool(_SearchTool):
    name = "vector_text_search"
    description = (
        "Search the knowledge base for passages similar in meaning to `text` (semantic "
        "search over their vectors). Returns the passages, best first, with their document "
        "and a cosine score."
    )
    input_schema: JSONObject = _query_schema(10, {})

    async def process(self, context: ProcessingContext, params: Mapping[str, JSON]) -> JSON:
        text = cast(str, params["text"])
        self._blank(text)
        limit = cast(int, params.get("n_results", 10))
        return await asyncio.to_thread(self._search, text, limit)

    def _search(self, text: str, limit: int) -> JSONObject:
        return self._fetch(dict(self._semantic(text, limit)))

    def user_message(self, params: Mapping[str, JSON]) -> str:
        return f"Searching knowledge for {params.get('text', '')!r}"


class VecHybridSearchTool(_SearchTool):
    name = "vector_hybrid_search"
    description = (
        "Search the knowledge base by meaning and by keywords together: the semantic and the "
        "keyword rankings are fused by reciprocal rank fusion (each passage scores "
        "1 / (rank + k_constant) in each list). Words shorter than `min_keyword_length` "
        "are left out of the keyword search."
    )
    input_schema: JSONObject = _query_schema(
        5,
        {
            "k_constant": {
                "type": "number",
                "exclusiveMinimum": 0,
                "maximum": 10_000,
                "description": "The constant of reciprocal rank fusion (default 60).",
            },
            "min_keyword_length": {
                "type": "integer",
                "minimum": 1,
                "maximum": 100,
                "description": "Shortest word used as a keyword (default 3).",
            },
        },
    )

    async def process(self, context: ProcessingContext, params: Mapping[str, JSON]) -> JSON:
        text = cast(str, params["text"])
        self._blank(text)
        limit = cast(int, params.get("n_results", 5))
        k = float(cast(float, params.get("k_constant", 60.0)))
        shortest = cast(int, params.get("min_keyword_length", 3))
        return await asyncio.to_thread(self._search, text, limit, k, shortest)

    def _search(self, text: str, limit: int, k: float, shortest: int) -> JSONObject:
        pool = 2 * limit
        words = [w for w in _KEYWORD_SPLIT.split(text.lower()) if len(w) >= shortest]
        rankings = [self._semantic(text, pool)]
        if words:
            rankings.append(
                self.knowledge.records.text_ids(
                    chunks_space(self.principal.tenant), " ".join(words), k=pool
                )
            )
        fused: dict[str, float] = {}
        for ranking in rankings:
            for rank, (passage_id, _) in enumerate(ranking):
                fused[passage_id] = fused.get(passage_id, 0.0) + 1 / (rank + k)
        best = sorted(fused.items(), key=lambda item: (-item[1], item[0]))[:limit]
        return self._fetch(dict(best))

    def user_message(self, params: Mapping[str, JSON]) -> str:
        return f"Hybrid search of knowledge for {params.get('text', '')!r}"


def vector_tools(knowledge: KnowledgeBase, principal: Principal) -> list[Tool]:
    """New instances of the three vector tools on ``knowledge``, in ``VECTOR_TOOL_NAMES``
    order, reading and writing ``principal``'s documents."""
    return [
        VecIndexTool(knowledge, principal),
        VecTextSearchTool(knowledge, principal),
        VecHybridSearchTool(knowledge, principal),
    ]
