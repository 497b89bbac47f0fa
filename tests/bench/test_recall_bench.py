import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from memstack.bench.scale import RecallBench, run_recall
from memstack.bench.synth import embed_phrases, synth_queries
from memstack.cli import main
from memstack.clock import SystemClock
from memstack.embeddings import HashEmbedder
from memstack.storage import InMemoryRecordStore, PostgresRecordStore

POINT_FIELDS = {
    "size",
    "namespaces",
    "storage",
    "recall_p50_ms",
    "recall_p95_ms",
    "floor_p50_ms",
    "floor_p95_ms",
    "ratio_p50",
    "ratio_p95",
    "after_write_p50_ms",
    "after_write_p95_ms",
    "after_write_ratio_p50",
    "after_write_ratio_p95",
    "writes_stored",
    "ann_recall_at_10",
    "ingest_per_s",
    "rss_mb",
    "vectors_mb",
    "index_wait_s",
    "rss_ratio",
    "after_load_p50_ms",
    "after_load_p95_ms",
    "after_load_floor_p50_ms",
    "after_load_floor_p95_ms",
    "after_load_ratio_p50",
    "after_load_ratio_p95",
    "after_load_ann_recall_at_10",
    "index_serves_s",
}


def _recall(out: Path, *extra: str) -> list[str]:
    return [
        "bench",
        "recall",
        "--sizes",
        "200,500",
        "--stores",
        "sqlite,memory",
        "--queries",
        "6",
        "--writes",
        "3",
        "--embedder",
        "hash",
        "--out",
        str(out),
        *extra,
    ]


def test_bench_recall_writes_every_field(tmp_path: Path):
    out = tmp_path / "recall.json"
    result = CliRunner().invoke(main, _recall(out))
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    assert report["embedder"] == "hash:64" and report["shape"] == "one-namespace"
    assert report["model_rss_mb"] >= 0 and 0 < report["synth_fidelity"] <= 1
    assert [r["store"] for r in report["runs"]] == ["sqlite", "memory"]
    for run in report["runs"]:
        assert [p["size"] for p in run["points"]] == [200, 500]
        for point in run["points"]:
            assert set(point) == POINT_FIELDS
            assert point["storage"] is None  # read on PostgreSQL only
            assert point["recall_p95_ms"] >= point["recall_p50_ms"] > 0
            assert point["floor_p95_ms"] >= point["floor_p50_ms"] > 0
            assert point["ratio_p95"] > 0 and point["after_write_ratio_p95"] > 0
            assert point["writes_stored"] == 3 and point["namespaces"] == 1
            assert point["ann_recall_at_10"] == point["after_load_ann_recall_at_10"] == 1.0
            assert point["after_load_p95_ms"] >= point["after_load_p50_ms"] > 0
            assert point["after_load_ratio_p95"] > 0
            assert 0 <= point["index_serves_s"] <= point["index_wait_s"]
            assert point["ingest_per_s"] > 0 and point["rss_mb"] > 0
            in_process = point["rss_mb"] - point["vectors_mb"]
            floor = run["rss_start_mb"] + point["vectors_mb"]
            assert point["rss_ratio"] == pytest.approx(in_process / floor, abs=1e-3)
    assert "floor p95" in result.output and "RSS ratio" in result.output
    assert "after-load p95" in result.output and "serves s" in result.output
    assert out.with_suffix(".png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_without_matplotlib_the_png_is_skipped_with_a_note(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    out = tmp_path / "recall.json"
    result = CliRunner().invoke(main, _recall(out, "--stores", "memory"))
    assert result.exit_code == 0, result.output
    assert "no PNG" in result.output and "memstack[bench]" in result.output
    assert out.exists() and not out.with_suffix(".png").exists()


async def test_many_namespaces_spreads_rows_over_one_namespace_per_hundred():
    embedder = HashEmbedder()
    bench = RecallBench(
        embedder=embedder,
        phrases=embed_phrases(embedder),
        sizes=(200, 500),
        shape="many-namespaces",
        queries=tuple(synth_queries(6)),
        writes=("Alice bought a kayak yesterday",),
        clock=SystemClock(),
    )
    store = InMemoryRecordStore()
    store.setup()
    run = await run_recall(bench, store=store, store_name="memory")
    names = store.namespaces(bench.namespace_prefix)
    assert len(names) == 5
    assert [store.count(name) for name in names] == [100] * 5
    assert [p.namespaces for p in run.points] == [2, 5]
    assert all(p.ann_recall_at_10 == 1.0 for p in run.points)
    assert all(p.writes_stored == 1 for p in run.points)


async def test_cleanup_deletes_the_runs_collections():
    embedder = HashEmbedder()
    bench = RecallBench(
        embedder=embedder,
        phrases=embed_phrases(embedder),
        sizes=(150,),
        shape="one-namespace",
        queries=tuple(synth_queries(2)),
        writes=(),
        clock=SystemClock(),
    )
    store = InMemoryRecordStore()
    store.setup()
    run = await run_recall(bench, store=store, store_name="memory", cleanup=True)
    assert run.points[0].after_write_p95_ms is None
    assert store.namespaces(bench.namespace_prefix) == []


def test_bench_recall_rejects_bad_options_before_any_work(tmp_path: Path):
    runner = CliRunner()
    out = tmp_path / "r.json"
    bad_store = runner.invoke(main, ["bench", "recall", "--stores", "mongo", "--out", str(out)])
    assert bad_store.exit_code == 2 and "unknown store mongo" in bad_store.output
    no_url = runner.invoke(
        main,
        ["bench", "recall", "--stores", "sqlite,postgres", "--out", str(out)],
        env={"MEMSTACK_POSTGRES_URL": ""},
    )
    assert no_url.exit_code == 2 and "postgres needs --postgres-url" in no_url.output
    bad_sizes = runner.invoke(main, ["bench", "recall", "--sizes", "ten", "--out", str(out)])
    assert bad_sizes.exit_code == 2
    assert not out.exists()


def test_bench_recall_on_postgres_leaves_nothing_behind(postgres_url: str, tmp_path: Path):
    out = tmp_path / "pg.json"
    args = ["--stores", "postgres", "--postgres-url", postgres_url, "--shape", "many-namespaces"]
    result = CliRunner().invoke(main, _recall(out, *args))
    assert result.exit_code == 0, result.output
    (run,) = json.loads(out.read_text())["runs"]
    assert run["store"] == "postgres"
    assert [p["namespaces"] for p in run["points"]] == [2, 5]
    assert all(p["ann_recall_at_10"] == 1.0 for p in run["points"])
    for point in run["points"]:  # what the rows weighed, read once the store was ready
        storage = point["storage"]
        assert storage["rows"] >= point["size"] and storage["table_bytes"] > 0
        assert storage["ann_index_bytes"] == 0  # namespaces this small have no index
    assert "storage once ready" in result.output
    store = PostgresRecordStore.from_url(postgres_url)
    try:
        assert store.namespaces("ltm_bench-") == []
    finally:
        store.close()
