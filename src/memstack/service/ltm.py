"""The long-term tier: memories as records of the RecordStore, one namespace per
(tenant, bucket), plus an id index so a memory is found from its id alone, plus the
short-term tier's epoch (see ``stm_sync``): a token the long-term tier owns, changed
whenever the short-term tier may have missed a write.

Versions (``next_version``, over the rules of ``memstack.storage.versions``): a new
value keeps the replaced version as a closed record beside the current one. The cap
closes what it evicts (``closed_reason="evicted"``, same id) and deletes its id-index
entry, so the index holds current memories only; ``history`` finds an evicted memory
by looking in the buckets it is given. Reads return current versions unless they ask
``as_of`` or ``include_superseded``.

One linear history per memory, whatever the number of writers (threads, processes,
hosts on one database): a write reads the current version, computes the next one and
writes it with an ``Expect`` of what it read, so the store applies it only if no other
writer came in between (checked in its write transaction); otherwise it reads again and
retries, at most ``TRIES`` times. Every acknowledged write is a version, each closed
version's ``valid_to`` is the next one's ``valid_from``, and one version is current.
"""

from __future__ import annotations

import builtins
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Final, TypeVar

import numpy as np
import numpy.typing as npt

from memstack._json import JSON, to_json
from memstack.errors import WriteConflict
from memstack.service.types import (
    DEFAULT_PROVENANCE,
    SCOPES,
    Memory,
    Provenance,
    Scope,
    as_closed_reason,
    as_provenance,
)
from memstack.storage import (
    Cap,
    Expect,
    Filter,
    MetadataIn,
    Namespace,
    Order,
    Record,
    RecordStore,
)
from memstack.storage.backend import stamp
from memstack.storage.namespace import decode_part, encode_part
from memstack.storage.versions import (
    KEPT_VERSIONS,
    as_version_of,
    beyond_kept,
    closed_copy,
    closed_order,
    closing_time,
    memory_of,
    starts,
)

__all__ = [
    "FIRST_EPOCH",
    "TRIES",
    "LongTermTier",
    "Restoring",
    "Written",
    "WrittenMany",
    "encode_part",
    "from_record",
    "memory_filter",
    "metadata_conditions",
    "retried",
]

FIRST_EPOCH: Final = "0"
"""The epoch before anything ever bumped it."""
_EPOCH_ID: Final = "short-term"
_PAGE: Final = 1_000
_VERSION: Final = "version"
"""The record metadata key of a version's ``version_id``."""
_FOLLOWED_BY: Final = "followed_by"
"""The record metadata key of a closed copy naming the ``version_id`` that came after it
(the record's own ``superseded_by`` names the memory: how its versions are found)."""
TRIES: Final = 50
"""How many times a write of a memory is tried while other writers keep changing it."""
_T = TypeVar("_T")


@dataclass(frozen=True, kw_only=True)
class Written:
    memory: Memory
    """The memory as stored: ``created_at`` kept from the version it replaced,
    ``valid_from`` set."""
    evicted: list[str]
    """The ids the bucket's cap evicted (closed) in the same transaction."""


@dataclass(frozen=True, kw_only=True)
class WrittenMany:
    memories: list[Memory]
    """The memories as stored (``Written.memory``), in the order given."""
    evicted: dict[str, list[str]]
    """The ids the caps evicted (closed) in the same transaction, by bucket."""


