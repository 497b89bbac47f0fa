"""check_vector's fast path for float32 arrays: it decides by one dot product, and must
still refuse what the general path refuses and keep what it keeps."""

from __future__ import annotations

import re
import sys

import numpy as np
import pytest

from memstack.errors import InvalidInput
from memstack.storage._sqlite_query import canonical_json, record_params
from memstack.storage._validate import check_batch, check_vector
from memstack.storage.types import Record


@pytest.mark.parametrize(
    ("values", "reason"),
    [
        ([1.0, np.nan, 0.5], "NaN"),
        ([np.inf, 1.0], "NaN or infinite"),
        ([-np.inf, 1.0], "NaN or infinite"),
        ([np.nan, np.inf], "NaN"),
        ([0.0, 0.0, 0.0], "all zeros"),
        ([0.0, -0.0], "all zeros"),
    ],
)
def test_float32_vectors_that_cannot_be_stored_are_refused(
    values: list[float], reason: str
) -> None:
    with pytest.raises(InvalidInput, match=reason) as caught:
        check_vector(np.asarray(values, dtype=np.float32), "records[0].embedding")
    assert caught.value.field == "records[0].embedding"


@pytest.mark.parametrize(
    "values",
    [
        [3e38, 1.0],  # finite, but its square overflows float32
        [-3e38, 3e38],
        [1e-30, 0.0],  # not zero, but its square underflows to 0
        [1e-45, -1e-45],  # subnormal
        [0.6, 0.8],
    ],
)
def test_finite_nonzero_float32_vectors_are_kept_as_read_only_copies(values: list[float]) -> None:
    given = np.asarray(values, dtype=np.float32)
    checked = check_vector(given, "embedding")
    assert checked.dtype == np.float32
    assert np.array_equal(checked, given)
    assert not checked.flags.writeable
    given[0] = 7.0  # the caller's array may change; the checked copy does not
    assert checked[0] == np.float32(values[0])


def test_sqlite_params_keep_metadata_and_vector_bytes_exact() -> None:
    vector = check_vector(np.asarray([0.25, -1.5, 3e38], dtype=np.float32), "embedding")
    empty = Record(
        id="a", namespace="ns", text="t", created_at=1.0, updated_at=1.0, embedding=vector
    )
    params = record_params(empty)
    assert params[3] == "{}"
    assert params[10] == vector.astype("<f4").tobytes()
    assert np.array_equal(np.frombuffer(params[10], dtype="<f4"), vector)
    assert canonical_json({"b": [1, {}], "a": "é"}) == '{"a":"é","b":[1,{}]}'
    assert canonical_json([]) == "[]"


def _records(*vectors: np.ndarray) -> list[Record]:
    return [
        Record(id=f"r{i}", namespace="ns", text="t", created_at=1.0, updated_at=1.0, embedding=v)
        for i, v in enumerate(vectors)
    ]


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        ([1.0, np.nan], "NaN"),
        ([np.inf, 0.0], "NaN or infinite"),
        ([0.0, 0.0], "all zeros"),
    ],
)
def test_a_batch_names_the_record_whose_float32_vector_cannot_be_stored(
    bad: list[float], reason: str
) -> None:
    good = np.asarray([0.6, 0.8], dtype=np.float32)
    batch = _records(good, good.copy(), np.asarray(bad, dtype=np.float32), good.copy())
    with pytest.raises(InvalidInput, match=reason) as caught:
        check_batch(batch)
    assert caught.value.field == "records[2].embedding"


def test_a_batch_keeps_read_only_copies_of_every_storable_vector() -> None:
    given = [
        np.asarray(values, dtype=np.float32)
        for values in ([0.6, 0.8], [3e38, 1.0], [1e-30, 0.0], [-1.0, 0.0])
    ]
    checked = check_batch(_records(*given))
    kept = [r.embedding for r in checked.records]
    for vector, original in zip(kept, given, strict=True):
        assert vector is not None and not vector.flags.writeable
        assert np.array_equal(vector, original)
    for original in given:
        original[:] = 5.0  # the caller's arrays may change; the checked ones do not
    assert [float(v[0]) for v in kept if v is not None] == [
        float(np.float32(x)) for x in (0.6, 3e38, 1e-30, -1.0)
    ]


def test_a_batch_with_vectors_of_two_sizes_in_one_namespace_is_refused() -> None:
    batch = _records(
        np.asarray([0.6, 0.8], dtype=np.float32), np.asarray([1.0, 0.0, 0.0], dtype=np.float32)
    )
    with pytest.raises(
        InvalidInput, match=re.escape("3 dimensions but records[0].embedding has 2")
    ):
        check_batch(batch)


def test_each_checked_vector_of_a_batch_is_an_array_of_its_own() -> None:
    batch = check_batch(_records(*np.eye(3, dtype=np.float32)))
    for record in batch.records:
        assert record.embedding is not None and record.embedding.base is None


def test_a_checked_record_has_the_compact_dict_of_one_init_makes() -> None:
    given = _records(np.asarray([0.6, 0.8], dtype=np.float32))[0]
    [checked] = check_batch([given]).records
    assert checked == given
    assert sys.getsizeof(checked.__dict__) == sys.getsizeof(given.__dict__)
