"""RecordStore: records scoped by namespace, searched by vector, keywords and filters.

One concrete class above every storage engine: it validates each argument once (an
``InvalidInput`` naming the field; a rejected call changes nothing), reads the clock,
and hands the checked values to a ``Backend`` (``backend.py``): in process memory,
SQLite (the default) or PostgreSQL. Convenience written once lives here too.
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping, Sequence

import numpy.typing as npt

from memstack.clock import Clock, SystemClock
from memstack.errors import InvalidInput, NotFound
from memstack.storage import _validate as check
from memstack.storage._text import query_words
from memstack.storage._vectors import normalized, unit
from memstack.storage.backend import (
    Backend,
    Cap,
    Expect,
    Gathered,
    ModelClaim,
    NamespaceInfo,
    Page,
    Ranked,
    WriteBatch,
    WriteResult,
    check_model,
)
from memstack.storage.namespace import Namespace
from memstack.storage.types import Filter, Order, Record, ScoredRecord

__all__ = ["NamespaceLike", "RecordStore", "get_one"]

NamespaceLike = Namespace | str
"""A ``Namespace``, or its encoded string (any non-empty string of at most 1 kB)."""


class RecordStore:
    """Records scoped by namespace, searched by vector, by keywords and by filters.

    Safe to call from several threads at once. Reads hide expired records
    (``expires_at`` at or before the clock's now) unless ``Filter(include_expired=True)``.
    A record in one namespace is never returned by a call on another. Writes that pass
    ``model_id`` record which embedding model a namespace's vectors come from; a later
    write or search with another model is a ``ConfigError`` naming both.
    """

    def __init__(self, backend: Backend, *, clock: Clock | None = None) -> None:
        self.backend = backend
        self.clock: Clock = clock if clock is not None else SystemClock()

    def setup(self) -> None:
        """Create or migrate the schema; safe to call any number of times."""
        self.backend.setup(self.clock.now())
        _migrate_legacy_namespaces(self.backend, self.clock.now())

    def close(self) -> None:
        """Release connections (and a pool the store opened itself)."""
        self.backend.close()

    def ping(self) -> None:
        """Return if the store answers; raise ``StoreUnavailable`` saying why if not,
        within about a second."""
        self.backend.ping()

    # -- writes -------------------------------------------------------------------

    def upsert(self, records: Sequence[Record], *, model_id: str | None = None) -> None:
        """Insert each record, or replace the one with the same ``(namespace, id)``.

        All or nothing. Within one namespace every embedding has one dimension (and,
        when ``model_id`` is given, one model). If a batch repeats a key, the last wins.
        """
        self.write(upserts=records, model_id=model_id)

    def write(
        self,
        *,
        upserts: Sequence[Record] = (),
        deletes: Mapping[NamespaceLike, Sequence[str]] | None = None,
        caps: Sequence[Cap] = (),
        model_id: str | None = None,
        expect: Sequence[Expect] = (),
    ) -> WriteResult:
        """Upserts, then deletes, then caps (evicting beyond each), in one transaction.

        With ``expect``, only if each expected record is still as it was read (see
        ``Expect``); otherwise ``WriteConflict`` and nothing is written: read again and
        retry. That makes a read-then-write safe with any number of writers."""
        batch = check.check_batch(upserts)
        model = None if model_id is None else check.check_key(model_id, "model_id")
        removals = [(_name(ns), check.check_ids(ids)) for ns, ids in (deletes or {}).items()]
        checked_caps = [_checked_cap(cap) for cap in caps]
        expected = _checked_expect(expect)
        if (
            not batch.records
            and not any(ids for _, ids in removals)
            and not checked_caps
            and not expected
        ):
            return WriteResult()
        claims = {
            ns: ModelClaim(dim=dim, model_id=model, field=field)
            for ns, (dim, field) in batch.dims.items()
        }
        return self.backend.write(
            WriteBatch(
                upserts=batch.records,
                deletes=[(ns, ids) for ns, ids in removals if ids],
                caps=checked_caps,
                claims=claims,
                expect=expected,
                now=self.clock.now(),
            )
        )

    def delete(self, namespace: NamespaceLike, ids: Sequence[str]) -> int:
        """Delete these records (expired ones too); return how many existed."""
        return self.write(deletes={namespace: ids}).deleted

    def delete_namespace(self, namespace: NamespaceLike) -> int:
        """Delete every record of ``namespace``; return how many there were."""
        return self.backend.delete_namespace(_name(namespace))

    def rename_namespace(self, old: NamespaceLike, new: NamespaceLike) -> int:
        """Move every record of ``old``, and its embeddings' model, to ``new``, which must
        hold none (delete it first); return how many moved."""
        return self.backend.rename_namespace(_name(old), _name(new))

    def replace_namespace(self, copy: NamespaceLike, namespace: NamespaceLike) -> int:
        """``copy`` takes the place of ``namespace`` in one transaction, only if it holds
        the same records (same ids, same ``stamp``: a copy with other vectors); else
        ``WriteConflict`` and nothing changes. Returns how many records moved."""
        return self.backend.replace_namespace(_name(copy), _name(namespace))

    def touch(self, namespace: NamespaceLike, ids: Sequence[str], at: float) -> None:
        """Set ``last_accessed_at`` of these records to ``at``; unknown ids are ignored."""
        name = _name(namespace)
        wanted = check.check_ids(ids)
        moment = check.check_time(at, "at")
        if wanted:
            self.backend.touch(name, wanted, moment)

    def prune_expired(self, now: float) -> int:
        """Delete, in every namespace, records with ``expires_at <= now``; return how many."""
        return self.backend.prune_expired(check.check_time(now, "now"))

    # -- reads --------------------------------------------------------------------

    def get(self, namespace: NamespaceLike, ids: Sequence[str]) -> builtins.list[Record]:
        """The unexpired records with these ids, in the order asked, without repeats;
        closed versions too (asking by id is asking for that version)."""
        name = _name(namespace)
        wanted = check.check_ids(ids)
        if not wanted:
            return []
        found = {r.id: r for r in self.backend.get(name, wanted, self.clock.now())}
        return [found[i] for i in wanted if i in found]

    def list(
        self,
        namespace: NamespaceLike,
        *,
        filter: Filter | None = None,
        limit: int = 100,
        offset: int = 0,
        order: Order = "created_desc",
        after: tuple[float, str] | None = None,
    ) -> builtins.list[Record]:
        """A page of records; ``limit`` is 1..10000, ``offset`` 0..2^62. ``after``: the
        order key (``created_at``, or ``updated_at`` for ``updated_desc``) and id of the
        last record of the previous page, to start right after it (keyset paging: at any
        depth, and records written meanwhile before it never shift the page)."""
        name = _name(namespace)
        wanted = check.check_filter(filter)
        page = Page(
            limit=check.check_positive(limit, "limit"),
            offset=check.check_offset(offset),
            order=check.check_order(order),
            after=None if after is None else check.check_after(after),
        )
        return self.backend.list(name, wanted, page, self.clock.now())

    def count(self, namespace: NamespaceLike, filter: Filter | None = None) -> int:
        """How many records ``list`` would page through."""
        return self.backend.count(_name(namespace), check.check_filter(filter), self.clock.now())

    def vector_search(
        self,
        namespace: NamespaceLike,
        vector: npt.ArrayLike,
        *,
        k: int,
        filter: Filter | None = None,
        model_id: str | None = None,
    ) -> builtins.list[ScoredRecord]:
        """The ``k`` records nearest ``vector``, scored by cosine, best first.

        Records without an embedding are ignored. A namespace with no embeddings yields
        ``[]``; a vector of another dimension than the namespace's is ``InvalidInput``,
        and a ``model_id`` other than the namespace's is ``ConfigError``.
        """
        ranked = self.vector_ids(namespace, vector, k=k, filter=filter, model_id=model_id)
        return self._fetched(namespace, ranked, filter)

    def vector_ids(
        self,
        namespace: NamespaceLike,
        vector: npt.ArrayLike,
        *,
        k: int,
        filter: Filter | None = None,
        model_id: str | None = None,
    ) -> builtins.list[Ranked]:
        """``vector_search`` without fetching the records: ``(id, cosine)`` pairs."""
        name = _name(namespace)
        k = check.check_positive(k, "k")
        wanted = check.check_filter(filter)
        query = check.check_vector(vector, "vector")
        info = self.backend.namespace_info(name)
        if info is None:
            return []
        if model_id is not None:
            check_model(name, info, check.check_key(model_id, "model_id"))
        check.check_query_dim(query, info.dim)
        return self.backend.vector_search(name, unit(query), k, wanted, self.clock.now())

    def nearest(
        self,
        namespace: NamespaceLike,
        vectors: npt.ArrayLike,
        *,
        model_id: str | None = None,
    ) -> builtins.list[tuple[str, float] | None]:
        """For each row of ``vectors`` (an ``(m, dim)`` matrix), the id and cosine of the
        nearest unexpired embedded record, or None when the namespace has no embedding.
        One pass over the namespace for the whole batch (near-duplicate checks)."""
        name = _name(namespace)
        matrix = check.check_matrix(vectors, "vectors")
        info = self.backend.namespace_info(name)
        if info is None or matrix.shape[0] == 0:
            return [None] * matrix.shape[0]
        if model_id is not None:
            check_model(name, info, check.check_key(model_id, "model_id"))
        check.check_query_dim(matrix[0], info.dim)
        return self.backend.nearest(name, normalized(matrix), self.clock.now())

    def text_search(
        self,
        namespace: NamespaceLike,
        query: str,
        *,
        k: int,
        filter: Filter | None = None,
    ) -> builtins.list[ScoredRecord]:
        """The ``k`` records most relevant to the words of ``query``, best first.

        ``query`` is plain user text: any word may match (OR semantics), operators and
        punctuation have no meaning, and a query without words yields ``[]``.
        """
        return self._fetched(namespace, self.text_ids(namespace, query, k=k, filter=filter), filter)

    def text_ids(
        self,
        namespace: NamespaceLike,
        query: str,
        *,
        k: int,
        filter: Filter | None = None,
    ) -> builtins.list[Ranked]:
        """``text_search`` without fetching the records: ``(id, keyword score)`` pairs."""
        name = _name(namespace)
        words = query_words(check.check_query(query))
        k = check.check_positive(k, "k")
        wanted = check.check_filter(filter)
        if not words:
            return []
        return self.backend.text_search(name, words, k, wanted, self.clock.now())

    def gather(
        self,
        namespace: NamespaceLike,
        *,
        query: str | None,
        vector: npt.ArrayLike | None,
        k: int,
        filter: Filter | None = None,
        model_id: str | None = None,
    ) -> Gathered:
        """``text_ids`` for ``query`` (None: no keyword half) and ``vector_ids`` for
        ``vector`` (None: no vector half), the cosine of each keyword match, and the
        records of both, read in one snapshot: a hybrid search's candidates. The records
        may be the store's own objects (``Gathered.records``): copy one before changing
        its metadata."""
        name = _name(namespace)
        k = check.check_positive(k, "k")
        wanted = check.check_filter(filter)
        words = [] if query is None else query_words(check.check_query(query))
        model = None if model_id is None else check.check_key(model_id, "model_id")
        checked = None if vector is None else check.check_vector(vector, "vector")

        def accept(info: NamespaceInfo) -> None:  # the backend calls it only with a vector
            assert checked is not None
            if model is not None:
                check_model(name, info, model)  # first: it names the fix
            check.check_query_dim(checked, info.dim)

        query_unit = None if checked is None else unit(checked)
        return self.backend.gather(name, words, query_unit, k, wanted, self.clock.now(), accept)

    def fetch(
        self, namespace: NamespaceLike, ids: Sequence[str], filter: Filter | None = None
    ) -> dict[str, Record]:
        """The records of these ids by id, in one read; expired ones only when
        ``filter.include_expired`` (for hits of a search that included them)."""
        name = _name(namespace)
        wanted = check.check_ids(ids)
        expired = filter is not None and bool(filter.include_expired)
        if not wanted:
            return {}
        rows = self.backend.get(name, wanted, self.clock.now(), expired=expired)
        return {r.id: r for r in rows}

    def _fetched(
        self, namespace: NamespaceLike, ranked: builtins.list[Ranked], filter: Filter | None
    ) -> builtins.list[ScoredRecord]:
        """The ranked hits with their records, in rank order (one fetch for all)."""
        found = self.fetch(namespace, [id for id, _ in ranked], filter)
        return [ScoredRecord(record=found[id], score=s) for id, s in ranked if id in found]

    def namespaces(self, prefix: str = "") -> builtins.list[str]:
        """Sorted namespaces starting with ``prefix`` that hold an unexpired record."""
        return self.backend.namespaces(check.check_text(prefix, "prefix"), self.clock.now())

    def ready(self, namespace: NamespaceLike) -> bool:
        """Whether searches of ``namespace`` run at full speed. A large namespace builds
        its vector index in the background after it is loaded (SQLite: from 50k
        memories; PostgreSQL: past ``exact_limit``, and again when it has grown or shrunk
        fourfold, built before a bulk write returns, see ``PostgresBackend``); until then
        searches scan exactly (same results, slower). Starts a
        build when one is due; poll it to wait, e.g. after a bulk load. On PostgreSQL it
        also analyzes the table when a load left the planner's statistics stale
        (searches then picked slow plans until autovacuum came by)."""
        return self.backend.ready(_name(namespace))

    def namespace_info(self, namespace: NamespaceLike) -> NamespaceInfo | None:
        """The dimension and model of the namespace's embeddings; None before the first."""
        return self.backend.namespace_info(_name(namespace))


def get_one(store: RecordStore, namespace: NamespaceLike, id: str) -> Record:
    """The record ``id`` of ``namespace``, or ``NotFound``."""
    found = store.get(namespace, [id])
    if not found:
        raise NotFound(f"no record {id!r} in namespace {str(namespace)!r}.", field="id")
    return found[0]


def _name(namespace: object) -> str:
    if isinstance(namespace, Namespace):
        return namespace.encode()
    return check.check_namespace(namespace)


def _checked_cap(cap: object) -> Cap:
    if not isinstance(cap, Cap):
        raise InvalidInput(f"caps must hold Cap values; got {type(cap).__name__}.", field="caps")
    keep = cap.keep
    if isinstance(keep, bool) or not isinstance(keep, int) or keep < 0:
        raise InvalidInput(f"cap.keep must be an int >= 0; got {keep!r}.", field="cap.keep")
    half_life = check.check_number(cap.half_life_days, "cap.half_life_days")
    if half_life <= 0:
        raise InvalidInput("cap.half_life_days must be > 0.", field="cap.half_life_days")
    keep_closed = cap.keep_closed
    if keep_closed is not None and (
        isinstance(keep_closed, bool) or not isinstance(keep_closed, int) or keep_closed < 0
    ):
        raise InvalidInput(
            f"cap.keep_closed must be an int >= 0 or None; got {keep_closed!r}.",
            field="cap.keep_closed",
        )
    return Cap(
        namespace=_name(cap.namespace),
        close=bool(cap.close),
        keep_closed=keep_closed,
        keep=keep,
        recency_weight=check.check_number(cap.recency_weight, "cap.recency_weight"),
        importance_weight=check.check_number(cap.importance_weight, "cap.importance_weight"),
        half_life_days=half_life,
        also_from=tuple(_name(ns) for ns in cap.also_from),
    )


def _checked_expect(expect: object) -> builtins.list[Expect]:
    """The expectations, checked: each names a namespace and an id, and holds the record
    read with that id (or None)."""
    if isinstance(expect, str | bytes) or not isinstance(expect, Sequence):
        raise InvalidInput("expect must be a list of Expect values.", field="expect")
    out: builtins.list[Expect] = []
    for condition in expect:
        if not isinstance(condition, Expect):
            raise InvalidInput(
                f"expect must hold Expect values; got {type(condition).__name__}.", field="expect"
            )
        id = check.check_key(condition.id, "expect.id")
        seen = condition.seen
        if seen is not None and (not isinstance(seen, Record) or seen.id != id):
            raise InvalidInput(
                f"expect.seen must be the record {id!r} as it was read, or None when there "
                "was none.",
                field="expect.seen",
            )
        out.append(Expect(namespace=_name(condition.namespace), id=id, seen=seen))
    return out


def _migrate_legacy_namespaces(backend: Backend, now: float) -> None:
    """Long-term memory collections were named ``ltm_<user>_<namespace>[:<workspace>]``
    before namespaces had one encoder; move each to its ``ltm/...`` name."""
    from memstack.storage._legacy import legacy_ltm_namespace

    for old in backend.namespaces("ltm_", now):
        new = legacy_ltm_namespace(old)
        if new is not None and not backend.count(new, Filter(include_expired=True), now):
            backend.rename_namespace(old, new)
