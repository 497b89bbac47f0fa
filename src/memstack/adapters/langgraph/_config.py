"""What a store indexes: LangGraph's ``index=`` config, or memstack's ``embedder=`` and
``fields=`` keywords, read into one value.

``index`` takes LangGraph's ``IndexConfig`` (``dims``, ``embed``, ``fields``) as
``InMemoryStore`` and ``PostgresStore`` do, and ``text_fields`` as ``SqliteStore`` spells
``fields``, so a store built for either moves over unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from memstack.errors import InvalidInput

from . import _values as v
from ._embed import StoreEmbedder

__all__ = ["Indexing", "indexing"]

DEFAULT_FIELDS = ("$",)


@dataclass(frozen=True, kw_only=True)
class Indexing:
    embedder: StoreEmbedder | None
    paths: list[v.Path]
    config: dict[str, Any] | None
    """What ``store.index_config`` shows: the ``index`` given, or one made of the keywords."""


def indexing(index: object, embedder: object, fields: Sequence[str]) -> Indexing:
    """The store's indexing, or ``InvalidInput`` naming the setting to fix."""
    _check_fields(fields, "fields")
    if index is None:
        if embedder is None:
            return Indexing(embedder=None, paths=v.tokenized(list(fields)), config=None)
        chosen = StoreEmbedder(embedder, dims=None)
        config: dict[str, Any] = {"embed": embedder, "fields": list(fields)}
        dim = getattr(embedder, "dim", None)
        if isinstance(dim, int):
            config["dims"] = dim
        return Indexing(embedder=chosen, paths=v.tokenized(list(fields)), config=config)
    if embedder is not None:
        raise InvalidInput(
            "pass the embedder once: index={'embed': ...} or embedder=..., not both.",
            field="index",
        )
    if not isinstance(index, Mapping):
        raise InvalidInput(
            f"index must be a dict like {{'dims': 384, 'embed': ..., 'fields': ['$']}}; "
            f"got {type(index).__name__}.",
            field="index",
        )
    if index.get("embed") is None:
        raise InvalidInput("index needs 'embed': the embedder to index with.", field="index.embed")
    chosen_fields = _index_fields(index, fields)
    return Indexing(
        embedder=StoreEmbedder(index["embed"], dims=index.get("dims")),
        paths=v.tokenized(chosen_fields),
        config=dict(index),
    )


def _index_fields(index: Mapping[str, Any], fields: Sequence[str]) -> list[str]:
    given = {k: index[k] for k in ("fields", "text_fields") if index.get(k) is not None}
    if len(given) == 2 and list(given["fields"]) != list(given["text_fields"]):
        raise InvalidInput(
            "index gives both 'fields' and 'text_fields' (SqliteStore's name for it), and "
            "they differ; keep one.",
            field="index.fields",
        )
    if given and tuple(fields) != DEFAULT_FIELDS:
        raise InvalidInput(
            "the index fields are given twice (fields= and index['fields']); keep one.",
            field="fields",
        )
    for name, value in given.items():
        chosen = [value] if isinstance(value, str) else value  # SqliteStore takes one path
        _check_fields(chosen, f"index.{name}")
        return list(chosen)
    return list(fields)


def _check_fields(fields: object, field: str) -> None:
    if isinstance(fields, str):
        raise InvalidInput(
            f"{field} is the string {fields!r}; pass a list: [{fields!r}].", field=field
        )
    if not isinstance(fields, Sequence) or not all(isinstance(f, str) for f in fields):
        raise InvalidInput(
            f"{field} must be a list of paths such as ['text', 'items[*].name']; got {fields!r}.",
            field=field,
        )
