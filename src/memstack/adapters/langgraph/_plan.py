"""A batch of LangGraph ops read into what it writes and what it must embed.

The values are checked (JSON, no credentials) and the texts to embed gathered before
anything is read or embedded, so a bad value fails the batch before a text leaves for an
embedding API; the embedding happens on the caller's side of ``abatch`` (an async
embedder is awaited on the caller's loop) and the reads and writes in a worker thread.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from langgraph.store.base import Op, PutOp, SearchOp

from memstack._json import JSON, to_json
from memstack.embeddings import Vectors
from memstack.errors import InvalidInput
from memstack.secrets import refuse_secrets

from . import _values as v
from ._embed import StoreEmbedder
from ._vectors import field_texts

__all__ = ["Embedded", "Plan", "aembed", "embed", "index_paths", "plan"]


@dataclass(frozen=True, kw_only=True)
class Plan:
    puts: list[PutOp]
    """The last put of each key that stores a value, in batch order."""
    deletes: list[PutOp]
    """The last put of each key when it deletes (``value=None``)."""
    values: list[dict[str, JSON]]
    """The JSON value of each put."""
    texts: list[list[str]]
    """The texts each put embeds, one vector each (none without an embedder)."""
    queries: list[str]
    """The distinct queries of the batch's searches, when the store embeds."""


@dataclass(frozen=True, kw_only=True)
class Embedded:
    documents: list[Vectors] = field(default_factory=list)
    """One matrix per put, a row per text."""
    queries: dict[str, Vectors] = field(default_factory=dict)


def plan(ops: Sequence[Op], paths: list[v.Path], embedder: StoreEmbedder | None) -> Plan:
    last: dict[tuple[tuple[str, ...], str], PutOp] = {}
    for op in ops:
        if isinstance(op, PutOp):
            last.pop((op.namespace, op.key), None)
            last[(op.namespace, op.key)] = op
    puts = [op for op in last.values() if op.value is not None]
    values = [_value(op) for op in puts]
    for op, value in zip(puts, values, strict=True):
        fields: dict[str, JSON] = {"namespace": list(op.namespace), "key": op.key, "value": value}
        refuse_secrets(fields, where="the LangGraph store")  # as on every memstack write path
    queries: dict[str, None] = {}
    if embedder is not None:
        queries = {op.query: None for op in ops if isinstance(op, SearchOp) and op.query}
    return Plan(
        puts=puts,
        deletes=[op for op in last.values() if op.value is None],
        values=values,
        texts=[
            field_texts(value, index_paths(op, paths)) if embedder is not None else []
            for op, value in zip(puts, values, strict=True)
        ],
        queries=list(queries),
    )


def index_paths(op: PutOp, paths: list[v.Path]) -> list[v.Path]:
    """The fields a put indexes: its own ``index=[...]``, none for ``False``, else the store's."""
    if op.index is False:
        return []
    return paths if op.index is None else v.tokenized(list(op.index))


def embed(todo: Plan, embedder: StoreEmbedder | None) -> Embedded:
    if embedder is None:
        return Embedded()
    matrix = embedder.documents([text for texts in todo.texts for text in texts])
    return Embedded(
        documents=_split(matrix, todo.texts),
        queries={q: embedder.query(q) for q in todo.queries},
    )


async def aembed(todo: Plan, embedder: StoreEmbedder | None) -> Embedded:
    if embedder is None:
        return Embedded()
    matrix = await embedder.adocuments([text for texts in todo.texts for text in texts])
    return Embedded(
        documents=_split(matrix, todo.texts),
        queries={q: await embedder.aquery(q) for q in todo.queries},
    )


def _split(matrix: Vectors, texts: list[list[str]]) -> list[Vectors]:
    """The rows of ``matrix`` (one embedder call for the batch) back per put."""
    out: list[Vectors] = []
    start = 0
    for chunk in texts:
        out.append(matrix[start : start + len(chunk)])
        start += len(chunk)
    return out


def _value(op: PutOp) -> dict[str, JSON]:
    value = to_json(op.value, field="value")
    if not isinstance(value, dict):
        raise InvalidInput(
            f"value must be a dict of JSON values; got {type(op.value).__name__}.", field="value"
        )
    return value
