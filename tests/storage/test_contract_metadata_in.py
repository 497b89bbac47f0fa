"""``Filter.metadata_in`` (issue 34: a memory search filtered by its metadata): a value at
any depth is one of a few scalars, compared as ``Filter.metadata`` compares, selected in
the database on every backend and for every filtered read."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from memstack.errors import InvalidInput
from memstack.storage import Filter, MetadataIn, Record, RecordStore
from tests.storage.records import rec
from tests.storage.test_contract import FILTERED_READS, _filter_records

ODD = "odd.key[0] $'\\\"\n"
"""A key on the way to the value with what a JSON path would read as syntax or escape."""


def _records() -> list[Record]:
    return [
        *_filter_records(),
        rec("r5", text="memo five", embedding=[0.7, 0.7], metadata={ODD: {"k\"'": "v"}}),
    ]


def _in(*path: str, values: tuple[Any, ...]) -> MetadataIn:
    return MetadataIn(path=path, values=values)


CASES: list[tuple[str, Filter, set[str]]] = [
    ("one", Filter(metadata_in=(_in("color", values=("blue", "green")),)), {"r2"}),
    ("any", Filter(metadata_in=(_in("color", values=("red", "blue")),)), {"r1", "r2", "r3", "r4"}),
    ("int-is-float", Filter(metadata_in=(_in("n", values=(1,)),)), {"r1", "r2"}),
    ("float-is-int", Filter(metadata_in=(_in("n", values=(1.0,)),)), {"r1", "r2"}),
    ("bool-not-int", Filter(metadata_in=(_in("n", values=(True,)),)), {"r3"}),
    ("nested", Filter(metadata_in=(_in("nested", "x", values=(1,)),)), {"r2"}),
    ("nested-absent", Filter(metadata_in=(_in("nested", "w", values=("z",)),)), set()),
    ("through-a-string", Filter(metadata_in=(_in("color", "x", values=("red",)),)), set()),
    ("null", Filter(metadata_in=(_in("missing", values=(None,)),)), {"r3"}),
    ("null-needs-key", Filter(metadata_in=(_in("nope", values=(None,)),)), set()),
    ("no-values", Filter(metadata_in=(_in("color", values=()),)), set()),
    ("escapes", Filter(metadata_in=(_in("quote", values=('say "hi"\n',)),)), {"r4"}),
    ("list-is-not-an-item", Filter(metadata_in=(_in("tags", values=("a",)),)), set()),
    ("no-array-index", Filter(metadata_in=(_in("tags", "0", values=("a",)),)), set()),
    ("odd-keys", Filter(metadata_in=(_in(ODD, "k\"'", values=("v",)),)), {"r5"}),
    (
        "all-hold",
        Filter(metadata_in=(_in("color", values=("red",)), _in("size", values=(2, 3)))),
        {"r1", "r4"},
    ),
    (
        "with-equality",
        Filter(metadata={"color": "red"}, metadata_in=(_in("size", values=(3, 9)),)),
        {"r4"},
    ),
]


@pytest.mark.parametrize(("read_name", "read"), FILTERED_READS, ids=[r[0] for r in FILTERED_READS])
@pytest.mark.parametrize(("case", "wanted", "expected"), CASES, ids=[c[0] for c in CASES])
def test_metadata_in(
    store: RecordStore,
    read_name: str,
    read: Callable[[RecordStore, Filter], set[str] | int],
    case: str,
    wanted: Filter,
    expected: set[str],
) -> None:
    store.upsert(_records())
    assert read(store, wanted) == (len(expected) if read_name == "count" else expected)


BAD: list[tuple[str, MetadataIn, str]] = [
    ("no-path", _in(values=("x",)), "filter.metadata_in[0].path"),
    ("too-deep", _in(*"abcdefghi", values=("x",)), "filter.metadata_in[0].path"),
    ("nul-key", _in("a\x00", values=("x",)), "filter.metadata_in[0].path"),
    ("list-value", _in("a", values=(["x"],)), "filter.metadata_in[0].values"),
    ("object-value", _in("a", values=({"x": 1},)), "filter.metadata_in[0].values"),
    ("nan-value", _in("a", values=(float("nan"),)), "filter.metadata_in[0].values[0]"),
    ("nul-value", _in("a", values=("x\x00",)), "filter.metadata_in[0].values"),
]


@pytest.mark.parametrize(("name", "condition", "field"), BAD, ids=[b[0] for b in BAD])
def test_a_bad_condition_names_its_field(
    store: RecordStore, name: str, condition: MetadataIn, field: str
) -> None:
    with pytest.raises(InvalidInput) as raised:
        store.count("ns", Filter(metadata_in=(condition,)))
    assert raised.value.field == field
