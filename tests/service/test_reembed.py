"""Embedding a store's namespaces again with another model, on every backend: all of a
namespace's records (history and expired ones too) get the new model's vectors and
nothing else changes; a stopped run is taken up; the old model is then refused."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from memstack import ManualClock
from memstack.cli import main
from memstack.embeddings import Embedder, HashEmbedder, Vectors
from memstack.errors import ConfigError, WriteConflict
from memstack.service.reembed import (
    _EVERY,
    _copy_page,
    embedded_text,
    namespace_models,
    reembed,
)
from memstack.storage import Filter, Namespace, Record, RecordStore, SQLiteRecordStore

OLD = HashEmbedder(dim=8)
NEW = HashEmbedder(dim=16)
MEM = Namespace("mem", "acme", "agent:a").encode()
CHUNKS = Namespace("kb", "acme", "chunks").encode()
KEYS = Namespace("auth", "keys").encode()


class Counting:
    """``NEW``, counting the texts it embeds."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    @property
    def dim(self) -> int:
        return NEW.dim

    @property
    def model_id(self) -> str:
        return NEW.model_id

    def embed_batch(self, texts: Sequence[str]) -> Vectors:
        self.texts.extend(texts)
        return NEW.embed_batch(texts)


def _record(id: str, text: str, now: float, **fields: object) -> Record:
    values: dict[str, object] = {"created_at": now - 100 + len(id), "updated_at": now - 50}
    values.update(fields)
    record = Record(id=id, namespace=MEM, text=text, **values)  # type: ignore[arg-type]
    return dataclasses.replace(record, embedding=OLD.embed_batch([embedded_text(record)])[0])


def fill(records: RecordStore, clock: ManualClock) -> list[Record]:
    """Memories of the old model: current, superseded, expired, one without a vector; a
    knowledge passage; a namespace of no model."""
    now = clock.now()
    mem = [
        _record("m1", "k: Bob lives in Berlin", now),
        _record(
            "m0",
            "k: Bob lives in Lisbon",
            now,
            valid_to=now - 10,
            superseded_by="m1",
            closed_reason="superseded",
        ),
        _record("m2", "k: allergic to peanuts", now, expires_at=now - 1),
        *[_record(f"n{i}", f"k: note {i}", now, importance=0.25) for i in range(4)],
        dataclasses.replace(_record("m3", "k: no vector", now), embedding=None),
    ]
    records.write(upserts=mem, model_id=OLD.model_id)
    passage = Record(
        id="d1:0",
        namespace=CHUNKS,
        text="Guide\nBerlin is big",
        metadata={"doc_id": "d1", "title": "Guide", "passage": "Berlin is big"},
        created_at=now,
        updated_at=now,
        embedding=OLD.embed_batch(["Guide: Berlin is big"])[0],
    )
    records.write(upserts=[passage], model_id=OLD.model_id)
    records.write(
        upserts=[Record(id="k1", namespace=KEYS, text="key", created_at=now, updated_at=now)]
    )
    return mem


def every(records: RecordStore, namespace: str) -> dict[str, Record]:
    return {r.id: r for r in records.list(namespace, filter=_EVERY, limit=1000)}


def test_every_record_gets_the_new_models_vector_and_keeps_the_rest(
    records: RecordStore, clock: ManualClock
) -> None:
    before = fill(records, clock)
    calls: list[tuple[str, int, int]] = []
    done = reembed(records, NEW, batch=3, progress=lambda *call: calls.append(call))
    assert {(d.namespace, d.records, d.embedded, d.from_model) for d in done} == {
        (MEM, 8, 7, "hash:8"),
        (CHUNKS, 1, 1, "hash:8"),
    }
    after = every(records, MEM)
    assert after == {r.id: r for r in before}  # every field but the vector, unchanged
    for record in before:
        got = after[record.id].embedding
        if record.embedding is None:
            assert got is None
        else:
            assert got is not None
            np.testing.assert_allclose(got, NEW.embed_batch([record.text])[0], atol=1e-6)
    chunk = every(records, CHUNKS)["d1:0"].embedding
    assert chunk is not None
    np.testing.assert_allclose(chunk, NEW.embed_batch(["Guide: Berlin is big"])[0], atol=1e-6)
    assert [(s.namespace, s.dim, s.model_id) for s in namespace_models(records)] == [
        (CHUNKS, 16, "hash:16"),
        (MEM, 16, "hash:16"),
    ]
    assert calls[-1] == (MEM, 8, 8) and [c[1] for c in calls if c[0] == MEM] == [3, 6, 8]
    assert records.namespaces("reembed/") == []
    assert list(every(records, KEYS)) == ["k1"]
    hits = records.vector_search(MEM, NEW.embed_batch(["Bob Berlin"])[0], k=1, model_id="hash:16")
    assert hits[0].record.id == "m1"
    assert reembed(records, NEW) == []  # nothing left of another model


