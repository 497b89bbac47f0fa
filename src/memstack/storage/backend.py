"""The narrow protocol a storage engine implements, and the checked values it receives.

``RecordStore`` (``base.py``) validates every argument once and hands a backend only
checked values: namespaces as encoded strings, deduplicated id lists, checked records,
unit query vectors, query words, the clock's ``now``. A backend never re-validates; it
stores, selects and ranks. Writes are batch-shaped: one ``WriteBatch`` (upserts,
deletes, caps with their evictions, model claims) is one transaction.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final, Protocol

import numpy as np
import numpy.typing as npt

from memstack.errors import ConfigError, InvalidInput
from memstack.storage.types import Filter, Order, Record, Vector

__all__ = [
    "DAY_S",
    "Backend",
    "Cap",
    "Matrix",
    "ModelClaim",
    "NamespaceInfo",
    "Page",
    "Ranked",
    "WriteBatch",
    "WriteResult",
    "check_claims",
    "retention",
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


@dataclass(frozen=True, kw_only=True)
class WriteBatch:
    """One transaction: claims checked, then upserts, deletes, and caps, in that order."""

    upserts: list[Record] = field(default_factory=list)
    deletes: list[tuple[str, list[str]]] = field(default_factory=list)
    caps: list[Cap] = field(default_factory=list)
    claims: dict[str, ModelClaim] = field(default_factory=dict)
    now: float


@dataclass(frozen=True, kw_only=True)
class WriteResult:
    deleted: int = 0
    """How many of ``deletes`` existed."""
    evicted: dict[str, list[str]] = field(default_factory=dict)
    """Per capped namespace, the ids its cap evicted."""


@dataclass(frozen=True, kw_only=True)
class Page:
    limit: int
    offset: int
    order: Order


class Backend(Protocol):
    """A storage engine. Calls from several threads may arrive at once.

    Reads hide records whose ``expires_at`` is at or before ``now`` unless
    ``wanted.include_expired``. Nothing of one namespace is seen from another.
    """

    def setup(self, now: float) -> None:
        """Create or migrate the schema; safe to call any number of times."""
        ...

    def close(self) -> None: ...

    def write(self, batch: WriteBatch) -> WriteResult:
        """Apply ``batch`` all or nothing; ``check_claims`` runs inside the transaction."""
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

    def prune_expired(self, now: float) -> int: ...


def check_claims(
    claims: dict[str, ModelClaim], stored: dict[str, NamespaceInfo | None]
) -> dict[str, NamespaceInfo]:
    """Refuse a write whose embeddings differ in size or model from a namespace's; return
    the info each namespace has after the write (only those that change)."""
    changed: dict[str, NamespaceInfo] = {}
    for namespace, claim in claims.items():
        info = stored.get(namespace)
        if info is not None and info.dim != claim.dim:
            raise InvalidInput(
                f"{claim.field} has {claim.dim} dimensions but namespace {namespace!r} holds "
                f"{info.dim}-dimension embeddings; embed with the same model, "
                "or delete the namespace first.",
                field=claim.field,
            )
        if info is not None and claim.model_id and info.model_id:
            check_model(namespace, info, claim.model_id)
        if info is None or (claim.model_id and not info.model_id):
            changed[namespace] = NamespaceInfo(dim=claim.dim, model_id=claim.model_id)
    return changed


def check_model(namespace: str, info: NamespaceInfo, model_id: str) -> None:
    """A namespace's vectors are comparable only with vectors of the same model."""
    if info.model_id and info.model_id != model_id:
        raise ConfigError(
            f"namespace {namespace!r} holds embeddings of model {info.model_id!r}, not "
            f"{model_id!r}; use the {info.model_id!r} embedder for it, or store this "
            "model's vectors in another namespace (or delete this one first)."
        )
