"""The one rule for a TTL as callers give it, and the expiry time it gives.

Every way in (REST's fast path and FastAPI routes, MCP, the client, the library) reaches
``check_ttl`` or ``expiry_from_ttl``, so a TTL is refused with the same message
everywhere: a number of seconds must be finite and from ``MIN_TTL_SECONDS`` to
``MAX_TTL_SECONDS``; a time must be ISO 8601 (or a ``datetime``) at most ten years away.
"""

from __future__ import annotations

import math
import reprlib
from datetime import UTC, datetime
from typing import Final

from memstack.errors import InvalidInput

__all__ = ["MAX_TTL_SECONDS", "MIN_TTL_SECONDS", "check_ttl", "expiry_from_ttl"]

MIN_TTL_SECONDS: Final = 1
"""Shorter would store a memory expired before anyone could read it (0.5, 1e-133)."""
MAX_TTL_SECONDS: Final = 10 * 365 * 86_400


def check_ttl(ttl: object) -> None:
    """Raise ``InvalidInput`` (field ``ttl``) unless ``ttl`` is None, a number of
    seconds in range, an ISO 8601 time or a ``datetime``. How far away a time is
    depends on the clock of whoever stores it: ``expiry_from_ttl`` checks that."""
    _read(ttl)


def expiry_from_ttl(ttl: object, *, now: float) -> float | None:
    """Seconds since the epoch when the memory expires, or None for no TTL.

    ``ttl`` is an ISO 8601 time (``"2025-01-15T12:00:00Z"``, as the REST API takes
    it; no zone means UTC), a ``datetime``, or a number of seconds from now. A time
    already past is accepted: the memory is stored expired, so reads never show it and
    the next prune deletes it (and an upsert with it expires the memory it replaces).
    """
    read = _read(ttl)
    if read is None or isinstance(read, float):
        return None if read is None else now + read
    expires = read.timestamp()
    if expires - now > MAX_TTL_SECONDS:
        raise InvalidInput("ttl is more than ten years away.", field="ttl")
    return expires


def _read(ttl: object) -> float | datetime | None:
    """Seconds (checked), a time with its zone, or None."""
    if ttl is None:
        return None
    if isinstance(ttl, bool):
        raise _bad(ttl)
    if isinstance(ttl, int):  # compared as an int: 2**1024 has no float
        if not MIN_TTL_SECONDS <= ttl <= MAX_TTL_SECONDS:
            raise _out_of_range(ttl)
        return float(ttl)
    if isinstance(ttl, float):
        if not (math.isfinite(ttl) and MIN_TTL_SECONDS <= ttl <= MAX_TTL_SECONDS):
            raise _out_of_range(ttl)
        return ttl
    if isinstance(ttl, str):
        try:
            ttl = datetime.fromisoformat(ttl.strip().replace("Z", "+00:00").replace("z", "+00:00"))
        except ValueError:
            raise _bad(ttl) from None
    if isinstance(ttl, datetime):
        return ttl if ttl.tzinfo else ttl.replace(tzinfo=UTC)
    raise _bad(ttl)


def _out_of_range(seconds: float) -> InvalidInput:
    return InvalidInput(
        f"ttl of {_shown(seconds)} seconds is out of range; give {MIN_TTL_SECONDS} to "
        f"{MAX_TTL_SECONDS} seconds or an ISO 8601 time in the future.",
        field="ttl",
    )


def _shown(seconds: float) -> str:
    """``seconds`` for a message: a huge integer as its order of magnitude (the repr of
    10**5000 raises ValueError, and 2**1024's is 309 digits)."""
    if isinstance(seconds, int) and abs(seconds) >= 10**15:
        sign = "-" if seconds < 0 else ""
        return f"about {sign}10^{int(abs(seconds).bit_length() * math.log10(2))}"
    return repr(seconds)


def _bad(value: object) -> InvalidInput:
    try:
        shown = reprlib.repr(value)  # a body's 1 MiB string: its start
    except ValueError:  # an integer of more than 4300 digits inside a list
        shown = f"a {type(value).__name__}"
    return InvalidInput(
        f"ttl {shown} is not a time: give an ISO 8601 time such as "
        '"2030-01-15T12:00:00Z" or a number of seconds.',
        field="ttl",
    )
