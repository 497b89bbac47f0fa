"""mem0's filter language, read once into a tree and matched against each memory.

A filter is a JSON object: ``{"user_id": "alice"}``, or ``AND`` / ``OR`` / ``NOT`` over a
list of filters, and on each field either a value (equality) or operators:
``{"created_at": {"gte": "2024-01-01"}}``, ``{"user_id": {"in": ["a", "b"]}}``,
``{"metadata": {"topic": {"ne": "work"}}}``, ``{"agent_id": "*"}`` (any, not null). The
fields and the operators each takes are mem0's (``FIELDS``); anything else is an
``InvalidInput`` naming the place (``filters.AND[1].created_at.between``) and what is
allowed. ``wanted`` says whose memories a filter can match at all, so only those are
read; ``matches`` decides each of them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Final, Literal

from memstack._json import JSON
from memstack.errors import InvalidInput

__all__ = [
    "ENTITY_FIELDS",
    "MAX_IN_VALUES",
    "Condition",
    "Group",
    "Node",
    "Subject",
    "Wanted",
    "all_of",
    "matches",
    "names_entities_only",
    "parse_date",
    "parse_filters",
    "wanted",
]

Op = Literal["eq", "ne", "in", "nin", "gt", "gte", "lt", "lte", "contains", "icontains", "*"]
Kind = Literal["entity", "date", "categories", "metadata", "keywords", "memory_ids"]

ENTITY_FIELDS: Final = ("user_id", "agent_id", "app_id", "run_id")
FIELDS: Final[dict[str, Kind]] = {
    **dict.fromkeys(ENTITY_FIELDS, "entity"),
    **dict.fromkeys(("created_at", "updated_at", "timestamp"), "date"),
    "categories": "categories",
    "metadata": "metadata",
    "keywords": "keywords",
    "memory_ids": "memory_ids",
}
OPERATORS: Final[dict[Kind, tuple[Op, ...]]] = {
    "entity": ("eq", "ne", "in", "nin", "*"),
    "date": ("eq", "ne", "gt", "gte", "lt", "lte"),
    "categories": ("eq", "ne", "in", "nin", "contains"),
    "metadata": ("eq", "ne", "in", "nin", "gt", "gte", "lt", "lte", "contains"),
    "keywords": ("contains", "icontains"),
    "memory_ids": ("in",),
}
_BARE: Final[dict[Kind, Op]] = {
    "entity": "eq",
    "date": "eq",
    "categories": "contains",
    "metadata": "eq",
    "keywords": "icontains",
    "memory_ids": "in",
}
"""The operator of a bare value: ``{"categories": "work"}`` is "holds work"."""
MAX_IN_VALUES: Final = 1_000
MAX_DEPTH: Final = 8
MAX_CONDITIONS: Final = 200
_LOGIC: Final = ("AND", "OR", "NOT")


@dataclass(frozen=True, kw_only=True)
class Condition:
    field: str
    """A name of ``FIELDS`` (``timestamp`` read as ``created_at``)."""
    op: Op
    value: JSON = None
    """A date is held as seconds since the epoch; ``in`` as a list."""
    key: str | None = None
    """The metadata key of a ``metadata`` condition."""


@dataclass(frozen=True, kw_only=True)
class Group:
    logic: Literal["AND", "OR", "NOT"]
    parts: tuple[Node, ...]


Node = Condition | Group


@dataclass(frozen=True, kw_only=True)
class Subject:
    """A memory as a filter sees it."""

    id: str
    text: str
    user_id: str | None = None
    agent_id: str | None = None
    app_id: str | None = None
    run_id: str | None = None
    created_at: float
    updated_at: float
    categories: tuple[str, ...] = ()
    metadata: Mapping[str, JSON] = field(default_factory=dict)


def all_of(*nodes: Node | None) -> Node:
    """The nodes given, all of which must hold."""
    return Group(logic="AND", parts=tuple(n for n in nodes if n is not None))


def parse_filters(filters: object, where: str = "filters") -> Node:
    """``filters`` read into a tree, every field, operator and value checked."""
    counted = [0]
    return _node(filters, where, 0, counted)


def _node(given: object, where: str, depth: int, counted: list[int]) -> Node:
    if depth > MAX_DEPTH:
        raise InvalidInput(f"{where}: filters nest at most {MAX_DEPTH} levels deep.", field=where)
    if not isinstance(given, dict) or not given:
        raise InvalidInput(
            f'{where} must be a non-empty JSON object, such as {{"user_id": "alice"}}.',
            field=where,
        )
    parts: list[Node] = []
    for name, value in given.items():
        path = f"{where}.{name}"
        if name in _LOGIC:
            parts.append(_logic(name, value, path, depth, counted))
        elif name in FIELDS:
            parts.extend(_conditions(name, value, path, counted))
        else:
            raise InvalidInput(
                f"{path}: unknown filter field {name[:40]!r}; use AND, OR, NOT or one of "
                f"{', '.join(FIELDS)}.",
                field=path,
            )
    return parts[0] if len(parts) == 1 else Group(logic="AND", parts=tuple(parts))


def _logic(name: str, value: object, where: str, depth: int, counted: list[int]) -> Group:
    items = [value] if name == "NOT" and isinstance(value, dict) else value
    if not isinstance(items, list) or not items:
        raise InvalidInput(f"{where} must be a non-empty list of filters.", field=where)
    parts = tuple(_node(item, f"{where}[{i}]", depth + 1, counted) for i, item in enumerate(items))
    return Group(logic=name, parts=parts)  # type: ignore[arg-type]


def _conditions(name: str, value: object, where: str, counted: list[int]) -> list[Condition]:
    kind = FIELDS[name]
    if kind == "metadata":
        if not isinstance(value, dict) or not value:
            raise InvalidInput(
                f'{where} must be an object of metadata keys, such as {{"topic": "travel"}}.',
                field=where,
            )
        return [
            c
            for key, given in value.items()
            for c in _ops(name, kind, given, f"{where}.{key}", counted, key=key)
        ]
    return _ops(name, kind, value, where, counted)


def _ops(
    name: str, kind: Kind, given: object, where: str, counted: list[int], key: str | None = None
) -> list[Condition]:
    if given == "*" and kind == "entity":
        given = {"*": True}
    pairs = given.items() if isinstance(given, dict) else [(_BARE[kind], given)]
    if isinstance(given, dict) and not given:
        raise InvalidInput(f"{where} must hold an operator, such as {{'eq': ...}}.", field=where)
    out = []
    for op, value in pairs:
        allowed = OPERATORS[kind]
        if op not in allowed:
            raise InvalidInput(
                f"{where}.{str(op)[:40]}: unknown operator for {name}; use one of "
                f"{', '.join(allowed)}.",
                field=f"{where}.{str(op)[:40]}",
            )
        counted[0] += 1
        if counted[0] > MAX_CONDITIONS:
            raise InvalidInput(
                f"filters hold more than {MAX_CONDITIONS} conditions; send fewer.",
                field="filters",
            )
        field_name = "created_at" if name == "timestamp" else name
        out.append(
            Condition(
                field=field_name, op=op, value=_value(kind, op, value, f"{where}.{op}"), key=key
            )
        )
    return out


def _value(kind: Kind, op: Op, value: object, where: str) -> JSON:
    if op == "*":
        return None
    if op in ("in", "nin") or kind == "memory_ids":
        if not isinstance(value, list) or not value:
            raise InvalidInput(f"{where} must be a non-empty list of values.", field=where)
        if len(value) > MAX_IN_VALUES:
            raise InvalidInput(
                f"{where} holds {len(value)} values; give at most {MAX_IN_VALUES}, or "
                "split the request.",
                field=where,
            )
        return [_scalar(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if kind == "date":
        return parse_date(value, where)
    if kind == "keywords" and not isinstance(value, str):
        raise InvalidInput(f"{where} must be a string.", field=where)
    return _scalar(value, where)


def _scalar(value: object, where: str) -> JSON:
    if isinstance(value, bool | str) or value is None:
        return value
    if isinstance(value, int | float) and math.isfinite(value):
        return value
    raise InvalidInput(
        f"{where} must be a string, a number, true, false or null; got {type(value).__name__}.",
        field=where,
    )


def parse_date(value: object, where: str) -> float:
    """An ISO 8601 date or date-time (UTC when it names no zone), or seconds since the
    epoch, as seconds since the epoch."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        if math.isfinite(value) and abs(value) < 1e11:
            return float(value)
    elif isinstance(value, str) and len(value) <= 40:
        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            pass
        else:
            if moment.tzinfo is None:
                moment = moment.replace(tzinfo=timezone.utc)  # noqa: UP017
            return moment.timestamp()
    raise InvalidInput(
        f"{where} must be an ISO 8601 date (2024-01-31, 2024-01-31T12:00:00Z) or seconds "
        "since the epoch.",
        field=where,
    )


