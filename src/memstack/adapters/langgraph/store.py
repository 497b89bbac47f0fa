"""MemstackStore: LangGraph's ``BaseStore`` on a memstack ``RecordStore``.

Every LangGraph store call arrives as a batch of ops; reads of a batch see the store as it
was before the batch, then its puts and deletes are written in one transaction (the last
op on a key wins). Items live under the ``lg`` namespace root, one memstack namespace per
LangGraph namespace, and their field vectors under ``lgv`` (``_vectors.py``), so SQLite,
PostgreSQL or process memory hold them, and the same database serves memstack's other
memories.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchOp,
    TTLConfig,
)
from langgraph.store.base import validate_op_namespace as _check_labels

from memstack.errors import InvalidInput
from memstack.secrets import refuse_secrets
from memstack.storage import NamespaceLike, Record, RecordStore, open_record_store

from . import _plan
from . import _values as v
from ._config import indexing
from ._search import Searcher
from ._ttl import DEFAULT_INTERVAL_MINUTES, Sweeper
from ._vectors import INDEXED, vector_namespace, vector_records, vectors_of

__all__ = ["MemstackStore"]

Key = tuple[tuple[str, ...], str]


class MemstackStore(BaseStore):
    """LangGraph long-term memory kept by memstack.

    ``index`` is LangGraph's ``IndexConfig``: ``embed`` (a LangChain ``Embeddings``, a
    sync or async function from texts to vectors, or a memstack ``Embedder`` such as
    ``LocalEmbedder()``), ``dims`` and ``fields`` (paths such as ``"text"`` or
    ``"items[*].name"``; ``"$"``, the default, is the whole value as JSON). Each text a
    field holds gets its own vector and a search scores an item by its best one;
    ``put(..., index=[...])`` overrides the fields per item and ``index=False`` stores no
    vector. ``embedder=`` and ``fields=`` say the same as keywords. Without an embedder a
    query ranks by keyword relevance. ``name`` keeps the items of several stores apart in
    one database. TTLs are in minutes and restart when an item is read (unless
    ``refresh_ttl=False``); expired items are never returned, and ``sweep_ttl`` or the
    sweeper thread (``start_ttl_sweeper``) deletes them. ``loop`` is the event loop the
    store serves async code on (``afrom_url`` sets it): a sync call made on that loop
    raises ``asyncio.InvalidStateError``, as LangGraph's async stores do, instead of
    blocking it.
    """

    supports_ttl = True

    def __init__(
        self,
        records: RecordStore,
        *,
        embedder: object | None = None,
        fields: Sequence[str] = ("$",),
        name: str = "default",
        ttl: TTLConfig | None = None,
        index: IndexConfig | Mapping[str, Any] | None = None,
        loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        settings = indexing(index, embedder, fields)
        refuse_secrets({"name": name}, where="the LangGraph store")
        self.records = records
        self.embedder = embedder if index is None else index["embed"]
        self.embeddings = None if settings.embedder is None else settings.embedder.embeddings
        self.index_config = settings.config
        self.name = v.to_namespace(name, ()).parts[0]
        self.ttl_config = ttl
        self._embedder = settings.embedder
        self._paths = settings.paths
        self._model_id = None if settings.embedder is None else settings.embedder.model_id
        self._searcher = Searcher(records=records, name=self.name, model_id=self._model_id)
        self._sweeper = Sweeper(self.sweep_ttl)
        self._loop = loop
        self._owned = False

    @classmethod
    def from_url(cls, url: str, **options: Any) -> MemstackStore:
        """A store on ``open_record_store(url)`` (e.g. ``sqlite:///memory.db``), set up;
        ``close()`` closes it. ``options`` are the constructor's keywords."""
        records = open_record_store(url)
        records.setup()
        store = cls(records, **options)
        store._owned = True
        return store

    @classmethod
    async def afrom_url(cls, url: str, **options: Any) -> MemstackStore:
        """``from_url`` for async code: the store serves the running event loop, and a
        sync call made on that loop raises ``asyncio.InvalidStateError`` (it would block
        the loop) as LangGraph's async stores do; use ``await store.aget(...)`` there."""
        loop = asyncio.get_running_loop()
        return await asyncio.to_thread(cls.from_url, url, loop=loop, **options)

    def close(self) -> None:
        """Stop the TTL sweeper; close the record store if ``from_url`` opened it."""
        self._sweeper.stop()
        if self._owned:
            self.records.close()

    # -- the two methods LangGraph's BaseStore builds everything on ----------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        self._refuse_on_loop()
        todo = _checked(ops)
        planned = _plan.plan(todo, self._paths, self._embedder)
        return self._run(todo, planned, _plan.embed(planned, self._embedder))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        todo = _checked(ops)
        planned = _plan.plan(todo, self._paths, self._embedder)
        embedded = await _plan.aembed(planned, self._embedder)
        return await asyncio.to_thread(self._run, todo, planned, embedded)

    def _refuse_on_loop(self) -> None:
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            return
        if running is self._loop:
            raise asyncio.InvalidStateError(
                "Synchronous calls to a MemstackStore opened with afrom_url are only allowed "
                "from another thread; on its event loop use the async methods, e.g. "
                "`await store.aget(...)` or `await store.abatch(...)`."
            )

    def _run(self, todo: list[Op], planned: _plan.Plan, embedded: _plan.Embedded) -> list[Result]:
        results = [self._read(op, embedded) for op in todo]
        self._write(planned, embedded)
        return results

    def _read(self, op: Op, embedded: _plan.Embedded) -> Result:
        if isinstance(op, GetOp):
            return self._get(op)
        if isinstance(op, SearchOp):
            vector = embedded.queries.get(op.query) if op.query else None
            hits = self._searcher.search(op, vector)
            if op.refresh_ttl:
                self._refresh([record for record, _ in hits])
            return [v.to_search_item(record, score) for record, score in hits]
        if isinstance(op, ListNamespacesOp):
            return self._searcher.list_namespaces(op)
        if isinstance(op, PutOp):
            return None
        raise InvalidInput(f"unknown LangGraph op {type(op).__name__}.", field="ops")

    # -- TTL sweeping (LangGraph's SqliteStore / PostgresStore API) -----------------------

    def sweep_ttl(self) -> int:
        """Delete the expired records now; return how many. Expired records of the whole
        database go (an item's field vectors and memstack's other memories too): no read
        returns them, so this frees space and changes no answer."""
        return self.records.prune_expired(self.records.clock.now())

    def start_ttl_sweeper(
        self, sweep_interval_minutes: float | None = None
    ) -> concurrent.futures.Future[None]:
        """Run ``sweep_ttl`` every ``sweep_interval_minutes`` (else the TTL config's
        ``sweep_interval_minutes``, else 5) on a daemon thread. Without a TTL config there
        is nothing to sweep and the future is already done; cancel it to stop."""
        if not self.ttl_config:
            done: concurrent.futures.Future[None] = concurrent.futures.Future()
            done.set_result(None)
            return done
        interval = (
            sweep_interval_minutes
            or self.ttl_config.get("sweep_interval_minutes")
            or DEFAULT_INTERVAL_MINUTES
        )
        return self._sweeper.start(float(interval))

    def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stop the sweeper thread; False if it was still running after ``timeout`` s."""
        return self._sweeper.stop(timeout)

    # -- reads ----------------------------------------------------------------------------

    def _get(self, op: GetOp) -> Item | None:
        found = self.records.get(v.to_namespace(self.name, op.namespace), [op.key])
        if not found:
            return None
        if op.refresh_ttl:
            self._refresh(found)
        return v.to_item(found[0], op.namespace)

    def _refresh(self, items: Sequence[Record]) -> None:
        """Restart the TTL of the items that have one, and of their vectors (its length
        is kept as ``expires_at - last_accessed_at``)."""
        now = self.records.clock.now()
        renewed = {
            (r.namespace, r.id): dataclasses.replace(
                r,
                last_accessed_at=now,
                expires_at=now + r.expires_at - (r.last_accessed_at or r.updated_at),
            )
            for r in items
            if r.expires_at is not None
        }
        if not renewed:
            return
        vectors = [
            dataclasses.replace(  # a vector's kind is its item's key (``_vectors.py``)
                vector,
                last_accessed_at=now,
                expires_at=renewed[(item_ns, vector.kind or "")].expires_at,
            )
            for (item_ns, labels), keys in _by_namespace(renewed.values()).items()
            for vector in vectors_of(self.records, self.name, labels, keys)
        ]
        self.records.write(upserts=[*renewed.values(), *vectors], model_id=self._model_id)

    # -- writes ---------------------------------------------------------------------------

    def _write(self, planned: _plan.Plan, embedded: _plan.Embedded) -> None:
        if not planned.puts and not planned.deletes:
            return
        items = self._items(planned)
        vectors: list[Record] = []
        if embedded.documents:
            for i, (texts, matrix) in enumerate(
                zip(planned.texts, embedded.documents, strict=True)
            ):
                own = vector_records(items[i], texts, matrix)
                if own:
                    items[i] = dataclasses.replace(items[i], kind=INDEXED)
                vectors += own
        self.records.write(
            upserts=[*items, *vectors],
            deletes=self._deletes(planned, {(r.namespace, r.id) for r in vectors}),
            model_id=self._model_id,
        )

    def _items(self, planned: _plan.Plan) -> list[Record]:
        now = self.records.clock.now()
        created = self._created_at(planned.puts)
        return [
            Record(
                id=op.key,
                namespace=v.to_namespace(self.name, op.namespace).encode(),
                text=v.index_text(value, _plan.index_paths(op, self._paths)),
                metadata=value,
                created_at=created.get((op.namespace, op.key), now),
                updated_at=now,
                last_accessed_at=None if op.ttl is None else now,
                expires_at=None if op.ttl is None else now + _ttl_seconds(op.ttl),
            )
            for op, value in zip(planned.puts, planned.values, strict=True)
        ]

    def _deletes(
        self, planned: _plan.Plan, kept: set[tuple[str, str]]
    ) -> dict[NamespaceLike, list[str]]:
        """The deleted items, and the vectors of every written item that no longer has
        them (a put that indexes fewer texts, or none, than before)."""
        out: dict[NamespaceLike, list[str]] = {}
        for op in planned.deletes:
            out.setdefault(v.to_namespace(self.name, op.namespace).encode(), []).append(op.key)
        keys: dict[tuple[str, ...], list[str]] = {}
        for op in [*planned.puts, *planned.deletes]:
            keys.setdefault(op.namespace, []).append(op.key)
        for labels, ids in keys.items():
            encoded = vector_namespace(self.name, labels).encode()
            for old in vectors_of(self.records, self.name, labels, ids):
                if (encoded, old.id) not in kept:
                    out.setdefault(encoded, []).append(old.id)
        return out

    def _created_at(self, puts: list[PutOp]) -> dict[Key, float]:
        """When each item that already exists was first put (an update keeps it)."""
        keys: dict[tuple[str, ...], list[str]] = {}
        for op in puts:
            keys.setdefault(op.namespace, []).append(op.key)
        return {
            (labels, r.id): r.created_at
            for labels, ids in keys.items()
            for r in self.records.get(v.to_namespace(self.name, labels), ids)
        }


def _checked(ops: Iterable[Op]) -> list[Op]:
    todo = list(ops)
    for op in todo:
        _check_labels(op)
    return todo


def _by_namespace(items: Iterable[Record]) -> dict[tuple[str, tuple[str, ...]], list[str]]:
    """The ids of ``items`` by (encoded namespace, LangGraph labels)."""
    out: dict[tuple[str, tuple[str, ...]], list[str]] = {}
    for r in items:
        out.setdefault((r.namespace, v.labels_of(r.namespace)), []).append(r.id)
    return out


def _ttl_seconds(minutes: float) -> float:
    if isinstance(minutes, bool) or not isinstance(minutes, int | float) or not minutes > 0:
        raise InvalidInput(f"ttl is in minutes and must be > 0; got {minutes!r}.", field="ttl")
    return float(minutes) * 60.0
