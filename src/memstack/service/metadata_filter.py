"""A memory search's metadata filter, as mem0 and the Redis memory server take one:
``{"project": "apollo", "tier": {"$in": ["gold", "silver"]}}`` keeps the memories whose
metadata has ``project`` equal to ``"apollo"`` and ``tier`` one of the two.

Checked here once for every door (library, REST, MCP, client), so each refuses the same
filters with the same message naming the field and the fix; the checked filter becomes
conditions the database evaluates (``LongTermTier.metadata_conditions``), so a filtered
search ranks the matching memories only, never a page filtered afterwards. Values are
JSON scalars compared as JSON compares them: ``1`` equals ``1.0``, ``true`` is not
``1``, ``null`` matches a key set to null (not a missing one). A key holding a list or
an object is matched by none of these (no containment operators)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Final

from memstack._json import JSON
from memstack.errors import InvalidInput

__all__ = ["IN", "MAX_FILTER_KEYS", "MAX_IN_VALUES", "MetadataWanted", "check_metadata_filter"]

IN: Final = "$in"
MAX_FILTER_KEYS: Final = 20
MAX_IN_VALUES: Final = 100
MetadataWanted = dict[str, tuple[JSON, ...]]
"""A checked filter: each key with the values it may hold (one for an equality)."""
_SHAPE: Final = 'give a value (equality) or {"$in": [values]}'


def check_metadata_filter(value: object, field: str = "metadata") -> MetadataWanted:
    """The filter ``value`` as each key's allowed values; ``InvalidInput`` naming the key
    (``metadata.tier``) for an unknown operator, a nested object, a list compared
    whole, or a value that is not a JSON scalar."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InvalidInput(
            f"{field} must be an object of metadata keys, each with a value (equality) or "
            '{"$in": [values]}, such as {"project": "apollo", "tier": {"$in": ["a", "b"]}}.',
            field=field,
        )
    if len(value) > MAX_FILTER_KEYS:
        raise InvalidInput(
            f"{field} names {len(value)} keys; filter on at most {MAX_FILTER_KEYS}.", field=field
        )
    return {_check_key(key, field): _allowed(item, f"{field}.{key}") for key, item in value.items()}


def _check_key(key: object, field: str) -> str:
    if not isinstance(key, str) or not key:
        raise InvalidInput(f"{field}: each key must be a non-empty string.", field=field)
    if key.startswith("$"):
        raise InvalidInput(
            f"{field}.{key}: unknown operator {key!r} at the top of the filter; every "
            f"condition holds at once (and): name a metadata key and {_SHAPE}.",
            field=f"{field}.{key}",
        )
    return key


def _allowed(item: object, field: str) -> tuple[JSON, ...]:
    """The values a key may hold: its value, or the items of its ``$in``."""
    if isinstance(item, Mapping):
        operators = [k for k in item if isinstance(k, str) and k.startswith("$")]
        unknown = [k for k in operators if k != IN]
        if unknown:
            raise InvalidInput(
                f"{field}: unknown operator {unknown[0]!r}; the operators are equality "
                f"and $in: {_SHAPE}.",
                field=f"{field}.{unknown[0]}",
            )
        if len(item) != 1 or not operators:
            raise InvalidInput(
                f"{field} is an object: a filter compares a top-level metadata key with "
                f"scalars, not nested objects; {_SHAPE}.",
                field=field,
            )
        return _in_values(item[IN], f"{field}.{IN}")
    if isinstance(item, list | tuple):
        raise InvalidInput(
            f"{field} is a list: to match any of several values give "
            f'{{"$in": [values]}}; a key holding a list is not matched whole.',
            field=field,
        )
    return (_scalar(item, field),)


def _in_values(values: object, field: str) -> tuple[JSON, ...]:
    if not isinstance(values, list | tuple) or not 1 <= len(values) <= MAX_IN_VALUES:
        raise InvalidInput(
            f"{field} must be a list of 1 to {MAX_IN_VALUES} values (strings, numbers, "
            "booleans or null).",
            field=field,
        )
    return tuple(_scalar(v, f"{field}[{i}]") for i, v in enumerate(values))


def _scalar(value: object, field: str) -> JSON:
    """A JSON scalar a database can compare: finite, and text without NUL."""
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, float) and math.isfinite(value):
        return value
    if isinstance(value, str) and "\x00" not in value:
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            pass
        else:
            return value
    raise InvalidInput(
        f"{field} must be a string, a finite number, a boolean or null; got {value!r:.60}.",
        field=field,
    )
