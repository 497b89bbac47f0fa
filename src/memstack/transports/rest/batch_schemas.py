"""The bodies of ``POST /api/memories:batch``: up to ``MAX_BATCH_MEMORIES`` memories, each
as ``POST /api/memories`` takes one, stored all or none (``service.writes``)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from memstack.service.writes import MAX_BATCH_MEMORIES, MemoryWrite
from memstack.transports.schemas import MemoryCreate, MemoryOut

__all__ = ["BatchOut", "BatchRequest", "batch_in"]


class BatchRequest(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "memories": [
                        {"agent_id": "support-bot", "key": "language", "value": "French."},
                        {"agent_id": "support-bot", "key": "editor", "value": "Neovim."},
                    ]
                }
            ]
        },
    )
    memories: list[MemoryCreate] = Field(
        min_length=1,
        max_length=MAX_BATCH_MEMORIES,
        description=f"1 to {MAX_BATCH_MEMORIES} memories, each as POST /api/memories takes "
        "one (the same memory at most once). All are stored, in one transaction, or none: "
        "an error names the memory (memories[3].value) and nothing is stored.",
    )


class BatchOut(BaseModel):
    memories: list[MemoryOut] = Field(description="The memories as stored, in the order given.")


def batch_in(body: BatchRequest) -> list[MemoryWrite]:
    """The service's memories of a request body."""
    return [
        MemoryWrite(
            agent_id=m.agent_id,
            key=m.key,
            value=m.value,
            scope=m.scope,
            session_id=m.session_id,
            metadata=m.metadata,
            ttl=m.ttl,
            provenance=m.provenance,
            provenance_detail=m.provenance_detail,
        )
        for m in body.memories
    ]
