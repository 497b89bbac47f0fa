import asyncio
import json
from pathlib import Path
from typing import Any

import psycopg
import pytest
import redis
from click.testing import CliRunner, Result

from memstack.cli import main
from memstack.service.global_identity import MIGRATED_ID
from memstack.service.principal import Principal
from memstack.wiring import Services
from tests.server.conftest import Keys, LiveServer
from tests.servers import PostgresServer


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


def _rows(postgres_url: str) -> dict[str, set[tuple[str, ...]]]:
    """Every row of the memstack schema's records and namespace info (none before it exists),
    but the store's one-time migration marker, which the first server on a store writes
    whether a benchmark runs or not (like the schema's own version table)."""
    with psycopg.connect(postgres_url) as conn:
        if conn.execute("SELECT to_regclass('memstack.records')").fetchone() == (None,):
            return {"records": set(), "namespace_info": set()}
        records = conn.execute(
            "SELECT namespace, id FROM memstack.records WHERE id <> %s", (MIGRATED_ID,)
        ).fetchall()
        info = conn.execute("SELECT namespace, dim::text FROM memstack.namespace_info").fetchall()
    return {"records": set(records), "namespace_info": set(info)}


def _redis_keys(redis_url: str) -> set[bytes]:
    with redis.Redis.from_url(redis_url) as client:
        return set(client.keys("*"))


def _small_load(tmp_path: Path, *shape: str) -> tuple[Result, dict[str, Any]]:
    """``bench server`` of a spawned server in ``shape``, a small load each configuration;
    its output and its JSON report."""
    out = tmp_path / "report.json"
    load = ("--clients", "4", "--duration", "3", "--max-requests", "60", "--out", str(out))
    result = CliRunner().invoke(main, _bench(*shape, *load))
    assert result.exit_code == 0, result.output
    report: dict[str, Any] = json.loads(out.read_text())
    return result, report


def test_bench_server_compares_worker_counts_on_postgres_and_redis_and_leaves_nothing(
    postgres_url: str, redis_url: str, tmp_path: Path
):
    rows_before = _rows(postgres_url)
    redis_before = _redis_keys(redis_url)
    result, report = _small_load(
        tmp_path, "--postgres-url", postgres_url, "--redis-url", redis_url, "--workers", "1,2"
    )
    assert report["store"] == "postgres" and report["short_term"] == "redis"
    runs = report["runs"]
    assert report["workers"] == [1, 2] and [run["workers"] for run in runs] == [1, 2]
    for run in runs:
        assert run["mode"] == "spawn" and run["store"] == "postgres"
        assert run["errors"] == 0 and run["requests"] > 0
        assert run["server_cpu_ms_per_request"] > 0 and run["floor_cpu_ms_per_request"] > 0
        erased = run["erased"]
        assert erased["stored"] > 0 and erased["records"] >= erased["stored"]
        assert erased["keys"] == 1 and erased["left"] == 0
    assert runs[0]["spawned"]["tenant"] != runs[1]["spawned"]["tenant"]  # a fresh server each
    first, second = report["comparison"]
    assert (first["workers"], second["workers"]) == (1, 2)
    assert first["requests_per_s_ratio"] == first["cpu_per_request_ratio"] == 1.0
    rps = [run["requests_per_s"] for run in runs]
    cpu = [run["server_cpu_ms_per_request"] for run in runs]
    assert second["requests_per_s"] == rps[1] and second["server_cpu_ms_per_request"] == cpu[1]
    assert second["requests_per_s_ratio"] == round(rps[1] / rps[0], 2)
    assert second["cpu_per_request_ratio"] == round(cpu[1] / cpu[0], 2)
    assert second["p95_ms"] == runs[1]["latency_ms"]["p95"]
    assert second["p95_ms_by_operation"]["store"] == runs[1]["by_operation"]["store"]["p95"]
    assert "configurations compared (postgres, short-term tier redis)" in result.output
    assert "req/s ratio" in result.output
    assert _rows(postgres_url) == rows_before
    tenants = {run["spawned"]["tenant"] for run in runs}
    with psycopg.connect(postgres_url) as conn:
        keys = conn.execute(
            "SELECT metadata->>'tenant' FROM memstack.records WHERE namespace = 'auth/keys'"
        ).fetchall()
    assert not tenants & {tenant for (tenant,) in keys}
    assert _redis_keys(redis_url) == redis_before


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--spawn", "--url", "http://127.0.0.1:9"], "not both"),
        (["--url", "http://127.0.0.1:9"], "--url needs --api-key"),
        (["--server-pid", "1"], "--server-pid goes with --url"),
        (["--url", "http://127.0.0.1:9", "--api-key", "k", "--durable"], "spawned server"),
        (["--mix", "1,2"], "store,search,list"),
        (["--workers", "1,2"], "--workers 2 needs --redis-url"),
        (["--workers", "one"], "comma list"),
        (["--workers", "0"], "from 1 to 256"),
        (["--url", "http://127.0.0.1:9", "--api-key", "k", "--workers", "2"], "drop them"),
        (["--durable", "--postgres-url", "postgresql://127.0.0.1:9/db"], "durable already"),
        (["--postgres-read-url", "postgresql://127.0.0.1:9/db"], "hot standby of --postgres-url"),
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


