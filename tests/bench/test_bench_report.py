import json
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from memstack.bench.docs_kinds import num
from memstack.bench.docs_report import detect_kind, read_results, render
from memstack.bench.inprocess import CpuFloor
from memstack.bench.load import LoadReport, Mix
from memstack.bench.serverbench import CpuUse, LoadOptions, server_summary
from memstack.cli import main
from tests.bench.test_locomo import _conversation

REPO = Path(__file__).resolve().parents[2]

BENCH_RUNS = {
    "recall": ["--stores", "memory", "--sizes", "50,100", "--queries", "4", "--writes", "2"],
    "ingest": ["--texts", "short", "--n", "12", "--batch", "4"],
    "updates": ["--conversations", "2", "--modes", "plain,explicit"],
}


def _run(args: list[str]) -> str:
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    return result.output


def _server_run(workers: int, short_term: str = "in-process") -> dict[str, object]:
    """What ``bench server`` measures of one spawned server: the real summary of a small
    load, with the fields ``_server_bench`` adds."""
    load = LoadReport(clients=2, seconds=1.5, requests=6, errors=0)
    load.latencies = {"store": [4.0, 6.0, 5.0], "search": [9.0, 11.0], "list": [2.0]}
    summary = server_summary(
        load,
        options=LoadOptions(clients=2, duration=1.5, max_requests=100, mix=Mix()),
        cpu=CpuUse(server_s=0.03 / workers, client_s=0.01),
        floor=CpuFloor(
            calls=6, cpu_ms={"store": 2.0, "search": 3.0, "list": 1.0}, cpu_ms_per_request=2.5
        ),
        cores=2,
    )
    extra = {"mode": "spawn", "embedder": "hash", "durable": False, "store": "sqlite"}
    extra |= {"workers": workers, "short_term": short_term}
    return {"url": "http://127.0.0.1:1", **extra, **summary}


def _server_json(path: Path) -> None:
    """What ``bench server --label sqlite`` writes."""
    payload = {"benchmark": "server", "label": "sqlite", **_server_run(1)}
    path.write_text(json.dumps(payload), encoding="utf-8")


@pytest.fixture
def results(tmp_path: Path) -> Path:
    """One JSON per benchmark kind, from the bench commands themselves at tiny sizes."""
    folder = tmp_path / "results"
    for name, args in BENCH_RUNS.items():
        _run(["bench", name, *args, "--embedder", "hash", "--out", str(folder / f"{name}.json")])
    data = tmp_path / "locomo.json"
    data.write_text(json.dumps(_conversation()), encoding="utf-8")
    locomo = ["--data", str(data), "--store", "memory", "--ablate", "time"]
    _run(
        [
            "bench",
            "locomo",
            *locomo,
            "--embedder",
            "hash",
            "--out",
            str(folder / "deep/locomo.json"),
        ]
    )
    _server_json(folder / "server.json")
    two = tmp_path / "locomo-two.json"  # bench calibrate fits on one half, checks on the other
    two.write_text(json.dumps([{**_conversation()[0], "sample_id": i} for i in "ab"]))
    calibrate = ["--data", str(two), "--store", "memory", "--embedder", "hash"]
    _run(["bench", "calibrate", *calibrate, "--out", str(folder / "calibrate.json")])
    corpus = Path(__file__).parents[1] / "security" / "fresh_corpus.py"
    secrets = ["--data", str(data), "--mb", "0.01", "--rounds", "1", "--corpus", str(corpus)]
    _run(["bench", "secrets", *secrets, "--out", str(folder / "secrets.json")])
    return folder


def _report(results: Path, out: Path) -> str:
    _run(["bench", "report", "--results", str(results), "--out", str(out)])
    return out.read_text(encoding="utf-8")


def _command(doc: str, kind: str) -> list[str]:
    """The command the document gives for a kind, as arguments to ``memstack``."""
    prefix = f"memstack bench {kind} "
    line = next(line for line in doc.splitlines() if line.startswith(prefix))
    return shlex.split(line)[1:]


KNOWLEDGE_RUN = {  # as measure_document gives it (tests/bench/test_bench_knowledge.py runs it)
    "status_code": 202,
    "document_mb": 0.25,
    "passages": 330,
    "answered_s": 0.05,
    "ready_s": 2.5,
    "passages_per_s": 132.0,
    "healthz_max_ms": 3.1,
    "rss_before_mb": 120.0,
    "rss_peak_mb": 131.5,
    "rss_after_mb": 125.0,
    "rss_growth_mb": 11.5,
    "rss_growth_to_document": 46.0,
}


