"""Argument checks shared by every backend: each raises ``InvalidInput`` naming the field.

``RecordStore`` calls these before its backend touches storage, so a rejected call
changes nothing.
The checked values come back normalized (deduplicated ids, JSON-copied metadata,
read-only float32 embeddings).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import cast, get_args

import numpy as np
import numpy.typing as npt

from memstack._json import JSON, to_json
from memstack.errors import InvalidInput
from memstack.storage.types import Filter, MetadataIn, Order, Record, Vector

MAX_KEY_BYTES = 1024
MAX_DIM = 16_000
MAX_LIMIT = 10_000
MAX_PATH_KEYS = 8
"""Keys of a ``MetadataIn`` path: how deep a filter may look into metadata."""
_ORDERS: tuple[str, ...] = get_args(Order)


@dataclass(frozen=True, kw_only=True)
class Batch:
    """A checked upsert batch: last-wins records and each namespace's embedding size."""

    records: list[Record]
    dims: dict[str, tuple[int, str]]  # namespace -> (dimension, field that set it)


def check_text(value: object, field: str) -> str:
    """A string that every backend can store: UTF-8 encodable, without NUL."""
    if not isinstance(value, str):
        raise InvalidInput(f"{field} must be a string; got {type(value).__name__}.", field=field)
    if value.isascii() and "\x00" not in value:
        return value
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInput(
            f"{field} is not valid Unicode (a lone surrogate?); pass UTF-8 encodable text.",
            field=field,
        ) from exc
    if "\x00" in value:
        raise InvalidInput(f"{field} contains a NUL character; remove it.", field=field)
    return value


def check_query(value: object) -> str:
    """A keyword query: any string (words are extracted from it, the rest is ignored)."""
    if not isinstance(value, str):
        raise InvalidInput(f"query must be a string; got {type(value).__name__}.", field="query")
    return value


def check_key(value: object, field: str) -> str:
    """A namespace or id: a non-empty string of at most ``MAX_KEY_BYTES`` UTF-8 bytes."""
    if type(value) is str and value and value.isascii() and len(value) <= MAX_KEY_BYTES:
        if "\x00" not in value:  # the common case, checked without encoding
            return value
    text = check_text(value, field)
    if not text:
        raise InvalidInput(f"{field} must be a non-empty string.", field=field)
    if len(text.encode("utf-8")) > MAX_KEY_BYTES:
        raise InvalidInput(
            f"{field} is longer than {MAX_KEY_BYTES} UTF-8 bytes; use a shorter one.", field=field
        )
    return text


def check_namespace(value: object) -> str:
    return check_key(value, "namespace")


def check_ids(ids: object, field: str = "ids") -> list[str]:
    """The ids, checked, without repeats, in first-seen order."""
    if isinstance(ids, str | bytes) or not isinstance(ids, Sequence):
        raise InvalidInput(
            f"{field} must be a list of non-empty strings, not {ids!r}.", field=field
        )
    seen: dict[str, None] = {}
    for i, item in enumerate(ids):
        seen[check_key(item, f"{field}[{i}]")] = None
    return [*seen]


def check_time(value: object, field: str) -> float:
    """Seconds since the epoch: a finite int or float."""
    return check_number(value, field, "a finite number of seconds since the epoch")


