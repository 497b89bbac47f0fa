"""The checks of the memory service's arguments: each returns the checked value or
raises ``InvalidInput`` (``NotFound`` for an id) naming the field and the fix."""

from __future__ import annotations

import math
from collections.abc import Sequence

from memstack._json import JSON, to_json
from memstack.errors import InvalidInput, NotFound
from memstack.service.types import (
    MAX_KEY_CHARS,
    MAX_PROVENANCE_DETAIL_CHARS,
    MAX_VALUE_CHARS,
    PROVENANCES,
    SCOPES,
    Provenance,
    Scope,
    as_provenance,
)

__all__ = [
    "check_key",
    "check_memory_id",
    "check_metadata",
    "check_provenance",
    "check_provenance_detail",
    "check_provenances",
    "check_scope",
    "check_validity",
    "check_value",
]


def check_memory_id(memory_id: object) -> None:
    """An id that can name a memory; anything else is no memory (404, not 422)."""
    if not isinstance(memory_id, str) or not memory_id or len(memory_id) > 200:
        raise NotFound(f"no memory {memory_id!r}.", field="id")


def check_scope(scope: object) -> Scope:
    if scope not in SCOPES:
        raise InvalidInput(
            f"scope must be one of session, agent, global; got {scope!r}.", field="scope"
        )
    return scope


def check_key(key: object) -> str:
    if not isinstance(key, str) or not key.strip():
        raise InvalidInput("key must be a non-empty string.", field="key")
    if len(key) > MAX_KEY_CHARS:
        raise InvalidInput(f"key is over {MAX_KEY_CHARS} characters; shorten it.", field="key")
    if any(ord(ch) < 32 for ch in key):
        raise InvalidInput("key must not contain control characters or newlines.", field="key")
    return key


def check_value(value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput("value must be a non-empty string.", field="value")
    if len(value) > MAX_VALUE_CHARS:
        raise InvalidInput(
            f"value is {len(value)} characters; the limit is {MAX_VALUE_CHARS}. "
            "Store a summary, or add the full text as knowledge.",
            field="value",
        )
    return value


def check_metadata(metadata: object) -> dict[str, JSON]:
    if metadata is None:
        return {}
    if not isinstance(metadata, dict):
        raise InvalidInput("metadata must be a JSON object.", field="metadata")
    checked = to_json(metadata, field="metadata")
    assert isinstance(checked, dict)
    if len(str(checked)) > 8_192:
        raise InvalidInput("metadata is over 8 KiB; keep tags small.", field="metadata")
    return checked


def check_provenance(provenance: object) -> Provenance | None:
    """None (not given), or one of ``PROVENANCES``."""
    if provenance is None:
        return None
    found = as_provenance(provenance)
    if found is None:
        raise InvalidInput(
            f"provenance must be one of {', '.join(PROVENANCES)}; got {provenance!r}.",
            field="provenance",
        )
    return found


def check_provenance_detail(detail: object) -> str | None:
    if detail is None:
        return None
    if not isinstance(detail, str) or not detail.strip():
        raise InvalidInput(
            "provenance_detail must be a non-empty string (the model, the tool, the source).",
            field="provenance_detail",
        )
    if len(detail) > MAX_PROVENANCE_DETAIL_CHARS or any(ord(ch) < 32 for ch in detail):
        raise InvalidInput(
            f"provenance_detail must be one line of at most {MAX_PROVENANCE_DETAIL_CHARS} "
            "characters: name the model, the tool or the source.",
            field="provenance_detail",
        )
    return detail


def check_provenances(provenances: object) -> tuple[Provenance, ...] | None:
    """A provenance filter: None (any), or a non-empty list of ``PROVENANCES``."""
    if provenances is None:
        return None
    if isinstance(provenances, str) or not isinstance(provenances, Sequence) or not provenances:
        raise InvalidInput(
            f"provenances must be a non-empty list of {', '.join(PROVENANCES)}; "
            "leave it out to match every provenance.",
            field="provenances",
        )
    checked = [as_provenance(p) for p in provenances]
    for given, found in zip(provenances, checked, strict=True):
        if found is None:
            raise InvalidInput(
                f"provenances holds {given!r}; use {', '.join(PROVENANCES)}.",
                field="provenances",
            )
    return tuple(p for p in checked if p is not None)


def check_validity(as_of: object, include_superseded: object) -> tuple[float | None, bool]:
    """``as_of``: None or a finite number of seconds since the epoch; not both."""
    if as_of is not None and (
        isinstance(as_of, bool) or not isinstance(as_of, int | float) or not math.isfinite(as_of)
    ):
        raise InvalidInput(
            f"as_of must be a finite number of seconds since the epoch (like created_at); "
            f"got {as_of!r}.",
            field="as_of",
        )
    if not isinstance(include_superseded, bool):
        raise InvalidInput("include_superseded must be true or false.", field="include_superseded")
    if as_of is not None and include_superseded:
        raise InvalidInput(
            "as_of and include_superseded exclude each other: as_of shows the versions "
            "valid at one moment, include_superseded every version; drop one.",
            field="as_of",
        )
    return (None if as_of is None else float(as_of)), include_superseded