def _catalog_step(namespaces: int, plan_p50: float) -> dict[str, object]:
    """One count of ``bench catalog`` (tests/bench/test_bench_catalog.py runs it)."""
    sizes: dict[str, object] = {"pg_class_rows": 761 + namespaces}
    sizes |= {"pg_index_rows": 495 + namespaces}
    sizes |= {"indexes": namespaces, "pg_class_mb": 0.35, "pg_attribute_mb": 0.78}
    sizes |= {"pg_index_mb": 1.88, "pg_statistic_mb": 13.1, "catalog_mb": 22.57}
    query: dict[str, object] = {"plan_ms": {"p50": plan_p50, "p95": 0.44}}
    query |= {"exec_ms": {"p50": 0.54, "p95": 0.55}}
    query |= {"query_ms": {"p50": 1.8, "p95": 2.09}, "uses_index": True}
    query |= {"locks_per_query": 10 + namespaces, "first_query_ms": 6.1, "cache_mb": 1.26}
    upkeep: dict[str, object] = {"insert_rows_per_s": 2034.4}
    upkeep |= {"insert_batch_rows_per_s": 19390.0}
    upkeep |= {"build_ms": 8.31, "analyze_ms": 3.96}
    return {"namespaces": namespaces, **sizes, **query, **upkeep}


CATALOG = {
    "benchmark": "catalog",
    "counts": [3, 6],
    "rows": 2,
    "probe_rows": 200,
    "repeats": 3,
    "dim": 384,
    "server": {"server_version": "18.6", "max_locks_per_transaction": "64", "lock_slots": 7808},
    "steps": [_catalog_step(3, 0.2), _catalog_step(6, 0.5)],
}


def test_every_kind_gets_its_section_table_command_and_plot(results: Path, tmp_path: Path):
    knowledge = {"benchmark": "knowledge", "embedder": "hash", "runs": [KNOWLEDGE_RUN]}
    (results / "knowledge.json").write_text(json.dumps(knowledge))
    (results / "catalog.json").write_text(json.dumps(CATALOG))
    runs = tmp_path / "ablation-runs"
    runs.mkdir()
    for variant in ("with", "without"):  # the server run, as two variants of one round
        (runs / f"server-{variant}-1.json").write_bytes((results / "server.json").read_bytes())
    ablation = ["bench", "ablation", *(str(p) for p in sorted(runs.iterdir()))]
    ablation += ["--compare", "it=server:with/without", "--decision", "it=removed"]
    _run([*ablation, "--out", str(results / "ablation.json")])
    doc = _report(results, tmp_path / "docs" / "benchmarks.md")
    titles = ("bench recall", "bench ingest", "bench server", "bench locomo", "bench updates")
    assert "| it | server | requests/s * |" in doc and "- **it**: removed" in doc
    for title in (*titles, "bench knowledge", "bench ablation", "bench calibrate"):
        assert f"(`memstack {title}`)" in doc
    for name in ("recall.json", "ingest.json", "updates.json", "server.json"):
        assert f"### [{name}](../results/{name})" in doc
    assert "### [deep/locomo.json](../results/deep/locomo.json)" in doc
    assert "![recall.png](../results/recall.png)" in doc  # the plot beside recall.json
    assert "Not run yet" not in doc and "not recognised" not in doc
    recall = json.loads((results / "recall.json").read_text())
    assert recall["notes"] in doc  # what is measured, from the JSON's own notes
    first = recall["runs"][0]["points"][0]
    row = f"| memory | 50 | 1 | {num(first['recall_p50_ms'])} | {num(first['floor_p50_ms'])} | "
    assert row + f"{num(first['ratio_p50'])} |" in doc  # ratio to the floor beside the ms
    assert "| search | 2 | " in doc and "| 3.0 |" in doc  # server: search's floor CPU ms
    assert "| without time |" in doc and "| bm25 |" in doc
    assert "| explicit |" in doc
    assert "| 0.25 | 202 in 0.05 s | 330 |" in doc
    assert "| own tiers (before issue 43) |" in doc and "| look-alikes refused |" in doc
    assert "(`memstack bench secrets`)" in doc
    assert "(`memstack bench catalog`)" in doc
    assert "| 6 | 0.5 | 2.5 |" in doc  # planning ms beside its ratio to the smallest count


@pytest.mark.parametrize("kind", ["recall", "ingest", "updates"])
def test_the_command_given_reproduces_the_run(results: Path, tmp_path: Path, kind: str):
    doc = _report(results, tmp_path / "benchmarks.md")
    args = _command(doc, kind)
    again = tmp_path / "again" / f"{kind}.json"
    out_at = args.index("--out") + 1
    assert args[out_at] == (results / f"{kind}.json").resolve().as_posix()
    args[out_at] = str(again)
    _run(args)
    first, second = (json.loads(p.read_text()) for p in (results / f"{kind}.json", again))
    assert _fixed(second) == _fixed(first)


def _fixed(value: object) -> object:
    """A report with its measured figures (floats) blanked: what a rerun must repeat."""
    if isinstance(value, dict):
        return {k: _fixed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_fixed(v) for v in value]
    return None if isinstance(value, float) else value


