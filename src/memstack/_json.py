"""JSON values: the type, a strict check, and the one serialization memstack uses."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import TypeAlias, Union

from memstack.errors import InvalidInput

JSON: TypeAlias = Union[bool, int, float, str, list["JSON"], dict[str, "JSON"], None]  # noqa: UP007
JSONObject: TypeAlias = dict[str, JSON]

_MAX_DEPTH = 200


def to_json(value: object, *, field: str = "value") -> JSON:
    """Return a deep copy of ``value`` as plain JSON data, or raise ``InvalidInput``.

    Accepts ``None``, ``bool``, ``int``, finite ``float``, ``str``, lists and tuples
    of JSON values, and mappings with string keys. Tuples become lists. The error
    names the path of the first value that is not JSON, e.g. ``value['a'][2]``.
    """
    return _copy(value, field, 0)


def copy_json(value: JSON) -> JSON:
    """A deep copy of a value already checked as JSON (``to_json``): its dicts and lists
    are new, the rest shared (immutable). Nothing is checked, so it copies a stored
    memory's metadata in a fraction of ``copy.deepcopy``'s time (which keeps a memo and
    dispatches on every type), a saving every search that returns metadata makes."""
    if isinstance(value, dict):
        return {key: copy_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [copy_json(item) for item in value]
    return value


def _copy(value: object, path: str, depth: int) -> JSON:
    if depth > _MAX_DEPTH:
        raise InvalidInput(
            f"{path} is nested more than {_MAX_DEPTH} levels deep; flatten the value.",
            field=path,
        )
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidInput(
                f"{path} is {value!r}, which JSON cannot represent; use null or a finite number.",
                field=path,
            )
        return value
    if isinstance(value, list | tuple):
        return [_copy(item, f"{path}[{i}]", depth + 1) for i, item in enumerate(value)]
    if isinstance(value, Mapping):
        out: dict[str, JSON] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise InvalidInput(
                    f"{path} has a key {key!r} of type {type(key).__name__}; "
                    "JSON object keys must be strings.",
                    field=path,
                )
            out[key] = _copy(item, f"{path}[{key!r}]", depth + 1)
        return out
    raise InvalidInput(
        f"{path} is a {type(value).__name__}, which is not JSON-serializable; "
        "pass None, bool, int, float, str, list or dict values only.",
        field=path,
    )


def dumps(value: JSON) -> str:
    """Compact JSON text, as JavaScript's ``JSON.stringify`` writes it."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def byte_size(value: JSON) -> int:
    """Size in UTF-8 bytes of the compact JSON serialization of ``value``."""
    return len(dumps(value).encode("utf-8"))
