"""A user's memories written out (``export``) and read back (``restore``).

An exported memory is a JSON object with the fields of a ``LongTermItem`` (times in
seconds since the epoch): every turn and fact, every version, with its context,
validity and provenance. A restore checks every item first (shape, then the secret
filter) and a bad one writes nothing; each text is embedded again with the server's
model, so an export moves between servers whatever model they embed with.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import Final

from memstack._json import JSON, to_json
from memstack.errors import InvalidInput
from memstack.longterm.memory import MAX_TEXT_CHARS, long_term_item
from memstack.longterm.types import LTM_KINDS, PROVENANCES
from memstack.secrets import find_secret
from memstack.service.types import CLOSED_REASONS as _REASONS
from memstack.storage import Record

__all__ = ["MAX_RESTORE_ITEMS", "check_items", "exported", "restored_record"]

MAX_RESTORE_ITEMS: Final = 1_000
"""Memories per restore call: one embedding batch and one transaction."""
_MAX_ID_CHARS: Final = 256
_TIMES: Final = ("created_at", "updated_at", "last_accessed_at", "valid_from", "valid_to")
_TEXTS: Final = ("context", "superseded_by", "closed_reason", "provenance_detail")


def exported(record: Record) -> dict[str, JSON]:
    """One stored record as an export lists it."""
    item = asdict(long_term_item(record))
    out = to_json(item, field="memory")
    assert isinstance(out, dict)
    return out


def restored_record(given: object, index: int, *, namespace: str, now: float) -> Record:
    """The record an exported item restores (no embedding yet); ``InvalidInput`` naming
    ``memories[index].<field>``."""
    where = f"memories[{index}]"
    if not isinstance(given, Mapping):
        raise InvalidInput(f"{where} must be an object, as an export lists it.", field=where)
    item = dict(given)
    record_id = _required(item, "id", where, limit=_MAX_ID_CHARS)
    text = _required(item, "text", where, limit=MAX_TEXT_CHARS)
    kind = item.get("kind", "fact")
    if kind not in LTM_KINDS:
        raise _bad(where, "kind", f"one of {', '.join(LTM_KINDS)}")
    provenance = item.get("provenance") or "imported"
    if provenance not in PROVENANCES:
        raise _bad(where, "provenance", f"one of {', '.join(PROVENANCES)}")
    if item.get("closed_reason") not in (None, *_REASONS):
        raise _bad(where, "closed_reason", f"null or one of {', '.join(_REASONS)}")
    times = {name: _time(item.get(name), name, where) for name in _TIMES}
    texts = {name: _text(item, name, where, limit=MAX_TEXT_CHARS) for name in _TEXTS}
    metadata = item.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise _bad(where, "metadata", "an object")
    checked = to_json(metadata, field=f"{where}.metadata")
    assert isinstance(checked, dict)
    importance = _time(item.get("importance", 0.5), "importance", where)
    if importance is None or not 0 <= importance <= 1:
        raise _bad(where, "importance", "a number from 0 to 1")
    _refuse_secrets(where, record_id, text, checked, texts)
    created = now if times["created_at"] is None else times["created_at"]
    return Record(
        id=record_id,
        namespace=namespace,
        text=text,
        kind=str(kind),
        importance=importance,
        metadata=checked,
        created_at=created,
        updated_at=times["updated_at"] or created,
        last_accessed_at=times["last_accessed_at"],
        valid_from=times["valid_from"],
        valid_to=times["valid_to"],
        context=texts["context"],
        superseded_by=texts["superseded_by"],
        closed_reason=texts["closed_reason"],
        provenance=str(provenance),
        provenance_detail=texts["provenance_detail"],
    )


def _refuse_secrets(
    where: str, record_id: str, text: str, metadata: dict[str, JSON], texts: dict[str, str | None]
) -> None:
    fields: dict[str, JSON] = {"id": record_id, "text": text, "metadata": metadata, **texts}
    found = find_secret(fields)
    if found is not None:
        named = f"{where}.{found.field}"
        raise InvalidInput(
            f"not restored: {named} looks like a secret ({found.kind.replace('_', ' ')}); "
            "credentials are never kept in long-term memory. Remove it and try again.",
            field=named,
        )


def _text(item: dict[str, object], name: str, where: str, *, limit: int) -> str | None:
    return None if item.get(name) is None else _required(item, name, where, limit=limit)


def _required(item: dict[str, object], name: str, where: str, *, limit: int) -> str:
    value = item.get(name)
    if not isinstance(value, str) or not value.strip() or len(value) > limit:
        raise _bad(where, name, f"a non-empty string of at most {limit} characters")
    return value


def _time(value: object, name: str, where: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise _bad(where, name, "a finite number (seconds since the epoch for a time)")
    return float(value)


def _bad(where: str, name: str, wanted: str) -> InvalidInput:
    return InvalidInput(f"{where}.{name} must be {wanted}.", field=f"{where}.{name}")


def check_items(items: object) -> Sequence[object]:
    if isinstance(items, str | bytes | Mapping) or not isinstance(items, Sequence):
        raise InvalidInput("memories must be a list of exported memories.", field="memories")
    if not 1 <= len(items) <= MAX_RESTORE_ITEMS:
        raise InvalidInput(
            f"give 1 to {MAX_RESTORE_ITEMS} memories a call; got {len(items)}.",
            field="memories",
        )
    return items
