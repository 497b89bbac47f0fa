"""The opaque cursor of a memory listing: where the previous page ended.

A listing is ordered newest first, ties by record id ascending (``created_at`` desc,
``id`` asc), and the next page is the records after the last one shown (keyset paging:
``RecordStore.list(after=...)``). So a page is found at any depth in one indexed read,
and memories stored while a listing is walked (they are newer, so before every cursor)
never shift it: no item is listed twice or skipped. The cursor holds the last record's
``created_at`` and record id (a closed version's id is its own, not its memory's) as
base64url JSON; nothing else may rely on its form.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
from typing import Final

from memstack.errors import InvalidInput
from memstack.storage import Record

__all__ = [
    "MAX_CURSOR_CHARS",
    "decode_cursor",
    "decode_user_cursor",
    "encode_cursor",
    "encode_user_cursor",
]

MAX_CURSOR_CHARS: Final = 2_048
"""The longest cursor a listing hands out (a record id is at most 1 kB)."""
_PREFIX: Final = "c1."
_USER_PREFIX: Final = "u1."
_MAX_ID_BYTES: Final = 1_024


def encode_cursor(record: Record) -> str:
    """The cursor of the page that follows ``record``."""
    raw = json.dumps([record.created_at, record.id], ensure_ascii=False, separators=(",", ":"))
    return _packed(_PREFIX, raw)


def decode_cursor(cursor: object) -> tuple[float, str]:
    """The ``(created_at, record id)`` a cursor of ``encode_cursor`` holds; ``InvalidInput``
    naming ``cursor`` for anything else."""
    try:
        value = json.loads(_unpacked(_PREFIX, cursor))
    except ValueError:
        raise _bad(cursor) from None
    match value:
        case [float() | int() as at, str() as id] if (
            not isinstance(at, bool) and math.isfinite(at) and _storable(id)
        ):
            return float(at), id
    raise _bad(cursor)


def encode_user_cursor(user_id: str) -> str:
    """The cursor of the page of users that follows ``user_id`` (users go by id)."""
    return _packed(_USER_PREFIX, user_id)


def decode_user_cursor(cursor: object) -> str:
    """The user id a cursor of ``encode_user_cursor`` holds; ``InvalidInput`` naming
    ``cursor`` for anything else."""
    user_id = _unpacked(_USER_PREFIX, cursor)
    if not _storable(user_id):
        raise _bad(cursor)
    return user_id


def _packed(prefix: str, text: str) -> str:
    return prefix + base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def _unpacked(prefix: str, cursor: object) -> str:
    """The text a cursor of ``_packed(prefix, ...)`` holds; ``InvalidInput`` otherwise."""
    if not isinstance(cursor, str) or not cursor.startswith(prefix):
        raise _bad(cursor)
    if len(cursor) > MAX_CURSOR_CHARS:
        raise _bad(cursor)
    body = cursor[len(prefix) :]
    try:
        return base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise _bad(cursor) from None


def _storable(id: str) -> bool:
    """Whether ``id`` can be a record id (non-empty UTF-8 of at most 1 kB, no NUL)."""
    try:
        size = len(id.encode())
    except UnicodeEncodeError:  # a lone surrogate
        return False
    return 0 < size <= _MAX_ID_BYTES and "\x00" not in id


def _bad(cursor: object) -> InvalidInput:
    shown = repr(cursor) if not isinstance(cursor, str) else repr(cursor[:40])
    return InvalidInput(
        f"cursor {shown} is not a cursor of this listing: pass the next_cursor of the "
        "previous page as it was given, or leave cursor out to start from the first page.",
        field="cursor",
    )