@dataclass(frozen=True, kw_only=True)
class Wanted:
    """Whose memories a filter can match: ids by entity, or ``"*"`` for all of them."""

    users: frozenset[str] | Literal["*"] = frozenset()
    agents: frozenset[str] | Literal["*"] = frozenset()
    apps: frozenset[str] | Literal["*"] = frozenset()


def wanted(node: Node) -> Wanted:
    """The users, agents and apps a filter names by equality, ``in`` or ``*`` outside a
    ``NOT``: every memory it can match is one of theirs. ``InvalidInput`` when it names
    none (mem0 asks the same: a filter scoped to at least one entity)."""
    named: dict[str, set[str] | Literal["*"]] = {f: set() for f in ENTITY_FIELDS}
    _collect(node, named)
    found = Wanted(**{k: _frozen(named[f]) for k, f in _OWNERS})
    if found.users or found.agents or found.apps:
        return found
    if named["run_id"]:
        raise InvalidInput(
            "filters name a run_id without a user_id or agent_id: memstack keeps a run's "
            'memories under its user or its agent; add {"user_id": ...} or {"agent_id": ...}.',
            field="filters.run_id",
        )
    raise InvalidInput(
        'filters must name a user_id, agent_id or app_id, such as {"user_id": "alice"} '
        '(or {"user_id": "*"} for every user).',
        field="filters",
    )


