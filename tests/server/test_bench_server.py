import asyncio
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from memstack.cli import main
from memstack.server.services import Services
from memstack.service.principal import Principal
from tests.server.conftest import Keys, LiveServer


def _bench(*args: str) -> list[str]:
    return ["bench", "server", "--embedder", "hash", *args]


def test_bench_server_drives_a_running_server_and_deletes_what_it_stored(
    live: LiveServer, keys: Keys, services: Services, tmp_path: Path
):
    out = tmp_path / "server.json"
    result = CliRunner().invoke(
        main,
        [
            *_bench("--url", live.url, "--api-key", keys.acme, "--clients", "4"),
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
    assert report["mode"] == "url" and report["label"] == "sqlite"
    assert report["requests"] == 60 and report["errors"] == 0
    assert set(report["by_operation"]) == {"store", "search", "list"}
    assert report["requests_per_s"] > 0
    assert report["latency_ms"]["p99"] >= report["latency_ms"]["p50"] > 0
    assert report["floor_cpu_ms_per_request"] > 0
    assert all(s["floor_cpu_ms"] > 0 for s in report["by_operation"].values())
    assert report["server_cpu_ms_per_request"] is None  # no --server-pid
    cleanup = report["cleanup"]
    assert cleanup["created"] > 0 and cleanup["deleted"] + cleanup["gone"] == cleanup["created"]
    left = asyncio.run(services.memories.list(Principal(tenant="acme")))
    assert left.total == 0
    assert "throughput:" in result.output


def test_bench_server_counts_errors_with_a_bad_key(live: LiveServer, tmp_path: Path):
    out = tmp_path / "bad.json"
    result = CliRunner().invoke(
        main,
        [
            *_bench("--url", live.url, "--api-key", "msk_wrong", "--clients", "2"),
            "--max-requests",
            "10",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    assert report["errors"] == 10 and report["cleanup"]["created"] == 0


def test_bench_server_spawns_a_throwaway_server_and_measures_its_cpu(tmp_path: Path):
    out = tmp_path / "spawn.json"
    result = CliRunner().invoke(
        main,
        _bench("--clients", "2", "--duration", "2", "--mix", "2,1,1", "--out", str(out)),
        env={"MEMSTACK_POSTGRES_URL": "postgresql://nowhere.invalid/db"},
    )
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    assert report["mode"] == "spawn" and report["errors"] == 0 and report["durable"] is False
    assert report["requests"] > 0 and set(report["by_operation"]) == {"store", "search", "list"}
    assert report["mix"] == {"store": 0.5, "search": 0.25, "list": 0.25}
    assert report["server_cpu_ms_per_request"] > 0
    assert report["floor_cpu_ms_per_request"] > 0 and report["cpu_ratio"] > 0
    client_ms, floor_ms = report["client_cpu_ms_per_request"], report["floor_cpu_ms_per_request"]
    assert client_ms > 0 and report["cores"] >= 1
    bound = report["cores"] * 1000 / (floor_ms + client_ms)
    assert report["requests_per_s_bound"] == pytest.approx(bound, abs=0.1)
    assert "at most" in result.output
    spawned = report["spawned"]
    assert spawned["tenant"].startswith("bench-")
    assert not Path(spawned["db"]).parent.exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--spawn", "--url", "http://127.0.0.1:9"], "not both"),
        (["--url", "http://127.0.0.1:9"], "--url needs --api-key"),
        (["--server-pid", "1"], "--server-pid goes with --url"),
        (["--url", "http://127.0.0.1:9", "--api-key", "k", "--durable"], "spawned server"),
        (["--mix", "1,2"], "store,search,list"),
    ],
)
def test_bench_server_rejects_bad_options(args: list[str], message: str):
    result = CliRunner().invoke(main, _bench(*args), env={"MEMSTACK_API_KEY": ""})
    assert result.exit_code == 2 and message in result.output


def test_an_unreachable_server_is_a_one_line_error():
    result = CliRunner().invoke(
        main, _bench("--url", "http://127.0.0.1:9", "--api-key", "msk_x", "--duration", "1")
    )
    assert result.exit_code == 1 and "the server at http://127.0.0.1:9 failed" in result.output
    assert "Traceback" not in result.output