def check_number(value: object, field: str, what: str = "a finite number") -> float:
    """A finite int or float (not a bool), as a float."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InvalidInput(f"{field} must be {what}; got {value!r}.", field=field)
    return float(value)


def check_optional_time(value: object, field: str) -> float | None:
    return None if value is None else check_time(value, field)


def check_positive(value: object, field: str, maximum: int = MAX_LIMIT) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= maximum:
        raise InvalidInput(
            f"{field} must be an integer from 1 to {maximum}; got {value!r}.", field=field
        )
    return value


MAX_OFFSET = 2**62


def check_offset(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_OFFSET:
        raise InvalidInput(
            f"offset must be an integer from 0 to 2^62; got {value!r}.", field="offset"
        )
    return value


def check_after(value: object) -> tuple[float, str]:
    """A keyset position: ``(order key, id)`` of the last record of a page."""
    if isinstance(value, tuple) and len(value) == 2:
        return check_time(value[0], "after[0]"), check_key(value[1], "after[1]")
    raise InvalidInput(
        f"after must be (order key, id) of the last record listed; got {value!r}.",
        field="after",
    )


def check_order(value: object) -> Order:
    if value not in _ORDERS:
        raise InvalidInput(f"order must be one of {_ORDERS}; got {value!r}.", field="order")
    return value  # type: ignore[return-value]


def check_vector(value: object, field: str) -> Vector:
    """A read-only 1-D float32 copy of ``value``: finite, 1..MAX_DIM long, not all zeros."""
    with np.errstate(over="ignore", invalid="ignore"):
        vouched = _vouched(value)
    if vouched is not None:
        return vouched
    try:
        raw = np.asarray(value)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"{field} must be a 1-D array of numbers.", field=field) from exc
    if raw.dtype.kind not in "iuf":
        raise InvalidInput(f"{field} must hold real numbers; got dtype {raw.dtype}.", field=field)
    with np.errstate(over="ignore", invalid="ignore"):
        array = raw.astype(np.float32)  # a copy, so the caller's array may change later
    if array.ndim != 1 or not 1 <= array.shape[0] <= MAX_DIM:
        raise InvalidInput(
            f"{field} must be a 1-D array of 1 to {MAX_DIM} numbers; got shape {array.shape}.",
            field=field,
        )
    if not np.isfinite(array).all():
        raise InvalidInput(
            f"{field} holds NaN or infinite values (or values beyond float32); "
            "check the embedder's output.",
            field=field,
        )
    if not np.any(array):
        raise InvalidInput(
            f"{field} is all zeros, which has no cosine direction; check the embedder's output.",
            field=field,
        )
    array.flags.writeable = False
    return array


def check_matrix(value: object, field: str) -> npt.NDArray[np.float32]:
    """A read-only 2-D float32 copy of ``value``: ``(m, dim)``, each row as ``check_vector``."""
    try:
        raw = np.asarray(value)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"{field} must be a 2-D array of numbers.", field=field) from exc
    if raw.ndim != 2:
        raise InvalidInput(
            f"{field} must be a 2-D array (one row per vector); got shape {raw.shape}.",
            field=field,
        )
    rows = [check_vector(row, f"{field}[{i}]") for i, row in enumerate(raw)]
    matrix = np.stack(rows) if rows else np.zeros((0, raw.shape[1]), np.float32)
    matrix.flags.writeable = False
    return matrix


def check_metadata(value: object, field: str) -> dict[str, JSON]:
    if type(value) is dict and not value:
        return {}
    copied = to_json(value, field=field)
    if not isinstance(copied, dict):
        raise InvalidInput(f"{field} must be a JSON object (a dict).", field=field)
    _check_json_strings(copied, field)
    return copied


def _check_json_strings(value: JSON, field: str) -> None:
    if isinstance(value, str):
        check_text(value, field)
    elif isinstance(value, list):
        for item in value:
            _check_json_strings(item, field)
    elif isinstance(value, dict):
        for key, item in value.items():
            check_text(key, field)
            _check_json_strings(item, field)


def check_filter(value: object) -> Filter:
    """A filter with checked, copied fields; ``None`` becomes the empty filter."""
    if value is None:
        return Filter()
    if not isinstance(value, Filter):
        raise InvalidInput(f"filter must be a Filter; got {type(value).__name__}.", field="filter")
    kinds = None if value.kinds is None else tuple(check_ids(value.kinds, "filter.kinds"))
    ids = None if value.ids is None else tuple(check_ids(value.ids, "filter.ids"))
    metadata = None
    if value.metadata is not None:
        metadata = check_metadata(value.metadata, "filter.metadata")
    provenances = None
    if value.provenances is not None:
        provenances = tuple(check_ids(value.provenances, "filter.provenances"))
    superseded_by = None
    if value.superseded_by is not None:
        superseded_by = tuple(check_ids(value.superseded_by, "filter.superseded_by"))
    as_of = check_optional_time(value.as_of, "filter.as_of")
    if as_of is not None and value.include_superseded:
        raise InvalidInput(
            "filter.as_of and filter.include_superseded exclude each other: as_of shows "
            "what was valid at one moment, include_superseded every version; pick one.",
            field="filter.as_of",
        )
    closed_as_of = check_optional_time(value.closed_as_of, "filter.closed_as_of")
    if closed_as_of is not None and not value.include_superseded:
        raise InvalidInput(
            "filter.closed_as_of selects closed versions; set include_superseded too.",
            field="filter.closed_as_of",
        )
    return Filter(
        kinds=kinds,
        metadata=metadata,
        created_after=check_optional_time(value.created_after, "filter.created_after"),
        created_before=check_optional_time(value.created_before, "filter.created_before"),
        ids=ids,
        include_expired=bool(value.include_expired),
        as_of=as_of,
        include_superseded=bool(value.include_superseded),
        provenances=provenances,
        superseded_by=superseded_by,
        closed_as_of=closed_as_of,
        metadata_in=tuple(
            _check_metadata_in(c, f"filter.metadata_in[{i}]")
            for i, c in enumerate(value.metadata_in)
        ),
    )


def _check_metadata_in(value: object, field: str) -> MetadataIn:
    """A ``MetadataIn`` with a path of 1 to ``MAX_PATH_KEYS`` strings and JSON scalar
    values."""
    if not isinstance(value, MetadataIn):
        raise InvalidInput(f"{field} must be a MetadataIn.", field=field)
    path = tuple(value.path)
    if not 1 <= len(path) <= MAX_PATH_KEYS:
        raise InvalidInput(
            f"{field}.path must name 1 to {MAX_PATH_KEYS} keys.", field=f"{field}.path"
        )
    for key in path:
        check_text(key, f"{field}.path")
    values = tuple(value.values)
    for item in values:
        if item is not None and not isinstance(item, str | int | float):
            raise InvalidInput(
                f"{field}.values must be JSON scalars (string, number, boolean, null).",
                field=f"{field}.values",
            )
    copied = to_json(list(values), field=f"{field}.values")
    assert isinstance(copied, list)
    for item in copied:
        if isinstance(item, str):
            check_text(item, f"{field}.values")
    return MetadataIn(path=path, values=tuple(copied))


def check_record(record: object, field: str, *, checked: Vector | None = None) -> Record:
    """``record`` with every field checked; ``checked``: its embedding, already checked
    (``checked_vectors``)."""
    if not isinstance(record, Record):
        raise InvalidInput(f"{field} must be a Record; got {type(record).__name__}.", field=field)
    importance = _checked_importance(record.importance, field)
    kind = record.kind
    created_at = check_time(record.created_at, f"{field}.created_at")
    valid_from = check_optional_time(record.valid_from, f"{field}.valid_from")
    valid_to = check_optional_time(record.valid_to, f"{field}.valid_to")
    start = created_at if valid_from is None else valid_from
    if valid_to is not None and valid_to < start:
        raise _ends_before_start(field, valid_to, start)
    return Record(
        id=check_key(record.id, f"{field}.id"),
        namespace=check_key(record.namespace, f"{field}.namespace"),
        text=check_text(record.text, f"{field}.text"),
        metadata=check_metadata(record.metadata, f"{field}.metadata"),
        kind=None if kind is None else check_key(kind, f"{field}.kind"),
        importance=importance,
        created_at=created_at,
        updated_at=check_time(record.updated_at, f"{field}.updated_at"),
        last_accessed_at=check_optional_time(record.last_accessed_at, f"{field}.last_accessed_at"),
        expires_at=check_optional_time(record.expires_at, f"{field}.expires_at"),
        embedding=(
            _checked_embedding(record.embedding, f"{field}.embedding")
            if checked is None
            else checked
        ),
        context=(
            None if record.context is None else check_text(record.context, f"{field}.context")
        ),
        valid_from=valid_from,
        valid_to=valid_to,
        superseded_by=_optional_key(record.superseded_by, f"{field}.superseded_by"),
        closed_reason=_optional_key(record.closed_reason, f"{field}.closed_reason"),
        provenance=_optional_key(record.provenance, f"{field}.provenance"),
        provenance_detail=_optional_key(record.provenance_detail, f"{field}.provenance_detail"),
    )


def _checked_importance(importance: object, field: str) -> float:
    if (
        isinstance(importance, bool)
        or not isinstance(importance, int | float)
        or not 0.0 <= importance <= 1.0
    ):
        raise InvalidInput(
            f"{field}.importance must be a number from 0 to 1; got {importance!r}.",
            field=f"{field}.importance",
        )
    return float(importance)


def _ends_before_start(field: str, valid_to: float, start: float) -> InvalidInput:
    return InvalidInput(
        f"{field}.valid_to ({valid_to}) is before its valid_from ({start}); a "
        "record stops being valid after it starts.",
        field=f"{field}.valid_to",
    )


def _optional_key(value: object, field: str) -> str | None:
    return None if value is None else check_key(value, field)


def check_batch(records: object) -> Batch:
    """Checked records (last wins per key) and each namespace's embedding dimension."""
    if isinstance(records, Record | str | bytes) or not isinstance(records, Sequence):
        raise InvalidInput("records must be a list of Record.", field="records")
    latest: dict[tuple[str, str], Record] = {}
    dims: dict[str, tuple[int, str]] = {}
    checked = checked_vectors(records)
    for i, item in enumerate(records):
        record = check_record(item, f"records[{i}]", checked=checked.get(i))
        latest.pop((record.namespace, record.id), None)
        latest[(record.namespace, record.id)] = record
        if record.embedding is not None:
            field = f"records[{i}].embedding"
            dim = record.embedding.shape[0]
            seen = dims.setdefault(record.namespace, (dim, field))
            if seen[0] != dim:
                raise InvalidInput(
                    f"{field} has {dim} dimensions but {seen[1]} has {seen[0]}; "
                    "one namespace holds embeddings of one size.",
                    field=field,
                )
    return Batch(records=list(latest.values()), dims=dims)