def test_the_old_model_is_refused_naming_the_command(records: RecordStore, clock: ManualClock):
    fill(records, clock)
    query = NEW.embed_batch(["Bob"])[0]
    with pytest.raises(ConfigError, match=r"'hash:8', not 'hash:16'.*memstack memories reembed"):
        records.vector_search(MEM, query, k=1, model_id=NEW.model_id)
    with pytest.raises(ConfigError, match="memstack memories reembed"):
        records.gather(MEM, query="Bob", vector=query, k=1, model_id=NEW.model_id)
    with pytest.raises(ConfigError, match="memstack memories reembed"):
        records.write(
            upserts=[dataclasses.replace(_record("x", "k: x", clock.now()), embedding=query)],
            model_id=NEW.model_id,
        )
    reembed(records, NEW)
    with pytest.raises(ConfigError, match=r"'hash:16', not 'hash:8'"):
        records.vector_search(MEM, OLD.embed_batch(["Bob"])[0], k=1, model_id=OLD.model_id)


def test_a_stopped_run_is_taken_up_where_it_stopped(records: RecordStore, clock: ManualClock):
    fill(records, clock)
    staging = Namespace("reembed", MEM).encode()
    first = records.list(MEM, filter=_EVERY, limit=3, order="created_asc")
    _copy_page(records, NEW, staging, first)  # the run stopped after one batch
    stale = dataclasses.replace(
        first[0], id="gone", namespace=staging, embedding=NEW.embed_batch(["gone"])[0]
    )
    records.write(upserts=[stale], model_id=NEW.model_id)  # deleted from MEM since
    counting = Counting()
    done = reembed(records, counting, prefix="mem/")
    assert [(d.namespace, d.records, d.embedded) for d in done] == [(MEM, 8, 4)]
    assert len(counting.texts) == 4  # the batch copied already is not embedded again
    assert sorted(every(records, MEM)) == ["m0", "m1", "m2", "m3", "n0", "n1", "n2", "n3"]
    assert records.namespace_info(CHUNKS) is not None  # outside the prefix: left as it was
    assert namespace_models(records, "kb/")[0].model_id == "hash:8"


def test_a_copy_whose_namespace_was_emptied_since_is_dropped_not_put_back(
    records: RecordStore, clock: ManualClock
) -> None:
    fill(records, clock)
    staging = Namespace("reembed", MEM).encode()
    _copy_page(records, NEW, staging, records.list(MEM, filter=_EVERY, limit=100))
    records.delete_namespace(MEM)  # erased while the stopped run's copy was kept
    done = reembed(records, NEW, prefix="mem/")
    assert [(d.namespace, d.records, d.from_model) for d in done] == []
    assert records.namespace_info(MEM) is None
    assert len(every(records, MEM)) == 0  # what was erased stays erased
    assert records.namespaces("reembed/") == []


def test_every_embeds_again_a_namespace_of_the_model_already(
    records: RecordStore, clock: ManualClock
) -> None:
    fill(records, clock)
    reembed(records, NEW)
    counting = Counting()
    assert [d.namespace for d in reembed(records, counting, every=True, prefix="kb/")] == [CHUNKS]
    assert counting.texts == ["Guide: Berlin is big"]


def _sqlite_store(path: Path, clock: ManualClock) -> list[Record]:
    store = SQLiteRecordStore(path, clock=clock)
    store.setup()
    try:
        return fill(store, clock)
    finally:
        store.close()