def test_bench_server_compares_reads_on_a_standby_and_says_what_saturates(
    replicated_postgres: tuple[PostgresServer, PostgresServer], redis_url: str, tmp_path: Path
):
    primary, standby = (server.url for server in replicated_postgres)
    rows_before = _rows(primary)
    reads_before = _transactions(standby)
    result, report = _small_load(
        tmp_path,
        "--postgres-url",
        primary,
        "--postgres-read-url",
        standby,
        "--redis-url",
        redis_url,
    )
    assert report["replicas"] == 1 and report["workers"] == [1]
    first, second = report["comparison"]
    assert (first["configuration"], second["configuration"]) == ("1 worker", "1 worker + 1 standby")
    assert [run["replicas"] for run in report["runs"]] == [0, 1]
    assert first["requests_per_s_ratio"] == first["p99_ratio"] == 1.0
    run = report["runs"][1]
    assert second["p99_ms"] == run["latency_ms"]["p99"]
    assert second["p99_ratio"] == round(run["latency_ms"]["p99"] / first["p99_ms"], 2)
    parts = {part["part"]: part for part in run["saturation"]["parts"]}
    assert set(parts) == {
        "memstack server",
        "PostgreSQL primary",
        "PostgreSQL standby 1",
        "Redis",
        "load generator",
        "embedder (of the server)",
    }
    assert "PostgreSQL standby 1" not in {
        p["part"] for p in report["runs"][0]["saturation"]["parts"]
    }
    assert parts["memstack server"]["cpu_s"] > 0 and parts["PostgreSQL primary"]["cpu_s"] > 0
    for name in ("memstack server", "PostgreSQL primary", "PostgreSQL standby 1", "Redis"):
        assert parts[name]["cpu_s"] >= 0, name  # each part was read
        used = parts[name]["cpu_s"] / run["seconds"]
        assert abs(parts[name]["cores_used"] - used) < 0.02
        assert abs(parts[name]["utilization"] - used / parts[name]["capacity_cores"]) < 0.02
    assert (
        parts["Redis"]["capacity_cores"] == 1.0 and parts["embedder (of the server)"]["estimated"]
    )
    measured = [p for p in parts.values() if not p.get("estimated")]
    top = max(p["utilization"] for p in measured)
    assert parts[run["saturation"]["saturates_first"]]["utilization"] == top
    assert second["saturates_first"] == run["saturation"]["saturates_first"]
    assert "CPU by part" in result.output and "1 worker + 1 standby" in result.output
    assert _rows(primary) == rows_before
    reads = sum(run["by_operation"][op]["count"] for op in ("search", "list"))
    served = _transactions(standby) - reads_before
    assert served >= reads // 2  # the standby answered reads (the rest went to the primary)


def _transactions(url: str) -> int:
    """Transactions the server at ``url`` has committed, by its statistics."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SELECT pg_stat_clear_snapshot()")
        row = conn.execute("SELECT sum(xact_commit)::bigint FROM pg_stat_database").fetchone()
    assert row is not None
    return int(row[0])