def _checked_embedding(value: object, field: str) -> Vector | None:
    return None if value is None else check_vector(value, field)


def checked_vectors(records: Sequence[object]) -> dict[int, Vector]:
    """The embeddings of ``records`` that ``_vouched`` vouches for, by position, checked
    under one ``np.errstate`` (which costs as much as the check itself); ``check_vector``
    decides the others one by one."""
    checked: dict[int, Vector] = {}
    with np.errstate(over="ignore", invalid="ignore"):
        for i, record in enumerate(records):
            if isinstance(record, Record) and record.embedding is not None:
                vouched = _vouched(record.embedding)
                if vouched is not None:
                    checked[i] = vouched
    return checked


def _vouched(value: object) -> Vector | None:
    """A read-only copy of ``value`` when it is a 1-D float32 array of 1..MAX_DIM values
    whose sum of squares is finite and above zero, None otherwise. Squares are >= 0, so a
    NaN or infinite value makes the sum NaN or infinite, and a finite non-zero sum means a
    finite vector that is not all zeros; a sum that overflows or underflows float32 proves
    nothing, and gets None. One copy and one dot product cost well under a copy, a max
    and a min. Call it with float overflow and invalid warnings off."""
    if not isinstance(value, np.ndarray) or value.dtype != np.float32 or value.ndim != 1:
        return None
    if not 1 <= value.shape[0] <= MAX_DIM:
        return None
    array = value.copy()
    squares = float(np.dot(array, array))
    if not (math.isfinite(squares) and squares > 0.0):
        return None
    array.flags.writeable = False
    return array


