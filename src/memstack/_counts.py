"""The one check of a whole-number setting (a size, a count, a batch), with the error
that names the field and what to pass."""

from __future__ import annotations

from memstack.errors import InvalidInput

__all__ = ["check_whole"]


def check_whole(value: object, field: str, *, low: int = 1, high: int | None = None) -> int:
    """``value`` when it is an int (not a bool) from ``low`` to ``high`` (no upper bound
    when None), else ``InvalidInput`` naming ``field``."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or value < low
        or (high is not None and value > high)
    ):
        bounds = f"between {low} and {high}" if high is not None else f">= {low}"
        raise InvalidInput(f"{field} is {value!r}; pass a whole number {bounds}.", field=field)
    return value
