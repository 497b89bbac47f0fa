"""check_whole: the one check of a whole-number setting."""

from __future__ import annotations

import pytest

from memstack._counts import check_whole
from memstack.errors import InvalidInput


@pytest.mark.parametrize(("value", "low", "high"), [(1, 1, None), (7, 2, 7), (0, 0, 0)])
def test_whole_numbers_in_bounds_pass_through(value: int, low: int, high: int | None):
    assert check_whole(value, "n", low=low, high=high) == value


@pytest.mark.parametrize(
    ("value", "low", "high", "says"),
    [
        (0, 1, None, ">= 1"),
        (True, 1, None, ">= 1"),
        (2.0, 1, None, ">= 1"),
        ("3", 1, None, ">= 1"),
        (None, 1, None, ">= 1"),
        (1, 2, 512, "between 2 and 512"),
        (513, 2, 512, "between 2 and 512"),
    ],
)
def test_anything_else_is_refused_naming_the_field_and_the_bounds(
    value: object, low: int, high: int | None, says: str
):
    with pytest.raises(InvalidInput) as refused:
        check_whole(value, "batch_size", low=low, high=high)
    assert refused.value.field == "batch_size"
    assert str(refused.value) == f"batch_size is {value!r}; pass a whole number {says}."
