"""docs/scaling.md: written by ``memstack bench report`` from the runs it names."""

import json
import shutil
from pathlib import Path

from click.testing import CliRunner

from memstack.bench.scaling_doc import SOURCES, missing_sources, render_scaling
from memstack.cli import main

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "bench-results"


def test_docs_scaling_md_is_generated_from_bench_results():
    expected = render_scaling(RESULTS, link_prefix="../bench-results")
    assert (REPO / "docs" / "scaling.md").read_text(encoding="utf-8") == expected, (
        "docs/scaling.md differs from what bench-results/ gives: it is generated, not edited "
        "by hand; run `memstack bench report` from the repository root and commit it"
    )


def _copy_sources(folder: Path) -> None:
    for name in SOURCES.values():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(RESULTS / name, folder / name)


def test_a_figure_changed_in_a_run_changes_the_page_and_its_arithmetic(tmp_path: Path):
    _copy_sources(tmp_path)
    path = tmp_path / SOURCES["catalog"]
    catalog = json.loads(path.read_text())
    last, middle = catalog["steps"][-1], catalog["steps"][-2]
    last["plan_ms"]["p50"] = middle["plan_ms"]["p50"] + 90.0
    path.write_text(json.dumps(catalog))
    storage_path = tmp_path / SOURCES["storage"]
    storage = json.loads(storage_path.read_text())
    point = storage["runs"][0]["points"][-1]["storage"]
    point["table_bytes_per_memory"], point["index_bytes_per_memory"] = 4000.0, 1000.0
    storage_path.write_text(json.dumps(storage))
    page = render_scaling(tmp_path, link_prefix="runs")
    per_index = 90.0 * 1000 / (last["namespaces"] - middle["namespaces"])
    assert f"= {per_index:.1f} us per index" in page
    assert "| storage, table and indexes | 1,000,000,000 x 5,000 B | 5.00 TB |" in page
    assert "(runs/issue44/catalog.json)" in page


def test_bench_report_writes_the_page_beside_the_benchmarks_or_says_why_not(tmp_path: Path):
    _copy_sources(tmp_path / "results")
    out = tmp_path / "docs" / "benchmarks.md"
    args = ["bench", "report", "--results", str(tmp_path / "results"), "--out", str(out)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    page = (tmp_path / "docs" / "scaling.md").read_text(encoding="utf-8")
    assert page == render_scaling(tmp_path / "results", link_prefix="../results")
    (tmp_path / "results" / SOURCES["catalog"]).unlink()
    (tmp_path / "docs" / "scaling.md").write_text("kept", encoding="utf-8")
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0 and "its runs are missing (issue44/catalog.json)" in result.output
    assert (tmp_path / "docs" / "scaling.md").read_text(encoding="utf-8") == "kept"
    assert missing_sources(tmp_path / "results") == [SOURCES["catalog"]]
