"""The bodies of ``POST /api/memories/restore``: memories of an export, each with every
version of it, as ``GET /api/memories?include_superseded=true`` listed them (times as
the API writes them, ISO 8601, or seconds since the epoch)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, StrictStr

from memstack.service.restore import MAX_RESTORE_MEMORIES, MemoryIn, VersionIn
from memstack.service.types import MAX_KEY_CHARS, MAX_VALUE_CHARS
from memstack.storage.versions import KEPT_VERSIONS
from memstack.transports.schemas import (
    ID_RULE,
    MAX_RESOURCE_ID_CHARS,
    PROVENANCE_HELP,
    ClosedReasonName,
    IdPart,
    Moment,
    ProvenanceDetail,
    ProvenanceName,
    ScopeName,
)

__all__ = ["MemoryRestore", "RestoreOut", "RestoreRequest", "VersionRestore", "restore_in"]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class VersionRestore(_Body):
    value: StrictStr = Field(min_length=1, max_length=MAX_VALUE_CHARS)
    agent_id: IdPart | None = Field(
        default=None,
        description="The agent that wrote this version of a global memory; omitted: the memory's.",
    )
    metadata: dict[str, Any] | None = None
    created_at: Moment | None = Field(default=None, description="Omitted: now.")
    updated_at: Moment | None = Field(default=None, description="Omitted: created_at.")
    valid_from: Moment | None = Field(default=None, description="Omitted: created_at.")
    valid_to: Moment | None = Field(default=None, description="Omitted: the current version.")
    expires_at: Moment | None = None
    superseded_by: StrictStr | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_RESOURCE_ID_CHARS,
        description="Set on every version a newer one replaced (as listed: the next "
        "version's version_id, or the memory's id; the versions' order says which came "
        "next); null on the latest.",
    )
    closed_reason: ClosedReasonName | None = None
    version_id: StrictStr | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_RESOURCE_ID_CHARS,
        description="The version's own id, as listed; omitted: a new one.",
    )
    provenance: ProvenanceName | None = Field(default=None, description=PROVENANCE_HELP)
    provenance_detail: ProvenanceDetail = None


class MemoryRestore(_Body):
    agent_id: IdPart = Field(description=ID_RULE)
    scope: ScopeName
    session_id: IdPart | None = Field(default=None, description=ID_RULE)
    key: StrictStr = Field(min_length=1, max_length=MAX_KEY_CHARS)
    versions: list[VersionRestore] = Field(
        min_length=1,
        max_length=KEPT_VERSIONS + 1,
        description="Every version, current and closed, in any order.",
    )


class RestoreRequest(_Body):
    memories: list[MemoryRestore] = Field(min_length=1, max_length=MAX_RESTORE_MEMORIES)
    replace: bool = Field(
        default=False,
        description="Replace what the store holds of a memory already there; without it "
        "such a memory is left as it is and counted in `skipped`.",
    )


class RestoreOut(BaseModel):
    restored: int = Field(description="Memories written, each with all its versions.")
    versions: int = Field(description="Versions written, current and closed.")
    skipped: int = Field(
        description="Memories the store held already, left as they were (no `replace`)."
    )


def restore_in(body: RestoreRequest) -> list[MemoryIn]:
    return [
        MemoryIn(
            agent_id=m.agent_id,
            scope=m.scope,
            session_id=m.session_id,
            key=m.key,
            versions=[VersionIn(**v.model_dump()) for v in m.versions],
        )
        for m in body.memories
    ]
