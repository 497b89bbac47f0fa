import asyncio
import json
from pathlib import Path

import numpy as np
from click.testing import CliRunner

from memstack.bench.ingest import UPSERT_ROWS, run_ingest
from memstack.cli import main
from memstack.clock import SystemClock
from memstack.embeddings import HashEmbedder
from memstack.storage import PostgresRecordStore
from memstack.storage.sqlite import SQLiteRecordStore


def _locomo_file(path: Path) -> Path:
    turns = [
        {"speaker": "Ana", "dia_id": f"D1:{i}", "text": f"I planted {i} tomato seedlings today."}
        for i in range(1, 31)
    ]
    sample = {
        "sample_id": "conv-x",
        "conversation": {
            "speaker_a": "Ana",
            "speaker_b": "Ben",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": turns,
        },
        "qa": [],
    }
    path.write_text(json.dumps([sample]), encoding="utf-8")
    return path


def test_bench_ingest_writes_its_json(tmp_path: Path):
    out = tmp_path / "ingest.json"
    data = _locomo_file(tmp_path / "locomo.json")
    result = CliRunner().invoke(
        main,
        [
            "bench",
            "ingest",
            "--data",
            str(data),
            "--n",
            "20",
            "--batch",
            "8",
            "--embedder",
            "hash",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    assert report["embedder"] == "hash:64" and report["batch"] == 8
    assert [r["texts"] for r in report["runs"]] == ["locomo", "short"]
    for run in report["runs"]:
        assert run["n"] == 20
        assert run["upsert_n"] == 10_000  # the 20 texts repeated, not one batch of 20
        for rate in ("remember_per_s", "remember_many_per_s", "embed_per_s", "upsert_per_s"):
            assert run[rate] > 0
        assert run["remember_many_to_embed"] > 0
        assert run["stored_one"] > 0 and run["stored_many"] > 0
        assert run["remember_turns_per_s"] > 0 and run["turns_embed_per_s"] > 0
        assert run["remember_turns_to_embed"] == round(
            run["remember_turns_per_s"] / run["turns_embed_per_s"], 3
        )
    assert "of the embedder alone" in result.output and "remember_turns" in result.output


def test_short_texts_need_no_locomo_file(tmp_path: Path):
    out = tmp_path / "ingest.json"
    result = CliRunner().invoke(
        main,
        [
            "bench",
            "ingest",
            "--texts",
            "short",
            "--data",
            str(tmp_path / "missing.json"),
            "--n",
            "10",
            "--embedder",
            "hash",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    assert [r["texts"] for r in json.loads(out.read_text())["runs"]] == ["short"]


def test_a_missing_locomo_file_is_a_one_line_error_naming_data(tmp_path: Path):
    result = CliRunner().invoke(
        main, ["bench", "ingest", "--data", str(tmp_path / "missing.json"), "--embedder", "hash"]
    )
    assert result.exit_code == 1
    assert "--data" in result.output and len(result.output.strip().splitlines()) == 1
    assert "Traceback" not in result.output


def test_the_upsert_rate_is_measured_over_ten_thousand_records_of_the_texts(tmp_path: Path):
    texts = [f"Ana planted {i} tomato seedlings on day {i}." for i in range(20)]
    embedder = HashEmbedder()
    store = SQLiteRecordStore(tmp_path / "ingest.db")
    store.setup()
    try:
        result = asyncio.run(
            run_ingest("short", texts, store=store, embedder=embedder, clock=SystemClock())
        )
        [namespace] = [ns for ns in store.namespaces() if ns.endswith("upsert")]
        assert store.count(namespace) == UPSERT_ROWS == result.upsert_n == 10_000
        [row] = store.get(namespace, ["u1234"])
        assert row.text == texts[1234 % 20]  # the texts repeated, each with its own vector
        assert row.embedding is not None
        expected = np.asarray(embedder.embed_batch([texts[14]]), dtype=np.float32)[0]
        assert np.allclose(row.embedding, expected, atol=1e-6)
    finally:
        store.close()


def test_bench_ingest_on_postgres_reports_it_and_leaves_nothing_behind(
    postgres_url: str, tmp_path: Path
):
    out = tmp_path / "ingest.json"
    args = ["bench", "ingest", "--texts", "short", "--n", "10", "--embedder", "hash"]
    args += ["--stores", "sqlite,postgres", "--postgres-url", postgres_url, "--out", str(out)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    assert sorted(report["stores"]) == ["postgres", "sqlite"]
    [run] = report["stores"]["postgres"]
    assert run["upsert_n"] == 10_000 and run["upsert_per_s"] > 0
    assert report["runs"] == report["stores"]["sqlite"]
    assert "postgres short: remember_many runs at" in result.output
    store = PostgresRecordStore.from_url(postgres_url)
    try:
        assert [ns for ns in store.namespaces() if ns.startswith("ltm/bench-")] == []
    finally:
        store.close()


def test_bench_ingest_on_postgres_needs_its_url(tmp_path: Path):
    args = ["bench", "ingest", "--texts", "short", "--embedder", "hash", "--stores", "postgres"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2 and "postgres needs --postgres-url" in result.output
