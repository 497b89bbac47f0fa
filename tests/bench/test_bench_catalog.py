"""``memstack bench catalog`` at tiny counts on the session's PostgreSQL: every count is
measured, the namespaces' indexes are the store's own and grow by the namespaces added,
the throwaway schema is gone after, the report renders it, and bad counts are refused."""

from __future__ import annotations

import json
from pathlib import Path

import psycopg
import pytest
from click.testing import CliRunner

from memstack.cli import main


def test_catalog_bench_grows_measures_and_drops_its_schema(
    postgres_url: str, tmp_path: Path
) -> None:
    out = tmp_path / "results" / "catalog.json"
    args = ["--namespaces", "6,3", "--rows", "2", "--repeats", "3", "--out", str(out)]
    done = CliRunner().invoke(main, ["bench", "catalog", "--postgres-url", postgres_url, *args])
    assert done.exit_code == 0, done.output
    report = json.loads(out.read_text())
    assert report["benchmark"] == "catalog"
    first, second = report["steps"]
    assert [first["namespaces"], second["namespaces"]] == [3, 6]
    assert [first["indexes"], second["indexes"]] == [3, 6]
    assert second["pg_index_rows"] - first["pg_index_rows"] == 3
    assert second["pg_class_rows"] - first["pg_class_rows"] >= 3
    assert second["locks_per_query"] - first["locks_per_query"] == 3  # one lock per index
    assert first["index_serves"] and second["index_serves"]
    for step in report["steps"]:
        assert step["plan_ms"]["p50"] > 0 and step["exec_ms"]["p95"] > 0
        assert step["first_query_ms"] > 0 and step["cache_mb"] > 0
        assert step["build_ms"] > 0 and step["analyze_ms"] > 0
        assert step["insert_rows_per_s"] > 0 and step["insert_batch_rows_per_s"] > 0
    with psycopg.connect(postgres_url) as conn:
        left = conn.execute(
            "SELECT count(*) FROM pg_namespace WHERE nspname = %s", (report["schema"],)
        ).fetchone()
    assert left == (0,)
    assert "plan p50 ms" in done.output and "ANALYZE ms" in done.output

    doc = tmp_path / "benchmarks.md"
    rendered = CliRunner().invoke(
        main, ["bench", "report", "--results", str(out.parent), "--out", str(doc)]
    )
    assert rendered.exit_code == 0, rendered.output
    text = doc.read_text()
    assert "(`memstack bench catalog`)" in text
    assert "memstack bench catalog --postgres-url URL --namespaces 3,6 --rows 2" in text
    assert "(0 not recognised)" in rendered.output


@pytest.mark.parametrize(
    ("counts", "said"),
    [("0", "at least 1"), ("100,0", "at least 1"), ("ten", "whole numbers"), ("", "at least 1")],
)
def test_bad_counts_are_a_usage_error_naming_the_flag(counts: str, said: str) -> None:
    args = ["bench", "catalog", "--postgres-url", "postgresql://127.0.0.1:1/x"]
    done = CliRunner().invoke(main, [*args, "--namespaces", counts])
    assert done.exit_code == 2, done.output
    assert "--namespaces" in done.output and said in done.output
