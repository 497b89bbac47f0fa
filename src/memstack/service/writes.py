"""What a store writes: a memory checked from what the caller gave, once for ``store`` and
``store_many`` alike, so a batch takes exactly what a single store takes.

A batch (``POST /api/memories:batch``) is all or nothing: every memory is checked, and
its strings run through the secret filter, before anything is written, and the writes
go to the database in one transaction. An error names the memory and the field
(``memories[3].value``), so the caller fixes that one and sends the batch again;
nothing of a refused batch was stored. Why not per-item results: a caller that stores
the facts of one conversation wants them all or none, and a retry of a whole batch is
safe (a store is an upsert).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Final

from memstack._json import JSON
from memstack.errors import InvalidInput
from memstack.service.checks import (
    check_key,
    check_metadata,
    check_provenance,
    check_provenance_detail,
    check_scope,
    check_value,
)
from memstack.service.principal import Principal
from memstack.service.secret_fields import refuse_memory_secrets
from memstack.service.ttl import expiry_from_ttl
from memstack.service.types import Memory, Provenance, Scope, check_id_part, memory_id

__all__ = [
    "DEFAULT_SESSION",
    "MAX_BATCH_MEMORIES",
    "MemoryWrite",
    "batch_memories",
    "new_memory",
    "refuse_batch_secrets",
]

DEFAULT_SESSION: Final = "default"
"""The session of a session-scoped memory stored or read without a ``session_id``."""
MAX_BATCH_MEMORIES: Final = 100
"""Memories per ``store_many`` call: one transaction, one embedding batch."""


@dataclass(frozen=True, kw_only=True)
class MemoryWrite:
    """One memory to store, as ``MemoryService.store`` takes it."""

    agent_id: str
    key: str
    value: str
    scope: Scope = "agent"
    session_id: str | None = None
    metadata: dict[str, JSON] | None = None
    ttl: object = None
    """Seconds from now, an ISO 8601 time, or None (no TTL)."""
    provenance: Provenance | None = None
    provenance_detail: str | None = None


def new_memory(principal: Principal, given: MemoryWrite, *, now: float) -> Memory:
    """The memory ``given`` stores for ``principal`` at ``now``, every field checked
    (``InvalidInput`` or ``Forbidden`` naming it); its id follows from its identity."""
    agent_id = check_id_part(given.agent_id, "agent_id")
    principal.check_agent(agent_id)
    scope = check_scope(given.scope)
    session_id = writable_session(principal, scope, given.session_id)
    key, value = check_key(given.key), check_value(given.value)
    metadata = check_metadata(given.metadata)
    provenance = check_provenance(given.provenance)
    provenance_detail = check_provenance_detail(given.provenance_detail)
    return Memory(
        id=memory_id(
            tenant=principal.tenant, scope=scope, agent_id=agent_id, session_id=session_id, key=key
        ),
        tenant=principal.tenant,
        agent_id=agent_id,
        scope=scope,
        key=key,
        value=value,
        session_id=session_id,
        metadata=metadata,
        expires_at=expiry_from_ttl(given.ttl, now=now),
        created_at=now,
        updated_at=now,
        provenance=provenance,
        provenance_detail=provenance_detail,
    )


def writable_session(principal: Principal, scope: Scope, session_id: str | None) -> str | None:
    """The session a memory of ``scope`` stored by ``principal`` belongs to: only a
    session memory has one (``DEFAULT_SESSION`` when not given); a global one needs the
    right to write global memories."""
    if scope == "global":
        principal.check_global_write(field="scope")
    if scope == "session":
        session_id = DEFAULT_SESSION if session_id is None else session_id
        check_id_part(session_id, "session_id")
    elif session_id is not None:
        raise InvalidInput(
            "session_id is only for scope 'session'; drop it or set scope to 'session'.",
            field="session_id",
        )
    return session_id


def batch_memories(
    principal: Principal, given: Sequence[MemoryWrite], *, now: float
) -> list[Memory]:
    """The memories of a batch, each checked as a store checks it, its errors named under
    ``memories[i]``; the same memory (identity) twice is refused."""
    if isinstance(given, str | bytes) or not 1 <= len(given) <= MAX_BATCH_MEMORIES:
        raise InvalidInput(
            f"give 1 to {MAX_BATCH_MEMORIES} memories a call; send more in several calls.",
            field="memories",
        )
    memories: list[Memory] = []
    first: dict[str, int] = {}
    for i, item in enumerate(given):
        with under(f"memories[{i}]"):
            if not isinstance(item, MemoryWrite):
                raise InvalidInput("each memory must be a MemoryWrite.")
            memory = new_memory(principal, item, now=now)
        if (seen := first.setdefault(memory.id, i)) != i:
            raise InvalidInput(
                f"memories[{i}] is the memory of memories[{seen}] again (same agent, scope, "
                "session and key); give each memory once a batch.",
                field=f"memories[{i}].key",
            )
        memories.append(memory)
    return memories


def refuse_batch_secrets(memories: Sequence[Memory]) -> None:
    """``InvalidInput`` naming the memory and the field when one holds a credential."""
    for i, memory in enumerate(memories):
        with under(f"memories[{i}]"):
            refuse_memory_secrets(memory)


@contextmanager
def under(at: str) -> Iterator[None]:
    """An ``InvalidInput`` raised inside names its field under ``at`` (``memories[3]``),
    of the same class (a ``Forbidden`` stays one)."""
    try:
        yield
    except InvalidInput as exc:
        named = f"{at}.{exc.field}" if exc.field else at
        raise type(exc)(f"{at}: {exc}", field=named) from exc
