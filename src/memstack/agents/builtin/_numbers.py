"""The numbers the math tools take and give: finite floats the model can act on.

JSON lets a model send an integer of any size; one too large for a float (about 1.8e308)
is refused by name instead of overflowing halfway through a formula, and a result that
overflows is refused the same way, so no tool answers ``inf`` or ``nan``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Final

from memstack.agents.builtin._errors import tool_error
from memstack.errors import ToolInputError

__all__ = ["LIMIT_TEXT", "checked_result", "checked_results", "finite", "tool_error"]

LIMIT_TEXT: Final = "the limit is about 1.8e308"


def finite(value: object, *, tool: str, field: str) -> float:
    """``value`` (a JSON number) as a finite float, or a ``ToolInputError`` naming ``field``."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise tool_error(tool, field, f"`{field}` must be a number.")
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if not math.isfinite(number):
        raise tool_error(tool, field, f"`{field}` is too large ({LIMIT_TEXT}).")
    return number


def checked_result(compute: Callable[[], float], *, tool: str, field: str, what: str) -> float:
    """``compute()``, refused when it overflows or leaves the real numbers."""
    return checked_results(lambda: {what: compute()}, tool=tool, field=field, what=what)[what]


def checked_results(
    compute: Callable[[], Mapping[str, float]], *, tool: str, field: str, what: str = "the result"
) -> dict[str, float]:
    """``compute()``: named results, each refused when it overflows or is undefined."""
    try:
        values = dict(compute())
    except OverflowError:
        raise _too_large(tool, field, what) from None
    except (ValueError, ZeroDivisionError):
        raise _undefined(tool, field, what) from None
    for what, value in values.items():
        if math.isnan(value):
            raise _undefined(tool, field, what)
        if math.isinf(value):
            raise _too_large(tool, field, what)
    return values


def _too_large(tool: str, field: str, what: str) -> ToolInputError:
    return tool_error(tool, field, f"{what} is too large ({LIMIT_TEXT}); use smaller values.")


def _undefined(tool: str, field: str, what: str) -> ToolInputError:
    return tool_error(tool, field, f"{what} is undefined for these values.")