_OWNERS: Final = (("users", "user_id"), ("agents", "agent_id"), ("apps", "app_id"))


def _collect(node: Node, named: dict[str, set[str] | Literal["*"]]) -> None:
    if isinstance(node, Group):
        if node.logic != "NOT":
            for part in node.parts:
                _collect(part, named)
        return
    if node.field not in named or node.op not in ("eq", "in", "*"):
        return
    held = named[node.field]
    if node.op == "*" or held == "*":
        named[node.field] = "*"
        return
    values = node.value if isinstance(node.value, list) else [node.value]
    held.update(v for v in values if isinstance(v, str))


def _frozen(value: set[str] | Literal["*"]) -> frozenset[str] | Literal["*"]:
    return "*" if value == "*" else frozenset(value)


def matches(node: Node, subject: Subject) -> bool:
    if isinstance(node, Group):
        results = (matches(part, subject) for part in node.parts)
        if node.logic == "AND":
            return all(results)
        if node.logic == "OR":
            return any(results)
        return not any(results)
    return _holds(node, subject)


def _holds(condition: Condition, subject: Subject) -> bool:
    name, op, value = condition.field, condition.op, condition.value
    if name == "memory_ids":
        return isinstance(value, list) and subject.id in value
    if name == "keywords":
        text, word = subject.text, str(value)
        return word in text if op == "contains" else word.lower() in text.lower()
    if name == "categories":
        return _among(list(subject.categories), op, value)
    if name == "metadata":
        actual = subject.metadata.get(condition.key or "")
        if op == "contains":
            return _contains(actual, value)
        return _compare(actual, op, value)
    actual = getattr(subject, name)
    if op == "*":
        return actual is not None
    return _compare(actual, op, value)


def _among(categories: list[str], op: Op, value: JSON) -> bool:
    if op in ("in", "nin"):
        overlap = isinstance(value, list) and any(c in value for c in categories)
        return overlap if op == "in" else not overlap
    held = value in categories
    return not held if op == "ne" else held


def _contains(actual: JSON | None, value: JSON) -> bool:
    if isinstance(actual, str) and isinstance(value, str):
        return value in actual
    return isinstance(actual, list) and value in actual


def _compare(actual: object, op: Op, value: JSON) -> bool:
    if op == "eq":
        return bool(actual == value)
    if op == "ne":
        return bool(actual != value)
    if op in ("in", "nin"):
        held = isinstance(value, Sequence) and actual in value
        return held if op == "in" else not held
    if isinstance(actual, bool) or not isinstance(actual, int | float):
        return False
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    if op == "gt":
        return actual > value
    if op == "gte":
        return actual >= value
    if op == "lt":
        return actual < value
    return actual <= value


def names_entities_only(node: Node) -> bool:
    """Whether ``node`` says whose memories to read and nothing else (``{"user_id":
    "alice"}``, an ``OR`` of such): a search then needs no more candidates than it
    answers with."""
    if isinstance(node, Group):
        return node.logic != "NOT" and all(names_entities_only(p) for p in node.parts)
    return node.field in ("user_id", "agent_id", "app_id") and node.op in ("eq", "in", "*")
