"""The long-term tier: memories as records of the RecordStore, one namespace per
(tenant, bucket), plus an id index so a memory is found from its id alone, plus the
short-term tier's epoch (see ``stm_sync``): a token the long-term tier owns, changed
whenever the short-term tier may have missed a write."""

from __future__ import annotations

import builtins
import uuid
from collections.abc import Sequence
from typing import Final

import numpy as np
import numpy.typing as npt

from memstack._json import JSON, to_json
from memstack.service.types import SCOPES, Memory, Scope
from memstack.storage import Cap, Filter, Namespace, Order, Record, RecordStore
from memstack.storage.namespace import decode_part, encode_part

__all__ = ["FIRST_EPOCH", "LongTermTier", "encode_part", "from_record", "memory_filter"]

FIRST_EPOCH: Final = "0"
"""The epoch before anything ever bumped it."""
_EPOCH_ID: Final = "short-term"


class LongTermTier:
    """Memories in a RecordStore: ``Namespace("mem", tenant, bucket)`` holds them,
    ``Namespace("memidx", tenant)`` maps each id to its bucket. A memory and its index
    entry are written, and removed, in one transaction. The record text is
    ``key: value`` so full-text search sees both; the value itself is in the metadata."""

    def __init__(self, records: RecordStore) -> None:
        self.records = records

    # -- names, in one place ------------------------------------------------------

    @staticmethod
    def namespace(tenant: str, bucket: str) -> Namespace:
        return Namespace("mem", tenant, bucket)

    @staticmethod
    def index_namespace(tenant: str) -> Namespace:
        return Namespace("memidx", tenant)

    @staticmethod
    def epoch_namespace() -> Namespace:
        return Namespace("memepoch")

    def buckets(self, tenant: str) -> list[str]:
        prefix = Namespace("mem", tenant).prefix()
        return [decode_part(ns[len(prefix) :]) for ns in self.records.namespaces(prefix)]

    def tenants(self) -> list[str]:
        prefix = Namespace("memidx").prefix()
        return [decode_part(ns[len(prefix) :]) for ns in self.records.namespaces(prefix)]

    # -- reads and writes --------------------------------------------------------------

    def upsert(
        self,
        memory: Memory,
        embedding: npt.NDArray[np.float32] | None,
        *,
        keep: int = 0,
        model_id: str | None = None,
    ) -> list[str]:
        """Write the memory and its index entry in one transaction; with ``keep`` > 0,
        evict the oldest of its bucket beyond ``keep`` in the same one. Returns the ids
        evicted."""
        index = Record(
            id=memory.id,
            namespace=self.index_namespace(memory.tenant).encode(),
            text=memory.bucket,
            created_at=memory.created_at,
            updated_at=memory.updated_at,
            expires_at=memory.expires_at,
        )
        namespace = self.namespace(memory.tenant, memory.bucket)
        caps = [
            Cap(
                namespace=namespace.encode(),
                keep=keep,
                also_from=(self.index_namespace(memory.tenant).encode(),),
            )
        ]
        result = self.records.write(
            upserts=[_to_record(memory, embedding), index],
            caps=caps if keep > 0 else (),
            model_id=model_id,
        )
        return result.evicted.get(namespace.encode(), [])

    def get(self, tenant: str, memory_id: str) -> Memory | None:
        found = self.records.get(self.index_namespace(tenant), [memory_id])
        if not found:
            return None
        records = self.records.get(self.namespace(tenant, found[0].text), [memory_id])
        return _from_record(tenant, records[0]) if records else None

    def get_record(self, memory: Memory) -> Record | None:
        found = self.records.get(self.namespace(memory.tenant, memory.bucket), [memory.id])
        return found[0] if found else None

    def delete(self, tenant: str, bucket: str, ids: Sequence[str]) -> None:
        """Remove these memories and their index entries in one transaction."""
        self.records.write(
            deletes={self.namespace(tenant, bucket): ids, self.index_namespace(tenant): ids}
        )

    def list(
        self,
        tenant: str,
        bucket: str,
        selector: Filter | None = None,
        *,
        limit: int = 100,
        offset: int = 0,
        order: Order = "created_desc",
    ) -> builtins.list[Memory]:
        records = self.records.list(
            self.namespace(tenant, bucket),
            filter=selector,
            limit=limit,
            offset=offset,
            order=order,
        )
        return [_from_record(tenant, r) for r in records]

    def count(self, tenant: str, bucket: str, selector: Filter | None = None) -> int:
        return self.records.count(self.namespace(tenant, bucket), selector)

    # -- the short-term tier's epoch ---------------------------------------------------

    def epoch(self) -> str:
        """The short-term tier's current epoch (``FIRST_EPOCH`` if never bumped)."""
        found = self.records.get(self.epoch_namespace(), [_EPOCH_ID])
        return found[0].text if found else FIRST_EPOCH

    def bump_epoch(self, now: float) -> str:
        """Set a new epoch, unique to this call, and return it: every short-term bucket
        filled at an older one is stale from now on."""
        token = uuid.uuid4().hex
        record = Record(
            id=_EPOCH_ID,
            namespace=self.epoch_namespace().encode(),
            text=token,
            created_at=now,
            updated_at=now,
        )
        self.records.write(upserts=[record])
        return token


def memory_filter(
    *,
    scope: Scope | None = None,
    session_id: str | None = None,
    key: str | None = None,
    agent_id: str | None = None,
) -> Filter | None:
    """The record filter selecting memories by scope, session, key and writer."""
    metadata: dict[str, JSON] = {}
    if agent_id is not None:
        metadata["agent_id"] = agent_id
    if session_id is not None:
        metadata["session_id"] = session_id
    if key is not None:
        metadata["key"] = key
    if scope is None and not metadata:
        return None
    return Filter(kinds=(scope,) if scope else None, metadata=metadata or None)


def _to_record(memory: Memory, embedding: npt.NDArray[np.float32] | None) -> Record:
    return Record(
        id=memory.id,
        namespace=LongTermTier.namespace(memory.tenant, memory.bucket).encode(),
        text=f"{memory.key}: {memory.value}",
        kind=memory.scope,
        metadata={
            "agent_id": memory.agent_id,
            "key": memory.key,
            "value": memory.value,
            "session_id": memory.session_id,
            "metadata": memory.metadata,
        },
        created_at=memory.created_at,
        updated_at=memory.updated_at,
        expires_at=memory.expires_at,
        embedding=embedding,
    )


def from_record(tenant: str, record: Record) -> Memory:
    """The memory a record of this tier holds."""
    return _from_record(tenant, record)


def _from_record(tenant: str, record: Record) -> Memory:
    meta = record.metadata
    scope = record.kind if record.kind in SCOPES else "agent"
    session = meta.get("session_id")
    user_meta = to_json(meta.get("metadata") or {}, field="metadata")
    return Memory(
        id=record.id,
        tenant=tenant,
        agent_id=str(meta.get("agent_id", "")),
        scope=scope,
        key=str(meta.get("key", "")),
        value=str(meta.get("value", "")),
        session_id=session if isinstance(session, str) else None,
        metadata=user_meta if isinstance(user_meta, dict) else {},
        expires_at=record.expires_at,
        created_at=record.created_at,
        updated_at=record.updated_at,
    )
