"""The narrow protocol a storage engine implements, and the checked values it receives.

``RecordStore`` (``base.py``) validates every argument once and hands a backend only
checked values: namespaces as encoded strings, deduplicated id lists, checked records,
unit query vectors, query words, the clock's ``now``. A backend never re-validates; it
stores, selects and ranks. Writes are batch-shaped: one ``WriteBatch`` (upserts,
deletes, caps with their evictions, model claims, and the expectations it depends on)
is one transaction.

An ``Expect`` makes a read-then-write safe with any number of writers (processes,
hosts): the write carries the record as it was read, the backend compares it with the
stored one inside its write transaction and refuses the whole batch with
``WriteConflict`` when another writer changed it in between; the caller reads again.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Final, Protocol

import numpy as np
import numpy.typing as npt

from memstack.errors import ConfigError, InvalidInput, WriteConflict
from memstack.storage.types import Filter, Order, Record, Vector

__all__ = [
    "DAY_S",
    "Accept",
    "Backend",
    "Cap",
    "Expect",
    "Gathered",
    "Matrix",
    "ModelClaim",
    "NamespaceInfo",
    "Page",
    "Ranked",
    "Stamp",
    "WriteBatch",
    "WriteResult",
    "candidate_ids",
    "check_claims",
    "check_expected",
    "check_same_records",
    "expected_ids",
    "gather_apart",
    "matched_cosines",
    "retention",
    "stamp",
]

DAY_S: Final = 86_400.0
Matrix = npt.NDArray[np.float32]
"""A float32 matrix ``(n, dim)`` of unit rows."""
Ranked = tuple[str, float]
"""A search hit before its row is fetched: the record's id and its score."""


@dataclass(frozen=True, kw_only=True)
class NamespaceInfo:
    """What a namespace's embeddings are: their dimension and the model that made them."""

    dim: int
    model_id: str | None = None


@dataclass(frozen=True, kw_only=True)
class ModelClaim:
    """A write's embeddings for one namespace: ``dim`` long, from ``model_id`` if known.
    ``field`` names the record that set ``dim``, for the error message."""

    dim: int
    model_id: str | None
    field: str


@dataclass(frozen=True, kw_only=True)
class Cap:
    """Keep at most ``keep`` current, unexpired records in ``namespace``; evict the lowest
    ``retention`` first (ties: oldest ``created_at``, then smallest id). Closed records
    (superseded, deleted, evicted: history) never count.

    With both weights 0 that is oldest-first. The ids evicted are also deleted from each
    namespace of ``also_from`` (an index kept beside the records), in the same transaction.

    ``close=True`` keeps what it evicts as history: each victim's ``valid_to`` is set to
    now with ``closed_reason="evicted"`` instead of being deleted. ``keep_closed`` bounds
    that history: the closed records beyond it, earliest ``valid_to`` first, are deleted.
    """

    namespace: str
    keep: int
    recency_weight: float = 0.0
    importance_weight: float = 0.0
    half_life_days: float = 30.0
    also_from: tuple[str, ...] = ()
    close: bool = False
    keep_closed: int | None = None


def retention(cap: Cap, record: Record, now: float) -> float:
    """``cap``'s retention score of ``record`` at ``now``; the SQL backends compute the same:
    ``rw·0.5^(age_days / half_life) + iw·importance`` with age from the later of
    ``created_at`` and ``last_accessed_at`` (never negative)."""
    anchor = max(record.created_at, record.last_accessed_at or record.created_at)
    age_days = max(0.0, now - anchor) / DAY_S
    decay = float(0.5 ** (age_days / cap.half_life_days))
    return cap.recency_weight * decay + cap.importance_weight * float(record.importance)


Stamp = tuple[float, float | None, str]
"""What tells two versions of a record apart: its ``updated_at``, ``valid_to`` and
``text``. A writer stamps every write with its clock, a new value changes the text (so
two writes at one clock reading, of a coarse or a manual clock, still differ when the
value does), closing a record (a cap's eviction) sets ``valid_to``. Touches
(``last_accessed_at``) change no stamp."""