@dataclass
class _Plan:
    """The writes of one ``upsert_many`` transaction, gathered memory by memory."""

    upserts: list[Record] = field(default_factory=list)
    deletes: dict[Namespace | str, list[str]] = field(default_factory=dict)
    expect: list[Expect] = field(default_factory=list)
    written: dict[str, Memory] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class Restoring:
    """What ``LongTermTier.restore`` did."""

    evicted: dict[str, list[str]]
    """The ids the caps evicted, by bucket."""
    skipped: list[str]
    """The memories left as they were: the store held them already (no ``replace``)."""


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
        over: Memory | None = None,
    ) -> Written:
        """Write the memory and its index entry in one transaction, keeping what it
        replaces as history in the same one, over the current version as it is when the
        transaction commits (read again and retried while other writers change it):

        - a current version with another value is closed at ``memory.updated_at`` and kept
          (``next_version``); the memory is valid from then. A change of metadata
          or TTL only overwrites the current version in place, validity unchanged;
        - a version the cap evicted is kept as it is, and the memory starts anew;
        - beyond ``KEPT_VERSIONS`` closed versions, the earliest closed are deleted;
        - with ``keep`` > 0, the lowest-retention current memories of the bucket beyond
          ``keep`` are closed as evicted and their index entries deleted; the bucket keeps
          at most ``keep * KEPT_VERSIONS`` closed records (earliest closed deleted first).

        A closed version keeps its own TTL (the one it had while current), and names the
        version that came after it (``superseded_by`` of the memory read back).

        ``over``: the current version the caller computed ``memory`` from (an update of
        some of its fields); when the memory is no longer at it, ``WriteConflict`` at
        once, for the caller to compute the write again, instead of a retry here."""
        namespace = self.namespace(memory.tenant, memory.bucket)
        cap = _cap(namespace, keep)

        def attempt() -> Written:
            seen = self._stored(namespace, memory.id)
            if over is not None and (seen is None or stamp(seen) != stamp(_to_record(over))):
                raise WriteConflict(f"memory {memory.id!r} changed since it was read.")
            current = seen if seen is not None and self._live(seen) else None
            written, archived = next_version(memory, current)
            upserts = [_to_record(written, embedding), self._index_record(written)]
            deletes: dict[Namespace | str, list[str]] = {}
            if archived is not None:
                upserts.append(archived)
                deletes[namespace] = self._overflow(namespace, memory.id)
            result = self.records.write(
                upserts=upserts,
                deletes=deletes,
                caps=[cap] if keep > 0 else (),
                model_id=model_id,
                expect=[Expect(namespace=namespace.encode(), id=memory.id, seen=seen)],
            )
            return Written(memory=written, evicted=result.evicted.get(namespace.encode(), []))

        return attempt() if over is not None else retried(attempt, f"memory {memory.id!r}")

    def upsert_many(
        self,
        memories: Sequence[Memory],
        embeddings: Sequence[npt.NDArray[np.float32] | None],
        *,
        keep: int = 0,
        model_id: str | None = None,
    ) -> WrittenMany:
        """``upsert`` of several memories (each id once, ``embeddings`` beside them) in
        one transaction, each over its current version as the transaction finds it (read
        again and retried while other writers change one): all are written, or none.
        Each bucket's cap applies as for ``upsert``."""
        vectors = {m.id: v for m, v in zip(memories, embeddings, strict=True)}
        groups: dict[Namespace, builtins.list[Memory]] = {}
        for memory in memories:
            groups.setdefault(self.namespace(memory.tenant, memory.bucket), []).append(memory)

        def attempt() -> WrittenMany:
            plan = _Plan()
            for namespace, group in groups.items():
                self._plan(plan, namespace, group, vectors)
            result = self.records.write(
                upserts=plan.upserts,
                deletes=plan.deletes,
                caps=[_cap(ns, keep) for ns in groups] if keep > 0 else (),
                model_id=model_id,
                expect=plan.expect,
            )
            return WrittenMany(
                memories=[plan.written[m.id] for m in memories],
                evicted={ns.parts[-1]: result.evicted.get(ns.encode(), []) for ns in groups},
            )

        more = f" (and {len(memories) - 1} more)" if len(memories) > 1 else ""
        return retried(attempt, f"memory {memories[0].id!r}{more}")

    def _plan(
        self,
        plan: _Plan,
        namespace: Namespace,
        group: Sequence[Memory],
        vectors: dict[str, npt.NDArray[np.float32] | None],
    ) -> None:
        """Add the writes of ``group`` (memories of ``namespace``) to ``plan``: each the
        next version over what is stored now (``next_version``), as ``upsert`` writes it."""
        seen = self.records.fetch(namespace, [m.id for m in group], Filter(include_expired=True))
        closed: dict[str | None, builtins.list[Record]] = {}  # only a stored memory has any
        for record in self._versions(namespace, [*seen]) if seen else []:
            closed.setdefault(record.superseded_by, []).append(record)
        for memory in group:
            stored = seen.get(memory.id)
            current = stored if stored is not None and self._live(stored) else None
            written, archived = next_version(memory, current)
            plan.written[memory.id] = written
            plan.upserts += [_to_record(written, vectors[memory.id]), self._index_record(written)]
            if archived is not None:
                plan.upserts.append(archived)
                own = beyond_kept(closed.get(memory.id, []))
                plan.deletes.setdefault(namespace, []).extend(own)
            plan.expect.append(Expect(namespace=namespace.encode(), id=memory.id, seen=stored))

    def restore(
        self,
        chains: Sequence[Sequence[Memory]],
        embeddings: Sequence[Sequence[npt.NDArray[np.float32] | None]],
        *,
        keep: int = 0,
        model_id: str | None = None,
        replace: bool = False,
    ) -> Restoring:
        """Write each memory of ``chains`` (its versions, oldest first, as
        ``restore.check_chain`` gives them; ``embeddings`` beside them) with every version,
        and its index entry while it has a current version, in one transaction (read
        again and retried while other writers change one). A memory the store already
        holds (any version of it) is left as it is and named in ``skipped``, unless
        ``replace``: then what the store held of it is replaced. Each bucket's cap applies
        as for ``upsert``."""
        vectors_of = {chain[0].id: v for chain, v in zip(chains, embeddings, strict=True)}
        index = self.index_namespace(chains[0][0].tenant) if chains else None

        def attempt() -> Restoring:
            ids = self._by_namespace(chains)
            expect: builtins.list[Expect] = []
            held: dict[Namespace, builtins.list[tuple[str, str]]] = {}  # (record, memory)
            for namespace, memory_ids in ids.items():
                seen = self.records.fetch(namespace, memory_ids, Filter(include_expired=True))
                expect += [
                    Expect(namespace=namespace.encode(), id=i, seen=seen.get(i)) for i in memory_ids
                ]
                versions = self._versions(namespace, memory_ids)
                held[namespace] = [(i, i) for i in seen] + [
                    (r.id, r.superseded_by or r.id) for r in versions
                ]
            owners = {memory for pairs in held.values() for _, memory in pairs}
            chosen = [c for c in chains if replace or c[0].id not in owners]
            skipped = [c[0].id for c in chains if c[0].id in owners and not replace]
            if not chosen:
                return Restoring(evicted={}, skipped=skipped)
            upserts = [r for c in chosen for r in _chain_records(c, vectors_of[c[0].id])]
            written = {r.id for r in upserts}
            kept = {c[0].id for c in chosen}
            deletes: dict[Namespace | str, builtins.list[str]] = {
                ns: [i for i, memory in pairs if memory in kept and i not in written]
                for ns, pairs in held.items()
            }
            gone = [c[0].id for c in chosen if c[-1].valid_to is not None]
            if index is not None and gone:
                deletes[index] = gone
            current = [c[-1] for c in chosen if c[-1].valid_to is None]
            result = self.records.write(
                upserts=[*upserts, *(self._index_record(m) for m in current)],
                deletes=deletes,
                caps=[_cap(ns, keep) for ns in ids] if keep > 0 else (),
                model_id=model_id,
                expect=expect,
            )
            evicted = {ns.parts[-1]: result.evicted.get(ns.encode(), []) for ns in ids}
            return Restoring(evicted=evicted, skipped=skipped)

        what = f"memory {chains[0][0].id!r}" if chains else "nothing"
        return retried(attempt, what) if chains else Restoring(evicted={}, skipped=[])

    def _by_namespace(
        self, chains: Sequence[Sequence[Memory]]
    ) -> dict[Namespace, builtins.list[str]]:
        """The memory ids of ``chains`` by the namespace of their bucket."""
        ids: dict[Namespace, builtins.list[str]] = {}
        for chain in chains:
            ids.setdefault(self.namespace(chain[0].tenant, chain[0].bucket), []).append(chain[0].id)
        return ids

    def _stored(self, namespace: Namespace, memory_id: str) -> Record | None:
        """The record with the memory's id as stored, expired or not: what a write of it
        expects to replace."""
        found = self.records.fetch(namespace, [memory_id], Filter(include_expired=True))
        return found.get(memory_id)

    def _live(self, record: Record) -> bool:
        """Whether the record has not expired (an expired one is as good as gone)."""
        return record.expires_at is None or record.expires_at > self.records.clock.now()

    def _index_record(self, memory: Memory) -> Record:
        return Record(
            id=memory.id,
            namespace=self.index_namespace(memory.tenant).encode(),
            text=memory.bucket,
            created_at=memory.created_at,
            updated_at=memory.updated_at,
            expires_at=memory.expires_at,
        )

    def _overflow(self, namespace: Namespace, memory_id: str) -> builtins.list[str]:
        """The closed versions of ``memory_id`` to delete so that, with the one being
        added, ``KEPT_VERSIONS`` remain: the earliest closed."""
        return beyond_kept(self._versions(namespace, [memory_id]))

    def _versions(
        self, namespace: Namespace, memory_ids: Sequence[str], *, expired: bool = True
    ) -> builtins.list[Record]:
        """Every closed version of these memories (expired ones too unless not
        ``expired``), in no order."""
        wanted = Filter(
            superseded_by=tuple(memory_ids), include_superseded=True, include_expired=expired
        )
        out: builtins.list[Record] = []
        while page := self.records.list(namespace, filter=wanted, limit=_PAGE, offset=len(out)):
            out.extend(page)
            if len(page) < _PAGE:
                break
        return out

    def get(self, tenant: str, memory_id: str) -> Memory | None:
        """The current memory with this id (None when there is none, or it was evicted)."""
        found = self.records.get(self.index_namespace(tenant), [memory_id])
        if not found:
            return None
        records = self.records.get(self.namespace(tenant, found[0].text), [memory_id])
        if not records or records[0].valid_to is not None:
            return None
        return _from_record(tenant, records[0])

    def history(
        self, tenant: str, memory_id: str, buckets: Iterable[str]
    ) -> builtins.list[Memory] | None:
        """Every unexpired version of the memory, oldest first, the current (or evicted)
        one last; None when there is no such memory. A current memory is found through
        the id index; one the cap evicted (its index entry is gone) in the first of
        ``buckets`` that holds it."""
        found = self._locate(tenant, memory_id, buckets)
        if found is None:
            return None
        namespace, latest = found
        versions = self._versions(namespace, [memory_id], expired=False)
        versions.sort(key=lambda r: (starts(r), closed_order(r)))
        return [_from_record(tenant, r) for r in [*versions, latest]]

    def _locate(
        self, tenant: str, memory_id: str, buckets: Iterable[str]
    ) -> tuple[Namespace, Record] | None:
        """The namespace and record of a memory's latest version (current or evicted)."""
        indexed = self.records.get(self.index_namespace(tenant), [memory_id])
        for bucket in [indexed[0].text] if indexed else buckets:
            namespace = self.namespace(tenant, bucket)
            if found := self.records.get(namespace, [memory_id]):
                return namespace, found[0]
        return None

    def delete(self, tenant: str, bucket: str, ids: Sequence[str]) -> None:
        """Erase these memories, every version of them and their index entries, in one
        transaction: nothing of them remains (a hard delete is an erasure), not even a
        version another writer added after the versions were listed (the delete expects
        the records as it read them, and reads again if one changed)."""
        if not ids:
            return
        namespace = self.namespace(tenant, bucket)

        def attempt() -> None:
            seen = self.records.fetch(namespace, ids, Filter(include_expired=True))
            versions = [r.id for r in self._versions(namespace, ids)]
            self.records.write(
                deletes={namespace: [*ids, *versions], self.index_namespace(tenant): ids},
                expect=[Expect(namespace=namespace.encode(), id=i, seen=seen.get(i)) for i in ids],
            )

        more = f" (and {len(ids) - 1} more)" if len(ids) > 1 else ""
        retried(attempt, f"memory {ids[0]!r}{more}")

    def records_page(
        self,
        tenant: str,
        bucket: str,
        selector: Filter | None = None,
        *,
        limit: int = 100,
        order: Order = "created_desc",
        after: tuple[float, str] | None = None,
    ) -> builtins.list[Record]:
        """A page of the bucket's records (versions have ids of their own), after the
        ``(order key, id)`` of ``after`` when given (``RecordStore.list``)."""
        return self.records.list(
            self.namespace(tenant, bucket), filter=selector, limit=limit, order=order, after=after
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


def retried(attempt: Callable[[], _T], what: str) -> _T:
    """``attempt()``, again while another writer changes what it read (``WriteConflict``),
    at most ``TRIES`` times; then ``WriteConflict`` naming ``what`` (the memory)."""
    for _ in range(TRIES - 1):
        try:
            return attempt()
        except WriteConflict:
            continue
    try:
        return attempt()
    except WriteConflict as exc:
        raise WriteConflict(
            f"{what} was changed by other writers during each of {TRIES} tries to write "
            "it; nothing of this write was applied: retry later."
        ) from exc


def memory_filter(
    *,
    scope: Scope | None = None,
    session_id: str | None = None,
    key: str | None = None,
    agent_id: str | None = None,
    as_of: float | None = None,
    include_superseded: bool = False,
    provenances: tuple[Provenance, ...] | None = None,
) -> Filter | None:
    """The record filter selecting memories by scope, session, key, writer and
    provenance; versions valid ``as_of`` a moment, or every version with
    ``include_superseded``."""
    metadata: dict[str, JSON] = {}
    if agent_id is not None:
        metadata["agent_id"] = agent_id
    if session_id is not None:
        metadata["session_id"] = session_id
    if key is not None:
        metadata["key"] = key
    if (
        scope is None
        and not metadata
        and as_of is None
        and not include_superseded
        and provenances is None
    ):
        return None
    return Filter(
        kinds=(scope,) if scope else None,
        metadata=metadata or None,
        as_of=as_of,
        include_superseded=include_superseded,
        provenances=provenances,
    )


def metadata_conditions(wanted: Mapping[str, tuple[JSON, ...]]) -> tuple[MetadataIn, ...]:
    """The record conditions of a memory metadata filter (each key with the values it
    may hold): a memory's own metadata sits under its record's ``metadata`` key."""
    return tuple(MetadataIn(path=("metadata", key), values=v) for key, v in wanted.items())


def _cap(namespace: Namespace, keep: int) -> Cap:
    """The cap of a bucket: ``keep`` current memories, ``KEPT_VERSIONS`` closed records
    for each; what it evicts is closed and leaves the id index."""
    tenant = namespace.parts[0]
    return Cap(
        namespace=namespace.encode(),
        keep=keep,
        also_from=(LongTermTier.index_namespace(tenant).encode(),),
        close=True,
        keep_closed=keep * KEPT_VERSIONS,
    )


def next_version(memory: Memory, stored: Record | None) -> tuple[Memory, Record | None]:
    """The memory to write over ``stored`` (the record with its id, if any), and the
    closed copy of ``stored`` to keep beside it (None: overwrite in place). A closed
    copy keeps the provenance and the TTL it had, and names the new version (its
    ``version_id``) as the one that came after it; a rewrite in place keeps the version's
    id."""
    memory = replace(
        memory,
        valid_to=None,
        superseded_by=None,
        closed_reason=None,
        version_id=new_version_id(),
    )
    memory = _with_provenance(memory, stored if stored and stored.valid_to is None else None)
    if stored is None:
        return replace(memory, valid_from=memory.created_at), None
    if stored.valid_to is not None:  # evicted: kept as it was, the memory starts anew
        reason = as_closed_reason(stored.closed_reason) or "evicted"
        kept = closed_copy(stored, memory.id, at=stored.valid_to, reason=reason, expires_at=None)
        return replace(memory, valid_from=memory.created_at), _followed_by(kept, memory)
    memory = replace(memory, created_at=stored.created_at)
    if stored.metadata.get("value") == memory.value:
        own = stored.metadata.get(_VERSION)
        kept_id = own if isinstance(own, str) else memory.version_id
        return replace(memory, valid_from=starts(stored), version_id=kept_id), None
    at = closing_time(stored, memory.updated_at)
    kept = closed_copy(stored, memory.id, at=at, reason="superseded", expires_at=None)
    return replace(memory, valid_from=at), _followed_by(kept, memory)


def new_version_id() -> str:
    """A fresh ``version_id``: unique, whatever the clock says (versions may start at
    the same moment)."""
    return f"ver_{uuid.uuid4().hex}"


def _followed_by(closed: Record, after: Memory) -> Record:
    """The closed copy naming the version that came after it; a version written before
    versions had ids gets one now."""
    own = closed.metadata.get(_VERSION)
    return replace(
        closed,
        metadata={
            **closed.metadata,
            _VERSION: own if isinstance(own, str) else new_version_id(),
            _FOLLOWED_BY: after.version_id,
        },
    )


def _with_provenance(memory: Memory, current: Record | None) -> Memory:
    """A memory written without a provenance keeps the current version's (and its detail,
    unless it gives one of its own); a new one gets ``DEFAULT_PROVENANCE``."""
    if memory.provenance is not None:
        return memory
    kept = as_provenance(current.provenance) if current is not None else None
    if current is None or kept is None:
        return replace(memory, provenance=DEFAULT_PROVENANCE)
    detail = memory.provenance_detail
    return replace(
        memory,
        provenance=kept,
        provenance_detail=current.provenance_detail if detail is None else detail,
    )


def _chain_records(
    chain: Sequence[Memory], embeddings: Sequence[npt.NDArray[np.float32] | None]
) -> builtins.list[Record]:
    """The records of a memory's versions (``restore.check_chain``): the one without
    ``superseded_by`` under the memory's id, each other a closed copy (``as_version_of``)."""
    out: builtins.list[Record] = []
    named = [v if v.version_id else replace(v, version_id=new_version_id()) for v in chain]
    for at, (version, embedding) in enumerate(zip(named, embeddings, strict=True)):
        record = replace(
            _to_record(version, embedding),
            valid_to=version.valid_to,
            superseded_by=version.superseded_by,
            closed_reason=version.closed_reason,
        )
        if version.superseded_by is not None and version.valid_to is not None:
            record = as_version_of(record, version.id, version.valid_to)
            if at + 1 < len(named):
                record = _followed_by(record, named[at + 1])
        out.append(record)
    return out


def _to_record(memory: Memory, embedding: npt.NDArray[np.float32] | None = None) -> Record:
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
            **({} if memory.version_id is None else {_VERSION: memory.version_id}),
        },
        created_at=memory.created_at,
        updated_at=memory.updated_at,
        expires_at=memory.expires_at,
        embedding=embedding,
        valid_from=memory.valid_from,
        provenance=memory.provenance,
        provenance_detail=memory.provenance_detail,
    )


def from_record(tenant: str, record: Record) -> Memory:
    """The memory a record of this tier holds."""
    return _from_record(tenant, record)


def _from_record(tenant: str, record: Record) -> Memory:
    meta = record.metadata
    scope = record.kind if record.kind in SCOPES else "agent"
    session = meta.get("session_id")
    user_meta = to_json(meta.get("metadata") or {}, field="metadata")
    memory_id = memory_of(record)
    version, followed_by = meta.get(_VERSION), meta.get(_FOLLOWED_BY)
    return Memory(
        id=memory_id,
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
        valid_from=starts(record),
        valid_to=record.valid_to,
        superseded_by=(
            followed_by
            if isinstance(followed_by, str) and record.superseded_by is not None
            else record.superseded_by
        ),
        closed_reason=as_closed_reason(record.closed_reason),
        version_id=version if isinstance(version, str) else None,
        provenance=as_provenance(record.provenance),
        provenance_detail=record.provenance_detail,
    )
