"""What memories weigh on PostgreSQL, read by ``memstack bench recall``'s footprint."""

import numpy as np
import numpy.typing as npt

from memstack.bench.footprint import postgres_footprint
from memstack.storage import PostgresRecordStore
from tests.storage.records import rec


def _rows(n: int, seed: int) -> npt.NDArray[np.float32]:
    vectors = np.random.default_rng(seed).normal(size=(n, 16)).astype(np.float32)
    unit: npt.NDArray[np.float32] = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    return unit


def test_a_namespace_with_its_own_index_is_weighed_apart_from_one_without(
    postgres_url: str, pg_schema: str
):
    store = PostgresRecordStore(postgres_url, schema=pg_schema, exact_limit=100)
    store.setup()
    try:
        store.upsert([rec(f"b{i}", "big", embedding=v) for i, v in enumerate(_rows(600, 1))])
        store.upsert([rec(f"s{i}", "small", embedding=v) for i, v in enumerate(_rows(30, 2))])
        assert store.ready("big")  # the bulk write built big's own index
        big = postgres_footprint(postgres_url, ["big"], schema=pg_schema)
        small = postgres_footprint(postgres_url, ["small"], schema=pg_schema)
    finally:
        store.close()
    assert big["rows"] == small["rows"] >= 630  # the whole table, whichever namespace
    assert big["table_bytes"] == small["table_bytes"] > 0
    assert big["ann_index_bytes"] > 0 and small["ann_index_bytes"] == 0
    assert big["ann_bytes_per_memory"] == round(big["ann_index_bytes"] / 600, 1)
    assert big["table_bytes_per_memory"] == round(big["table_bytes"] / big["rows"], 1)
    other = big["index_bytes"] - big["ann_index_bytes"]
    assert big["index_bytes_per_memory"] == round(other / big["rows"], 1)
    assert small["index_bytes_per_memory"] == round(small["index_bytes"] / small["rows"], 1)