def stamp(record: Record) -> Stamp:
    """The record's ``Stamp``."""
    return (record.updated_at, record.valid_to, record.text)


@dataclass(frozen=True, kw_only=True)
class Expect:
    """A condition of a write, checked inside its transaction: the record ``id`` of
    ``namespace`` is as the writer read it (expired records included): absent when
    ``seen`` is None, else with ``seen``'s ``stamp``. When it is not, the whole write is
    refused with ``WriteConflict`` and nothing of it is applied: read again, retry."""

    namespace: str
    id: str
    seen: Record | None


@dataclass(frozen=True, kw_only=True)
class WriteBatch:
    """One transaction: expectations and claims checked, then upserts, deletes, and
    caps, in that order."""

    upserts: list[Record] = field(default_factory=list)
    deletes: list[tuple[str, list[str]]] = field(default_factory=list)
    caps: list[Cap] = field(default_factory=list)
    claims: dict[str, ModelClaim] = field(default_factory=dict)
    expect: list[Expect] = field(default_factory=list)
    now: float


@dataclass(frozen=True, kw_only=True)
class WriteResult:
    deleted: int = 0
    """How many of ``deletes`` existed."""
    evicted: dict[str, list[str]] = field(default_factory=dict)
    """Per capped namespace, the ids its cap evicted."""


Accept = Callable[[NamespaceInfo], None]
"""Called by ``Backend.gather`` with the namespace's info before it searches by vector;
raises to refuse the query (another dimension or model)."""


@dataclass(frozen=True, kw_only=True)
class Gathered:
    """One namespace's hybrid candidates, read in one snapshot (``Backend.gather``)."""

    matched: builtins.list[Ranked]
    """The best keyword matches, best first."""
    nearest: builtins.list[Ranked]
    """The nearest records by cosine, best first."""
    cosines: dict[str, float]
    """The cosine with the query of each matched id that has an embedding."""
    records: dict[str, Record]
    """The records of ``matched`` and ``nearest`` by id (those visible at ``now``). They
    may be the backend's own objects: read them, never change them."""


@dataclass(frozen=True, kw_only=True)
class Page:
    limit: int
    offset: int
    order: Order
    after: tuple[float, str] | None = None
    """Keyset paging: the order key (``created_at``, or ``updated_at`` for
    ``updated_desc``) and id of the last record of the previous page; the page starts
    right after it (then skips ``offset``), so rows written meanwhile never shift it."""