def test_a_comparison_of_configurations_gets_its_table_and_each_run(tmp_path: Path):
    from memstack.bench.server_report import compare_runs

    postgres = {"store": "postgres", "replicas": 0}
    runs = [
        _server_run(1, "redis") | postgres,
        _server_run(2, "redis") | postgres,
        _server_run(2, "redis") | postgres | {"replicas": 1},
    ]
    first = runs[0]
    payload: dict[str, object] = {"benchmark": "server", "label": "redis"}
    payload |= {k: first[k] for k in ("mode", "embedder", "store", "short_term", "mix")}
    payload |= {"workers": [1, 2], "replicas": 1, "comparison": compare_runs(runs), "runs": runs}
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "workers.json").write_text(json.dumps(payload), encoding="utf-8")
    doc = _report(tmp_path / "results", tmp_path / "benchmarks.md")
    assert "not recognised" not in doc
    assert (
        " --postgres-url URL --postgres-read-url URL --redis-url URL --workers 1,2 --clients 2 "
        in doc
    )
    comparison = doc.split("| configuration | requests |", 1)[1].splitlines()
    latency = first["latency_ms"]
    assert isinstance(latency, dict)
    p99 = latency["p99"]
    assert comparison[3].startswith(f"| 2 workers | 6 | 0 | 4.0 | 10.5 | {p99} | 2.5 | 2.5 | 1.0 |")
    assert comparison[4].startswith("| 2 workers + 1 standby | 6 |")
    assert "| load generator |" in comparison[4]  # what led: the only part measured here
    assert "With 1 worker:" in doc and "With 2 workers + 1 standby:" in doc
    assert "| spawn | postgres | 2 | redis | 2 | 1.5 | 6 | 0 | 4.0 |" in doc
    assert "Saturates first: load generator" in doc


def test_files_without_the_benchmark_field_are_recognised_by_shape(results: Path):
    for result in read_results(results):
        assert result.kind is not None, result.problem
        bare = {k: v for k, v in result.payload.items() if k != "benchmark"}
        kind, _ = detect_kind(bare)
        assert kind is result.kind, result.name


def test_unknown_files_are_listed_with_the_reason(results: Path, tmp_path: Path):
    (results / "broken.json").write_text("{not json", encoding="utf-8")
    (results / "list.json").write_text("[1, 2]", encoding="utf-8")
    (results / "other.json").write_text('{"hello": 1}', encoding="utf-8")
    (results / "future.json").write_text('{"benchmark": "warp"}', encoding="utf-8")
    (results / "thin.json").write_text('{"benchmark": "recall", "runs": []}', encoding="utf-8")
    doc = _report(results, tmp_path / "benchmarks.md")
    listed = doc.split("## Files not recognised", 1)[1]
    assert "- [broken.json](results/broken.json): Expecting property name" in listed
    assert "- [list.json](results/list.json): a JSON list, not an object" in listed
    assert "- [other.json](results/other.json): no benchmark field" in listed
    assert "- [future.json](results/future.json): unknown benchmark 'warp'" in listed
    thin = "- [thin.json](results/thin.json): looks like `recall` output but cannot be read"
    assert f"{thin} as it: field 'sizes' is missing" in listed
    assert "### [recall.json]" in doc  # the good ones are still there


def test_a_missing_results_folder_is_named(tmp_path: Path):
    result = CliRunner().invoke(main, ["bench", "report", "--results", str(tmp_path / "nope")])
    assert result.exit_code == 2
    assert "--results" in result.output and "does not exist" in result.output


def test_the_same_files_give_the_same_bytes(results: Path, tmp_path: Path):
    (results / "again").mkdir()
    (results / "again" / "updates.json").write_bytes((results / "updates.json").read_bytes())
    assert _report(results, tmp_path / "a.md") == _report(results, tmp_path / "a.md")
    files = read_results(results)
    shuffled = render(files[::-1], folder=results, out=tmp_path / "a.md", root=tmp_path)
    assert shuffled == render(files, folder=results, out=tmp_path / "a.md", root=tmp_path)


def test_docs_benchmarks_md_is_generated_from_bench_results():
    folder, out = REPO / "bench-results", REPO / "docs" / "benchmarks.md"
    expected = render(read_results(folder), folder=folder, out=out, root=REPO)
    assert out.read_text(encoding="utf-8") == expected, (
        "docs/benchmarks.md differs from what bench-results/ gives: it is generated, not "
        "edited by hand; run `memstack bench report` from the repository root and commit it"
    )


def test_a_locomo_run_through_rest_is_shown_beside_the_one_in_process():
    folder = REPO / "bench-results"
    doc = render(read_results(folder), folder=folder, out=REPO / "docs" / "x.md", root=REPO)
    remote = json.loads((folder / "issue32" / "locomo-remote.json").read_text())["remote"]
    assert "--url URL --api-key KEY" in doc
    same = remote["identical_rankings"]
    assert f"| {same['identical']} of {same['compared']} |" in doc
    assert "REST / embedder alone" in doc and "overhead ms" in doc