def check_query_dim(query: Vector, stored: int | None) -> None:
    """A search vector must have the size of the namespace's embeddings."""
    if stored is not None and stored != query.shape[0]:
        raise InvalidInput(
            f"vector has {query.shape[0]} dimensions but this namespace holds "
            f"{stored}-dimension embeddings; embed the query with the same model.",
            field="vector",
        )


def json_equal(left: JSON, right: JSON) -> bool:
    """JSON equality: ``True`` is not ``1``, ``1`` equals ``1.0``, containers compare deeply."""
    if isinstance(left, bool) or isinstance(right, bool):
        return isinstance(left, bool) and isinstance(right, bool) and left == right
    if isinstance(left, int | float) and isinstance(right, int | float):
        return left == right
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(map(json_equal, left, right))
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(json_equal(left[k], right[k]) for k in left)
    return type(left) is type(right) and left == right


def metadata_matches(metadata: Mapping[str, JSON], wanted: Mapping[str, JSON]) -> bool:
    return all(key in metadata and json_equal(metadata[key], v) for key, v in wanted.items())


def metadata_in_matches(metadata: Mapping[str, JSON], wanted: Sequence[MetadataIn]) -> bool:
    """Whether every condition of ``wanted`` holds of ``metadata`` (``Filter.metadata_in``)."""
    for condition in wanted:
        held: object = metadata
        for key in condition.path:
            if not isinstance(held, Mapping) or key not in held:
                return False
            held = held[key]
        if not any(json_equal(cast(JSON, held), v) for v in condition.values):
            return False
    return True