class Backend(Protocol):
    """A storage engine. Calls from several threads may arrive at once.

    Reads hide records whose ``expires_at`` is at or before ``now`` unless
    ``wanted.include_expired``. Nothing of one namespace is seen from another. In every
    ranked answer (searches, ``list``) exact ties are ordered by id ascending, in code
    point order, also at the ``k`` boundary: of the records tied with the last one kept,
    those with the smallest ids are kept (an approximate index may miss some of them).
    """

    def setup(self, now: float) -> None:
        """Create or migrate the schema; safe to call any number of times."""
        ...

    def close(self) -> None: ...

    def ping(self) -> None:
        """Return if the store answers; ``StoreUnavailable`` if not, within about a
        second (a server's ``/healthz`` asks)."""
        ...

    def write(self, batch: WriteBatch) -> WriteResult:
        """Apply ``batch`` all or nothing; ``check_expected`` and ``check_claims`` run
        inside the transaction, before anything changes, and see every write committed
        before it by any process (the expected records' namespaces are locked, or the
        whole store is)."""
        ...

    def get(
        self, namespace: str, ids: Sequence[str], now: float, *, expired: bool = False
    ) -> builtins.list[Record]:
        """The unexpired records (all with ``expired``) with these distinct ids, any order."""
        ...

    def list(
        self, namespace: str, wanted: Filter, page: Page, now: float
    ) -> builtins.list[Record]: ...

    def count(self, namespace: str, wanted: Filter, now: float) -> int: ...

    def vector_search(
        self, namespace: str, query: Vector, k: int, wanted: Filter, now: float
    ) -> builtins.list[Ranked]:
        """The ids and cosines of the ``k`` nearest, best first; ``query`` has unit
        length and the namespace's dim. Rows are fetched after, by ``get``."""
        ...

    def nearest(
        self, namespace: str, queries: Matrix, now: float
    ) -> builtins.list[tuple[str, float] | None]:
        """For each unit row of ``queries``, the id and cosine of the nearest unexpired
        embedded record (None in an empty namespace): one pass for a whole batch."""
        ...

    def text_search(
        self, namespace: str, words: Sequence[str], k: int, wanted: Filter, now: float
    ) -> builtins.list[Ranked]:
        """The ids and scores of the ``k`` best keyword matches of any of ``words``
        (non-empty), best first."""
        ...

    def gather(
        self,
        namespace: str,
        words: Sequence[str],
        query: Vector | None,
        k: int,
        wanted: Filter,
        now: float,
        accept: Accept,
    ) -> Gathered:
        """``text_search`` for ``words`` (none: skip it) and ``vector_search`` for
        ``query`` (None: skip it; ``accept`` sees the namespace's info first), the cosines
        of the keyword matches, and the records of both: one read, one snapshot. Records
        are fetched as by ``get`` (expired ones with ``wanted.include_expired``)."""
        ...

    def touch(self, namespace: str, ids: Sequence[str], at: float) -> None: ...

    def namespaces(self, prefix: str, now: float) -> builtins.list[str]:
        """Sorted namespaces starting with ``prefix`` that hold an unexpired record."""
        ...

    def namespace_info(self, namespace: str) -> NamespaceInfo | None: ...

    def ready(self, namespace: str) -> bool:
        """Whether the namespace's search indexes are built (see ``RecordStore.ready``)."""
        ...

    def delete_namespace(self, namespace: str) -> int:
        """Delete the namespace's records and its info; return how many records."""
        ...

    def rename_namespace(self, old: str, new: str) -> int:
        """Move every record (and the info) of ``old`` to the empty ``new``."""
        ...

    def replace_namespace(self, copy: str, namespace: str) -> int:
        """In one transaction, if ``copy`` holds the records ``namespace`` holds (the same
        ids with the same ``stamp``), ``namespace``'s records and info go and ``copy``'s
        take its name; return how many moved. Otherwise ``WriteConflict``, nothing changed."""
        ...

    def prune_expired(self, now: float) -> int: ...


def check_claims(
    claims: dict[str, ModelClaim], stored: dict[str, NamespaceInfo | None]
) -> dict[str, NamespaceInfo]:
    """Refuse a write whose embeddings differ in size or model from a namespace's; return
    the info each namespace has after the write (only those that change)."""
    changed: dict[str, NamespaceInfo] = {}
    for namespace, claim in claims.items():
        info = stored.get(namespace)
        if info is not None and claim.model_id and info.model_id:
            check_model(namespace, info, claim.model_id)  # first: it names the fix
        if info is not None and info.dim != claim.dim:
            raise InvalidInput(
                f"{claim.field} has {claim.dim} dimensions but namespace {namespace!r} holds "
                f"{info.dim}-dimension embeddings; embed with the same model, "
                "or delete the namespace first.",
                field=claim.field,
            )
        if info is None or (claim.model_id and not info.model_id):
            changed[namespace] = NamespaceInfo(dim=claim.dim, model_id=claim.model_id)
    return changed


def expected_ids(expect: Sequence[Expect]) -> dict[str, builtins.list[str]]:
    """The ids of ``expect`` by namespace: the rows a backend reads to check them."""
    out: dict[str, builtins.list[str]] = {}
    for condition in expect:
        out.setdefault(condition.namespace, []).append(condition.id)
    return out


