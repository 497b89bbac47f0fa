"""Turning a TTL as callers give it into an absolute expiry time."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Final

from memstack.errors import InvalidInput

__all__ = ["MAX_TTL_SECONDS", "expiry_from_ttl"]

MAX_TTL_SECONDS: Final = 10 * 365 * 86_400


def expiry_from_ttl(ttl: object, *, now: float) -> float | None:
    """Seconds since the epoch when the memory expires, or None for no TTL.

    ``ttl`` is an ISO 8601 time (``"2025-01-15T12:00:00Z"``, as the REST API takes
    it; no zone means UTC), a ``datetime``, or a number of seconds from now. A time
    already past is accepted: the memory is stored expired, so reads never show it and
    the next prune deletes it (and an upsert with it expires the memory it replaces).
    """
    if ttl is None:
        return None
    if isinstance(ttl, bool):
        raise _bad(ttl)
    if isinstance(ttl, int | float):
        if not math.isfinite(ttl) or not 0 < ttl <= MAX_TTL_SECONDS:
            raise InvalidInput(
                f"ttl of {ttl!r} seconds is out of range; give 1 to {MAX_TTL_SECONDS} seconds "
                "or an ISO 8601 time in the future.",
                field="ttl",
            )
        return now + float(ttl)
    if isinstance(ttl, str):
        try:
            ttl = datetime.fromisoformat(ttl.strip().replace("Z", "+00:00").replace("z", "+00:00"))
        except ValueError:
            raise _bad(ttl) from None
    if isinstance(ttl, datetime):
        moment = ttl if ttl.tzinfo else ttl.replace(tzinfo=UTC)
        expires = moment.timestamp()
        if expires - now > MAX_TTL_SECONDS:
            raise InvalidInput("ttl is more than ten years away.", field="ttl")
        return expires
    raise _bad(ttl)


def _bad(value: object) -> InvalidInput:
    return InvalidInput(
        f"ttl {value!r} is not a time: give an ISO 8601 time such as "
        '"2030-01-15T12:00:00Z" or a number of seconds.',
        field="ttl",
    )