def test_the_command_embeds_the_servers_store_again(tmp_path: Path, clock: ManualClock):
    db = tmp_path / "memstack.db"
    _sqlite_store(db, clock)
    env = {"MEMSTACK_MEMORY_EMBEDDING_PROVIDER": "hash", "MEMSTACK_MEMORY_EMBEDDING_MODEL": "16"}
    runner = CliRunner(env=env)
    status = runner.invoke(main, ["models", "status", "--db", str(db)])
    assert status.exit_code == 0, status.output
    assert f"{MEM}  hash:8  8-d  8 records  (another model)" in status.output
    assert "memstack memories reembed" in status.output
    dry = runner.invoke(main, ["memories", "reembed", "--db", str(db), "--dry-run"])
    assert dry.exit_code == 0 and "2 namespace(s) to embed again" in dry.output
    done = runner.invoke(main, ["memories", "reembed", "--db", str(db), "--batch-size", "2"])
    assert done.exit_code == 0, done.output
    assert f"{MEM}: 8 records, 7 embedded (from hash:8)" in done.output
    assert "done: 2 namespace(s) now hold hash:16 vectors" in done.output
    status = runner.invoke(main, ["models", "status", "--db", str(db)])
    assert "another model" not in status.output and f"{MEM}  hash:16  16-d" in status.output
    store = SQLiteRecordStore(db)
    try:
        info = store.namespace_info(MEM)
        assert info is not None and (info.dim, info.model_id) == (16, "hash:16")
        assert store.count(MEM, Filter(include_expired=True, include_superseded=True)) == 8
    finally:
        store.close()


def test_embedders_here_are_embedders() -> None:
    assert isinstance(Counting(), Embedder)


def _old(id: str, text: str, clock: ManualClock) -> Record:
    return _record(id, text, clock.now(), created_at=clock.now(), updated_at=clock.now())


def test_what_a_running_server_writes_meanwhile_is_not_lost(
    records: RecordStore, clock: ManualClock
) -> None:
    fill(records, clock)
    writes = iter(
        [
            lambda: records.write(
                upserts=[_old("w1", "k: written meanwhile", clock)], model_id="hash:8"
            ),
            lambda: records.write(
                upserts=[_old("n0", "k: note 0, changed", clock)], model_id="hash:8"
            ),
            lambda: records.delete(MEM, ["n1"]),
        ]
    )

    def write_meanwhile(namespace: str, done: int, total: int) -> None:
        if namespace == MEM:
            clock.advance(1)
            next(writes, lambda: None)()

    done = reembed(records, NEW, batch=3, progress=write_meanwhile)
    assert {(d.namespace, d.records) for d in done} == {(MEM, 8), (CHUNKS, 1)}
    after = every(records, MEM)
    assert "n1" not in after and after["n0"].text == "k: note 0, changed"
    for id in ("w1", "n0"):
        got = after[id].embedding
        assert got is not None
        np.testing.assert_allclose(got, NEW.embed_batch([after[id].text])[0], atol=1e-6)
    assert records.namespaces("reembed/") == []


def test_a_namespace_that_keeps_changing_is_left_whole_with_its_model(
    records: RecordStore, clock: ManualClock
) -> None:
    before = {r.id for r in fill(records, clock)}
    made: list[str] = []

    def write_each_time(namespace: str, done: int, total: int) -> None:
        if namespace == MEM:  # after each pass's one page
            clock.advance(1)
            made.append(f"w{len(made)}")
            records.write(upserts=[_old(made[-1], "k: busy", clock)], model_id="hash:8")

    with pytest.raises(WriteConflict, match=r"changed during each of 5 passes.*reembed"):
        reembed(records, NEW, prefix="mem/", progress=write_each_time)
    assert set(every(records, MEM)) == before | set(made)
    assert namespace_models(records, "mem/")[0].model_id == "hash:8"


def test_replace_namespace_refuses_a_copy_of_another_state(
    records: RecordStore, clock: ManualClock
) -> None:
    fill(records, clock)
    staging = Namespace("reembed", MEM).encode()
    _copy_page(records, NEW, staging, list(every(records, MEM).values()))
    records.write(upserts=[_old("late", "k: late", clock)], model_id="hash:8")
    with pytest.raises(WriteConflict, match=r"changed since .* copied it.*\['late'\]"):
        records.replace_namespace(staging, MEM)
    assert "late" in every(records, MEM) and "late" not in every(records, staging)
    assert namespace_models(records, "mem/")[0].model_id == "hash:8"
    _copy_page(records, NEW, staging, [every(records, MEM)["late"]])
    assert records.replace_namespace(staging, MEM) == 9
    assert namespace_models(records, "mem/")[0].model_id == "hash:16"
