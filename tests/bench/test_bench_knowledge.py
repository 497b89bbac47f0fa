"""``memstack bench knowledge``: a large document posted to a throwaway server, followed
to ready, and reported (the JSON, and its section in ``memstack bench report``)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from memstack.bench.knowledge import document_text
from memstack.cli import main
from memstack.service.knowledge import SYNC_PASSAGES
from memstack.service.passages import CHUNK_CHARS


def test_the_document_is_prose_of_the_size_asked() -> None:
    text = document_text(0.25, seed=3)
    assert len(text) == 256 * 1024
    assert text == document_text(0.25, seed=3)
    assert text.count("\n\n") > 100  # paragraphs, as prose splits


def test_a_large_document_is_followed_to_ready_and_reported(tmp_path: Path) -> None:
    out = tmp_path / "results" / "knowledge.json"
    size_mb = 0.25  # more passages than are embedded before the answer: a 202
    assert size_mb * 1024 * 1024 / CHUNK_CHARS > SYNC_PASSAGES
    done = CliRunner().invoke(
        main, ["bench", "knowledge", "--mb", str(size_mb), "--embedder", "hash", "--out", str(out)]
    )
    assert done.exit_code == 0, done.output
    report = json.loads(out.read_text())
    assert report["benchmark"] == "knowledge"
    (run,) = report["runs"]
    assert run["status_code"] == 202
    assert run["passages"] > SYNC_PASSAGES
    assert run["rss_before_mb"] > 0 and run["rss_peak_mb"] >= run["rss_before_mb"]
    growth = run["rss_growth_mb"] / run["document_mb"]
    assert abs(run["rss_growth_to_document"] - growth) < 0.5
    assert "growth / document" in done.output

    doc = tmp_path / "benchmarks.md"
    rendered = CliRunner().invoke(
        main, ["bench", "report", "--results", str(out.parent), "--out", str(doc)]
    )
    assert rendered.exit_code == 0, rendered.output
    text = doc.read_text()
    assert "## Large knowledge documents (`memstack bench knowledge`)" in text
    assert "memstack bench knowledge --mb 0.25 --embedder hash" in text
    assert "(0 not recognised)" in rendered.output


def test_sizes_beyond_the_routes_limit_are_refused() -> None:
    done = CliRunner().invoke(main, ["bench", "knowledge", "--mb", "11"])
    assert done.exit_code == 2
    assert "--mb" in done.output and "at most 10" in done.output
