import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from memstack.cli import main
from tests.servers import first_key, free_port


def test_keys_create_list_revoke(tmp_path: Path):
    db = str(tmp_path / "keys.db")
    runner = CliRunner()
    created = runner.invoke(
        main, ["keys", "create", "--tenant", "acme", "--agents", "bot,ops", "--db", db, "--json"]
    )
    assert created.exit_code == 0, created.output
    payload = json.loads(created.stdout)
    assert payload["tenant"] == "acme" and payload["key"].startswith("msk_")
    assert payload["agents"] == ["bot", "ops"]
    listed = json.loads(runner.invoke(main, ["keys", "list", "--db", db, "--json"]).stdout)
    assert [(k["tenant"], k["active"]) for k in listed] == [("acme", True)]
    assert payload["key"] not in json.dumps(listed)  # the raw key is never shown again
    revoked = runner.invoke(main, ["keys", "revoke", listed[0]["id"], "--db", db])
    assert revoked.exit_code == 0
    listed = json.loads(runner.invoke(main, ["keys", "list", "--db", db, "--json"]).stdout)
    assert listed[0]["active"] is False


def test_keys_bad_input(tmp_path: Path):
    db = str(tmp_path / "keys.db")
    runner = CliRunner()
    bad = runner.invoke(main, ["keys", "create", "--tenant", "no spaces", "--db", db])
    assert bad.exit_code == 1 and "tenant" in bad.output
    missing = runner.invoke(main, ["keys", "revoke", "deadbeef", "--db", db])
    assert missing.exit_code == 1 and "no API key" in missing.output


def test_serve_creates_a_key_on_first_start_and_serves(tmp_path: Path):
    port = free_port()
    env = {**os.environ, "MEMSTACK_MEMORY_EMBEDDING_PROVIDER": "hash", "PYTHONUNBUFFERED": "1"}
    env.pop("MEMSTACK_POSTGRES_URL", None)
    env.pop("MEMSTACK_REDIS_URL", None)
    env.pop("MEMSTACK_WORKERS", None)
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "memstack",
            "serve",
            "--db",
            str(tmp_path / "s.db"),
            "--port",
            str(port),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    try:
        lines: list[str] = []
        assert process.stdout is not None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = process.stdout.readline()
            if not line:
                break
            lines.append(line)
            if "serving on" in line:
                break
        output = "".join(lines)
        assert "msk_" not in output  # stdout is a pipe: the key is in a file, not the log
        key = first_key(output)
        url = f"http://127.0.0.1:{port}"
        for _ in range(100):
            try:
                if httpx.get(f"{url}/healthz").status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.1)
        headers = {"Authorization": f"Bearer {key}"}
        stored = httpx.post(
            f"{url}/api/memories", headers=headers, json={"agent_id": "a", "key": "k", "value": "v"}
        )
        assert stored.status_code == 201
        assert httpx.get(f"{url}/api/memories", headers=headers).json()["total"] == 1
        assert "SQLite" in output and "in-process" in output and "1 process" in output
    finally:
        process.terminate()
        process.wait(timeout=20)
        if process.stdout:
            process.stdout.close()


@pytest.mark.parametrize(
    ("args", "env"),
    [
        (["--workers", "2"], {}),
        ([], {"MEMSTACK_WORKERS": "2"}),
    ],
)
def test_serve_refuses_several_workers_without_redis(tmp_path: Path, args, env):
    db = tmp_path / "s.db"
    with socket.socket() as taken:  # were serve to go ahead, it would fail to bind, not hang
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        result = CliRunner().invoke(
            main,
            ["serve", "--db", str(db), "--port", port, *args],
            env={"MEMSTACK_REDIS_URL": None, "MEMSTACK_MEMORY_EMBEDDING_PROVIDER": "hash", **env},
        )
    assert result.exit_code == 2, result.output
    assert (
        "--workers 2 needs --redis-url: the in-process short-term tier cannot be shared "
        "between worker processes (each would serve stale reads after another's update)"
    ) in " ".join(result.output.split())
    assert not db.exists()  # refused before anything was opened


def test_serve_refuses_a_worker_count_out_of_range(tmp_path: Path):
    result = CliRunner().invoke(main, ["serve", "--db", str(tmp_path / "s.db"), "--workers", "0"])
    assert result.exit_code == 1 and "MEMSTACK_WORKERS" in result.output
