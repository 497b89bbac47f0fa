"""MemstackStore: LangGraph's ``BaseStore`` on a memstack ``RecordStore``.

Every LangGraph store call arrives as a batch of ops; reads of a batch see the store as it
was before the batch, then its puts and deletes are written in one transaction (the last
op on a key wins). Items live under the ``lg`` namespace root, one memstack namespace per
LangGraph namespace, so SQLite, PostgreSQL or process memory hold them, and the same
database serves memstack's other memories.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Iterable, Sequence
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchOp,
    TTLConfig,
)
from langgraph.store.base import validate_op_namespace as _check_labels

from memstack._json import JSON, to_json
from memstack.embeddings import Embedder
from memstack.errors import InvalidInput
from memstack.secrets import refuse_secrets
from memstack.storage import NamespaceLike, Record, RecordStore, open_record_store

from . import _values as v
from ._search import Searcher

__all__ = ["MemstackStore"]


class MemstackStore(BaseStore):
    """LangGraph long-term memory kept by memstack.

    ``embedder`` (any memstack ``Embedder``, e.g. ``LocalEmbedder()``) makes ``search``
    semantic: each item gets one vector, of the texts at ``fields`` joined (``"$"``, the
    default, is the whole value as JSON; ``put(..., index=[...])`` overrides per item,
    ``index=False`` stores no vector). Without one, a query ranks by keyword relevance.
    ``name`` keeps the items of several stores apart in one database. TTLs are in minutes
    and restart when an item is read (unless ``refresh_ttl=False``); expired items are
    never returned.
    """

    supports_ttl = True

    def __init__(
        self,
        records: RecordStore,
        *,
        embedder: Embedder | None = None,
        fields: Sequence[str] = ("$",),
        name: str = "default",
        ttl: TTLConfig | None = None,
    ) -> None:
        if isinstance(fields, str):
            raise InvalidInput(
                f"fields is the string {fields!r}; pass a list: [{fields!r}].", field="fields"
            )
        refuse_secrets({"name": name}, where="the LangGraph store")
        self.records = records
        self.embedder = embedder
        self.name = v.to_namespace(name, ()).parts[0]
        self.ttl_config = ttl
        self._paths = v.tokenized(list(fields))
        self._searcher = Searcher(records=records, name=self.name, embedder=embedder)
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

    def close(self) -> None:
        """Close the record store if ``from_url`` opened it."""
        if self._owned:
            self.records.close()

    # -- the two methods LangGraph's BaseStore builds everything on ----------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        todo = list(ops)
        for op in todo:
            _check_labels(op)
        results: list[Result] = []
        puts: dict[tuple[tuple[str, ...], str], PutOp] = {}
        for op in todo:
            if isinstance(op, PutOp):
                puts.pop((op.namespace, op.key), None)
                puts[(op.namespace, op.key)] = op
            results.append(self._read(op))
        self._write(list(puts.values()))
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await asyncio.to_thread(self.batch, list(ops))

    def _read(self, op: Op) -> Result:
        if isinstance(op, GetOp):
            return self._get(op)
        if isinstance(op, SearchOp):
            hits = self._searcher.search(op)
            if op.refresh_ttl:
                self._refresh([record for record, _ in hits])
            return [v.to_search_item(record, score) for record, score in hits]
        if isinstance(op, ListNamespacesOp):
            return self._searcher.list_namespaces(op)
        if isinstance(op, PutOp):
            return None
        raise InvalidInput(f"unknown LangGraph op {type(op).__name__}.", field="ops")

    # -- reads ----------------------------------------------------------------------------

    def _get(self, op: GetOp) -> Item | None:
        found = self.records.get(v.to_namespace(self.name, op.namespace), [op.key])
        if not found:
            return None
        if op.refresh_ttl:
            self._refresh(found)
        return v.to_item(found[0], op.namespace)

    def _refresh(self, records: Sequence[Record]) -> None:
        """Restart the TTL of the records that have one (its length is kept as
        ``expires_at - last_accessed_at``)."""
        now = self.records.clock.now()
        renewed = [
            dataclasses.replace(
                r,
                last_accessed_at=now,
                expires_at=now + r.expires_at - (r.last_accessed_at or r.updated_at),
            )
            for r in records
            if r.expires_at is not None
        ]
        if renewed:
            self.records.write(upserts=renewed, model_id=self._model_id)

    # -- writes ---------------------------------------------------------------------------

    def _write(self, puts: list[PutOp]) -> None:
        if not puts:
            return
        deletes: dict[NamespaceLike, list[str]] = {}
        for op in puts:
            if op.value is None:
                deletes.setdefault(v.to_namespace(self.name, op.namespace).encode(), []).append(
                    op.key
                )
        kept = [op for op in puts if op.value is not None]
        for op in kept:  # credentials are never stored, as on every memstack write path
            fields: dict[str, JSON] = {
                "namespace": list(op.namespace),
                "key": op.key,
                "value": _value(op),
            }
            refuse_secrets(fields, where="the LangGraph store")
        self.records.write(upserts=self._records(kept), deletes=deletes, model_id=self._model_id)

    def _records(self, puts: list[PutOp]) -> list[Record]:
        now = self.records.clock.now()
        created = self._created_at(puts)
        values = [_value(op) for op in puts]
        texts = [
            v.index_text(value, self._index_paths(op))
            for op, value in zip(puts, values, strict=True)
        ]
        vectors = self._embed(puts, texts)
        return [
            Record(
                id=op.key,
                namespace=v.to_namespace(self.name, op.namespace).encode(),
                text=text,
                metadata=value,
                created_at=created.get((op.namespace, op.key), now),
                updated_at=now,
                last_accessed_at=None if op.ttl is None else now,
                expires_at=None if op.ttl is None else now + _ttl_seconds(op.ttl),
                embedding=vector,
            )
            for op, value, text, vector in zip(puts, values, texts, vectors, strict=True)
        ]

    def _index_paths(self, op: PutOp) -> list[v.Path]:
        if op.index is False:
            return []
        return self._paths if op.index is None else v.tokenized(op.index)

    def _embed(self, puts: list[PutOp], texts: list[str]) -> list[Any]:
        """One vector per put with text to index (one embedder call for the batch)."""
        if self.embedder is None:
            return [None] * len(puts)
        wanted = [
            i
            for i, (op, text) in enumerate(zip(puts, texts, strict=True))
            if text and op.index is not False
        ]
        vectors: list[Any] = [None] * len(puts)
        if wanted:
            matrix = self.embedder.embed_batch([texts[i] for i in wanted])
            for row, i in enumerate(wanted):
                vectors[i] = matrix[row]
        return vectors

    def _created_at(self, puts: list[PutOp]) -> dict[tuple[tuple[str, ...], str], float]:
        """When each item that already exists was first put (an update keeps it)."""
        keys: dict[tuple[str, ...], list[str]] = {}
        for op in puts:
            keys.setdefault(op.namespace, []).append(op.key)
        return {
            (labels, r.id): r.created_at
            for labels, ids in keys.items()
            for r in self.records.get(v.to_namespace(self.name, labels), ids)
        }

    @property
    def _model_id(self) -> str | None:
        return None if self.embedder is None else self.embedder.model_id


def _value(op: PutOp) -> dict[str, JSON]:
    value = to_json(op.value, field="value")
    if not isinstance(value, dict):
        raise InvalidInput(
            f"value must be a dict of JSON values; got {type(op.value).__name__}.", field="value"
        )
    return value


def _ttl_seconds(minutes: float) -> float:
    if isinstance(minutes, bool) or not isinstance(minutes, int | float) or not minutes > 0:
        raise InvalidInput(f"ttl is in minutes and must be > 0; got {minutes!r}.", field="ttl")
    return float(minutes) * 60.0