def check_expected(expect: Sequence[Expect], stored: dict[tuple[str, str], Stamp]) -> None:
    """Refuse a write with ``WriteConflict`` when a record it expects differs from the
    stored one; ``stored`` holds the stamp of each expected record that exists, by
    ``(namespace, id)``, read inside the write's transaction."""
    for condition in expect:
        held = stored.get((condition.namespace, condition.id))
        if held != (None if condition.seen is None else stamp(condition.seen)):
            raise WriteConflict(
                f"record {condition.id!r} of namespace {condition.namespace!r} changed since "
                "it was read (another writer came first); nothing was written: read it "
                "again and retry."
            )


def check_same_records(
    copy: str, namespace: str, held: dict[str, Stamp], stored: dict[str, Stamp]
) -> None:
    """Refuse to put ``copy`` in the place of ``namespace`` (``replace_namespace``) when it
    does not hold the same records, read inside the transaction: a writer changed the
    namespace after it was copied, and its change would be lost with it."""
    if held != stored:
        changed = sorted(
            held.keys() ^ stored.keys() | {i for i in held if held[i] != stored.get(i)}
        )
        raise WriteConflict(
            f"namespace {namespace!r} changed since {copy!r} copied it (records "
            f"{changed[:3]!r}); nothing was replaced: copy the changes and retry."
        )


def candidate_ids(matched: Sequence[Ranked], nearest: Sequence[Ranked]) -> builtins.list[str]:
    """The ids of both, each once, keyword matches first: the records a gather reads."""
    return builtins.list(dict.fromkeys([id for id, _ in matched] + [id for id, _ in nearest]))


def gather_apart(
    backend: Backend,
    namespace: str,
    words: Sequence[str],
    query: Vector | None,
    k: int,
    wanted: Filter,
    now: float,
    accept: Accept,
) -> Gathered:
    """``Backend.gather`` from the backend's other reads, one after the other (for a
    backend whose reads cannot share a snapshot cheaply): cosines from the records'
    embeddings."""
    matched = backend.text_search(namespace, words, k, wanted, now) if words else []
    nearest: builtins.list[Ranked] = []
    if query is not None:
        info = backend.namespace_info(namespace)
        if info is not None:
            accept(info)
            nearest = backend.vector_search(namespace, query, k, wanted, now)
    ids = candidate_ids(matched, nearest)
    found = backend.get(namespace, ids, now, expired=wanted.include_expired) if ids else []
    records = {r.id: r for r in found}
    cosines = {} if query is None else matched_cosines(matched, records, query)
    return Gathered(matched=matched, nearest=nearest, cosines=cosines, records=records)


def matched_cosines(
    matched: Sequence[Ranked], records: dict[str, Record], query: Vector
) -> dict[str, float]:
    """The cosine with ``query`` of each keyword match whose record has an embedding."""
    vectors = {id: records[id].embedding for id, _ in matched if id in records}
    embedded = {id: v for id, v in vectors.items() if v is not None}
    if not embedded:
        return {}
    matrix = np.stack(builtins.list(embedded.values())).astype(np.float32)
    norms = np.linalg.norm(matrix, axis=1)
    dots = np.clip((matrix @ query) / np.where(norms > 0, norms, 1.0), -1.0, 1.0)
    return dict(zip(embedded, dots.tolist(), strict=True))


def check_model(namespace: str, info: NamespaceInfo, model_id: str) -> None:
    """A namespace's vectors are comparable only with vectors of the same model: a
    namespace never mixes two, so a switched model is refused until it is re-embedded."""
    if info.model_id and info.model_id != model_id:
        raise ConfigError(
            f"namespace {namespace!r} holds embeddings of model {info.model_id!r}, not "
            f"{model_id!r}; embed it again with the new model (`memstack memories "
            f"reembed`, then restart with it), or go back to the {info.model_id!r} embedder."
        )
