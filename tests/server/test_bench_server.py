import json
from pathlib import Path

from click.testing import CliRunner

from memstack.cli import main
from tests.server.conftest import Keys, LiveServer


def test_bench_server_drives_a_running_server(live: LiveServer, keys: Keys, tmp_path: Path):
    out = tmp_path / "server.json"
    result = CliRunner().invoke(
        main,
        [
            "bench",
            "server",
            "--url",
            live.url,
            "--api-key",
            keys.acme,
            "--clients",
            "4",
            "--duration",
            "30",
            "--max-requests",
            "60",
            "--label",
            "sqlite",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    assert report["requests"] == 60 and report["errors"] == 0
    assert set(report["by_operation"]) == {"store", "search", "list"}
    assert report["requests_per_s"] > 0
    assert report["latency_ms"]["p99"] >= report["latency_ms"]["p50"] > 0
    assert "throughput:" in result.output


def test_bench_server_counts_errors_with_a_bad_key(live: LiveServer, tmp_path: Path):
    out = tmp_path / "bad.json"
    result = CliRunner().invoke(
        main,
        [
            "bench",
            "server",
            "--url",
            live.url,
            "--api-key",
            "msk_wrong",
            "--clients",
            "2",
            "--max-requests",
            "10",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0
    assert json.loads(out.read_text())["errors"] == 10
