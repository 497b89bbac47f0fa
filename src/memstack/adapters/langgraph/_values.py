"""LangGraph's values in memstack's terms: namespaces, items, index texts and filters.

A LangGraph namespace ``("users", "u1")`` of the store named ``default`` is the memstack
namespace ``lg/default/users/u1``; an item is one record whose id is the item's key, whose
metadata is the item's value (so the backend matches plain ``{"field": value}`` filters
itself) and whose text is what the item's index fields hold.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Final

from langgraph.store.base import Item, MatchCondition, SearchItem, get_text_at_path, tokenize_path

from memstack._json import JSON
from memstack.errors import InvalidInput
from memstack.storage import Namespace, Record

__all__ = [
    "OPERATORS",
    "index_text",
    "labels_of",
    "matches",
    "namespace_matches",
    "pushed_filter",
    "texts_at",
    "to_item",
    "to_namespace",
    "to_search_item",
    "tokenized",
]

OPERATORS: Final = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")
Path = tuple[str, list[str] | str]


def to_namespace(name: str, labels: Sequence[str]) -> Namespace:
    return Namespace("lg", name, *labels)


def labels_of(encoded: str) -> tuple[str, ...]:
    """The LangGraph labels of an ``lg/<store name>/...`` namespace."""
    return Namespace.decode(encoded).parts[1:]


def to_item(record: Record, labels: tuple[str, ...]) -> Item:
    return Item(
        value=dict(record.metadata),
        key=record.id,
        namespace=labels,
        created_at=_time(record.created_at),
        updated_at=_time(record.updated_at),
    )


def to_search_item(record: Record, score: float | None) -> SearchItem:
    return SearchItem(
        namespace=labels_of(record.namespace),
        key=record.id,
        value=dict(record.metadata),
        created_at=_time(record.created_at),
        updated_at=_time(record.updated_at),
        score=score,
    )


def _time(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, tz=UTC)


# -- what gets embedded -----------------------------------------------------------------


def tokenized(fields: Sequence[str]) -> list[Path]:
    """Index fields as LangGraph parses them (``"$"`` is the whole value)."""
    return [(f, f if f == "$" else tokenize_path(f)) for f in fields]


def texts_at(value: Mapping[str, JSON], path: Path) -> list[str]:
    """The texts one index field holds (several for a ``[*]`` or ``{a,b}`` path)."""
    return get_text_at_path(value, path[1])


def index_text(value: Mapping[str, JSON], paths: Sequence[Path]) -> str:
    """The texts at ``paths`` joined by newlines; ``""`` when none holds any."""
    return "\n".join(text for path in paths for text in texts_at(value, path))


# -- filters (LangGraph's rules: nested dicts match as subsets, operators compare) -------


def pushed_filter(filter: Mapping[str, Any] | None) -> dict[str, JSON] | None:
    """The conditions the storage backend can check itself: plain values of top-level
    fields. A dotted key is a path, checked here; so is a string holding a NUL, which no
    stored value holds (LangGraph's stores match nothing there, and raise nothing)."""
    pushed: dict[str, JSON] = {
        k: v
        for k, v in (filter or {}).items()
        if isinstance(v, str | int | float | bool)
        and "." not in k
        and not (isinstance(v, str) and "\x00" in v)
    }
    return pushed or None


def matches(value: Mapping[str, Any], filter: Mapping[str, Any] | None) -> bool:
    return all(_compare(_field(value, k), wanted, k) for k, wanted in (filter or {}).items())


def _field(value: Mapping[str, Any], key: str) -> Any:
    """The value's field ``key``; a dotted key not in the value is a path into nested
    objects (``"user.level"``), as LangGraph's SQLite and PostgreSQL stores read it."""
    if key in value or "." not in key:
        return value.get(key)
    found: Any = value
    for part in key.split("."):
        if not isinstance(found, Mapping):
            return None
        found = found.get(part)
    return found


def _compare(actual: Any, wanted: Any, field: str) -> bool:
    if isinstance(wanted, dict):
        if any(k.startswith("$") for k in wanted):
            return all(_apply(actual, op, arg, field) for op, arg in wanted.items())
        return isinstance(actual, dict) and all(
            _compare(actual.get(k), v, f"{field}.{k}") for k, v in wanted.items()
        )
    if isinstance(wanted, list | tuple):
        return (
            isinstance(actual, list | tuple)
            and len(actual) == len(wanted)
            and all(_compare(a, w, field) for a, w in zip(actual, wanted, strict=True))
        )
    return bool(actual == wanted)


def _apply(actual: Any, op: str, arg: Any, field: str) -> bool:
    if op == "$eq":
        return bool(actual == arg)
    if op == "$ne":
        return bool(actual != arg)
    if op not in OPERATORS:
        raise InvalidInput(
            f"filter.{field} uses the operator {op!r}; use one of {', '.join(OPERATORS)}.",
            field=f"filter.{field}",
        )
    if not _number(arg):
        raise InvalidInput(
            f"filter.{field}: {op} compares numbers; got {arg!r}.", field=f"filter.{field}"
        )
    if not _number(actual):
        return False  # a missing or non-numeric field is neither above nor below
    a, b = float(actual), float(arg)
    return {"$gt": a > b, "$gte": a >= b, "$lt": a < b, "$lte": a <= b}[op]


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def namespace_matches(condition: MatchCondition, labels: tuple[str, ...]) -> bool:
    """LangGraph's prefix / suffix match, ``"*"`` matching any one label."""
    path = condition.path
    if len(labels) < len(path):
        return False
    pairs = (
        zip(labels, path, strict=False)
        if condition.match_type == "prefix"
        else zip(reversed(labels), reversed(path), strict=False)
    )
    return all(want == "*" or have == want for have, want in pairs)
