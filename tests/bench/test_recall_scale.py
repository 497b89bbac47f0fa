import json
from pathlib import Path

from click.testing import CliRunner

from memstack.bench.scale import synthetic_memories
from memstack.cli import main


def test_synthetic_memories_are_deterministic_and_distinct():
    assert synthetic_memories(50) == synthetic_memories(50)
    assert len(set(synthetic_memories(500))) == 500


def test_bench_recall_writes_json_and_png(tmp_path: Path):
    out = tmp_path / "recall.json"
    result = CliRunner().invoke(
        main,
        [
            "bench",
            "recall",
            "--sizes",
            "50,200",
            "--stores",
            "memory,sqlite",
            "--queries",
            "5",
            "--embedder",
            "hash",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    assert [r["store"] for r in report["runs"]] == ["memory", "sqlite"]
    for run in report["runs"]:
        assert [p["size"] for p in run["points"]] == [50, 200]
        assert all(p["recall_p95_ms"] >= p["recall_p50_ms"] > 0 for p in run["points"])
    png = out.with_suffix(".png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_bench_recall_rejects_bad_options(tmp_path: Path):
    runner = CliRunner()
    bad_store = runner.invoke(
        main, ["bench", "recall", "--stores", "mongo", "--out", str(tmp_path / "r.json")]
    )
    assert bad_store.exit_code == 2 and "unknown store mongo" in bad_store.output
    no_url = runner.invoke(
        main, ["bench", "recall", "--stores", "postgres"], env={"MEMSTACK_POSTGRES_URL": ""}
    )
    assert no_url.exit_code == 2 and "--postgres-url" in no_url.output
    bad_sizes = runner.invoke(main, ["bench", "recall", "--sizes", "ten"])
    assert bad_sizes.exit_code == 2
