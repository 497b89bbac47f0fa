"""Request and response bodies of the REST API (pydantic at the edge only)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictFloat, StrictInt, StrictStr

from memstack.store.knowledge import Document, KnowledgeHit
from memstack.store.service import SearchHit
from memstack.store.types import MAX_KEY_CHARS, MAX_VALUE_CHARS, Memory

ScopeName = Literal["session", "agent", "global"]
Ttl = StrictStr | StrictInt | StrictFloat | None


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class MemoryCreate(_Body):
    agent_id: StrictStr = Field(min_length=1, max_length=128)
    key: StrictStr = Field(min_length=1, max_length=MAX_KEY_CHARS)
    value: StrictStr = Field(min_length=1, max_length=MAX_VALUE_CHARS)
    scope: ScopeName = "agent"
    session_id: StrictStr | None = Field(default=None, min_length=1, max_length=128)
    metadata: dict[str, Any] | None = None
    ttl: Ttl = Field(
        default=None,
        description="When the memory expires: an ISO 8601 time, or seconds from now.",
    )


class MemoryUpdate(_Body):
    value: StrictStr | None = Field(default=None, min_length=1, max_length=MAX_VALUE_CHARS)
    metadata: dict[str, Any] | None = None
    ttl: Ttl = Field(default=None, description="null removes the TTL; omit to keep it.")


class SearchRequest(_Body):
    query: StrictStr = Field(min_length=1, max_length=MAX_VALUE_CHARS)
    agent_id: StrictStr | None = Field(default=None, min_length=1, max_length=128)
    scope: ScopeName | None = None
    session_id: StrictStr | None = Field(default=None, min_length=1, max_length=128)
    key: StrictStr | None = Field(default=None, min_length=1, max_length=MAX_KEY_CHARS)
    mode: Literal["hybrid", "text", "semantic"] = "hybrid"
    limit: StrictInt = Field(default=10, ge=1, le=100)


class KnowledgeCreate(_Body):
    title: StrictStr = Field(min_length=1, max_length=300)
    text: StrictStr = Field(min_length=1, max_length=200_000)
    tags: list[StrictStr] | None = Field(default=None, max_length=20)
    source: StrictStr | None = Field(default=None, max_length=2_000)


class KnowledgeSearch(_Body):
    query: StrictStr = Field(min_length=1, max_length=4_000)
    limit: StrictInt = Field(default=5, ge=1, le=50)


def iso(ts: float | None) -> str | None:
    if ts is None:
        return None
    return (
        datetime.fromtimestamp(ts, tz=UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    )


def memory_out(memory: Memory) -> dict[str, Any]:
    return {
        "id": memory.id,
        "agent_id": memory.agent_id,
        "scope": memory.scope,
        "key": memory.key,
        "value": memory.value,
        "session_id": memory.session_id,
        "metadata": memory.metadata,
        "expires_at": iso(memory.expires_at),
        "created_at": iso(memory.created_at),
        "updated_at": iso(memory.updated_at),
    }


def hit_out(hit: SearchHit) -> dict[str, Any]:
    return {
        "memory": memory_out(hit.memory),
        "score": hit.score,
        "similarity": hit.similarity,
        "keyword": hit.keyword,
    }


def document_out(doc: Document, *, with_text: bool = True) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": doc.id,
        "title": doc.title,
        "tags": list(doc.tags),
        "source": doc.source,
        "created_at": iso(doc.created_at),
        "chars": len(doc.text),
    }
    if with_text:
        out["text"] = doc.text
    return out


def knowledge_hit_out(hit: KnowledgeHit) -> dict[str, Any]:
    return {
        "document_id": hit.document_id,
        "title": hit.title,
        "passage": hit.passage,
        "score": hit.score,
    }
