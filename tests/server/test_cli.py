import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
from click.testing import CliRunner

from memstack.cli import main


def test_keys_create_list_revoke(tmp_path: Path):
    db = str(tmp_path / "keys.db")
    runner = CliRunner()
    created = runner.invoke(
        main, ["keys", "create", "--tenant", "acme", "--agents", "bot,ops", "--db", db, "--json"]
    )
    assert created.exit_code == 0, created.output
    payload = json.loads(created.output)
    assert payload["tenant"] == "acme" and payload["key"].startswith("msk_")
    assert payload["agents"] == ["bot", "ops"]
    listed = json.loads(runner.invoke(main, ["keys", "list", "--db", db, "--json"]).output)
    assert [(k["tenant"], k["active"]) for k in listed] == [("acme", True)]
    assert payload["key"] not in json.dumps(listed)  # the raw key is never shown again
    revoked = runner.invoke(main, ["keys", "revoke", listed[0]["id"], "--db", db])
    assert revoked.exit_code == 0
    listed = json.loads(runner.invoke(main, ["keys", "list", "--db", db, "--json"]).output)
    assert listed[0]["active"] is False


def test_keys_bad_input(tmp_path: Path):
    db = str(tmp_path / "keys.db")
    runner = CliRunner()
    bad = runner.invoke(main, ["keys", "create", "--tenant", "no spaces", "--db", db])
    assert bad.exit_code == 1 and "tenant" in bad.output
    missing = runner.invoke(main, ["keys", "revoke", "deadbeef", "--db", db])
    assert missing.exit_code == 1 and "no API key" in missing.output


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_serve_creates_a_key_on_first_start_and_serves(tmp_path: Path):
    port = _free_port()
    env = {**os.environ, "MEMSTACK_MEMORY_EMBEDDING_PROVIDER": "hash", "PYTHONUNBUFFERED": "1"}
    env.pop("MEMSTACK_POSTGRES_URL", None)
    env.pop("MEMSTACK_REDIS_URL", None)
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
        key = next(word for word in output.split() if word.startswith("msk_"))
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
        assert "SQLite" in output and "in-process" in output
    finally:
        process.terminate()
        process.wait(timeout=20)
        if process.stdout:
            process.stdout.close()
