"""The key ``memstack serve`` creates on first start never lands in a service log (issue
30): printed on a terminal only; otherwise written to a file only its owner reads, beside
the database, and just that file's path printed."""

from __future__ import annotations

import json
import os
import pty
import re
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
from click.testing import CliRunner

from memstack.cli import main
from memstack.home import write_private
from tests.servers import free_port, serve_env

_KEY = re.compile(r"msk_[0-9a-f]{16}_[A-Za-z0-9_-]{43}")
_FILE = re.compile(r"it is in (\S+) \(readable by its owner only\)")


@contextmanager
def serve(home: Path, *, stdout: int) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """``memstack serve`` on a fresh ``MEMSTACK_HOME``, its output (stdout and stderr)
    going to ``stdout``; yields it with its URL."""
    port = free_port()
    env = serve_env(MEMSTACK_HOME=str(home), PYTHONUNBUFFERED="1")
    process = subprocess.Popen(
        [sys.executable, "-m", "memstack", "serve", "--port", str(port)],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=stdout,
        stderr=stdout,
    )
    try:
        yield process, f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(timeout=30)


def wait_healthy(url: str, process: subprocess.Popen[bytes], output: list[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert process.poll() is None, b"".join(output).decode()
        try:
            if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            time.sleep(0.05)
    raise AssertionError(f"memstack serve did not start:\n{b''.join(output).decode()}")


def collect(fd: int, into: list[bytes]) -> threading.Thread:
    """A thread reading ``fd`` into ``into`` until it closes (a pty's end: EIO)."""

    def read() -> None:
        while True:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                return
            if not chunk:
                return
            into.append(chunk)

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    return thread


def stores_with(url: str, key: str) -> int:
    response = httpx.post(
        f"{url}/api/memories",
        headers={"Authorization": f"Bearer {key}"},
        json={"agent_id": "a", "key": "k", "value": "v"},
    )
    return response.status_code


def test_piped_output_names_a_private_file_holding_the_key(tmp_path: Path):
    home = tmp_path / "home"
    read_end, write_end = os.pipe()
    output: list[bytes] = []
    with serve(home, stdout=write_end) as (process, url):
        os.close(write_end)
        reader = collect(read_end, output)
        wait_healthy(url, process, output)
        key_file = home / "memstack.db.first-key"
        assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
        key = key_file.read_text(encoding="utf-8").strip()
        assert _KEY.fullmatch(key)
        assert stores_with(url, key) == 201
    reader.join(timeout=10)
    os.close(read_end)
    log = b"".join(output).decode()
    assert key not in log and "msk_" not in log
    printed = _FILE.search(" ".join(log.split()))
    assert printed is not None, log
    assert Path(printed.group(1)) == key_file.absolute()


def test_a_terminal_is_shown_the_key_and_no_file_is_written(tmp_path: Path):
    home = tmp_path / "home"
    terminal, pty_end = pty.openpty()
    output: list[bytes] = []
    with serve(home, stdout=pty_end) as (process, url):
        os.close(pty_end)
        reader = collect(terminal, output)
        wait_healthy(url, process, output)
        deadline = time.monotonic() + 30
        while not _KEY.search(b"".join(output).decode()) and time.monotonic() < deadline:
            time.sleep(0.05)
        printed = _KEY.search(b"".join(output).decode())
        assert printed is not None, b"".join(output).decode()
        assert stores_with(url, printed.group()) == 201
    reader.join(timeout=10)
    os.close(terminal)
    assert "It is shown only this once" in b"".join(output).decode()
    assert not (home / "memstack.db.first-key").exists()
    assert sorted(p.name for p in home.iterdir() if "first-key" in p.name) == []


def test_a_key_file_that_cannot_be_written_fails_the_start_and_leaves_no_key(tmp_path: Path):
    db = tmp_path / "s.db"
    (tmp_path / "s.db.first-key").mkdir()  # a folder where the file should go
    command = [sys.executable, "-m", "memstack", "serve", "--db", str(db)]
    done = subprocess.run(
        [*command, "--port", str(free_port())],
        env=serve_env(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert f"cannot write the first API key to {tmp_path / 's.db.first-key'}" in output
    assert "msk_" not in output
    listed = CliRunner().invoke(main, ["keys", "list", "--db", str(db), "--json"])
    assert [k["active"] for k in json.loads(listed.stdout)] == [False]  # revoked at once


def test_write_private_replaces_a_file_and_never_follows_a_link(tmp_path: Path):
    target = tmp_path / "elsewhere"
    target.write_text("untouched")
    path = tmp_path / "key"
    path.symlink_to(target)
    write_private(path, "secret\n")
    assert not path.is_symlink() and path.read_text() == "secret\n"
    assert target.read_text() == "untouched"
    path.chmod(0o644)
    write_private(path, "newer\n")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and path.read_text() == "newer\n"
    write_private(tmp_path / "new" / "folder" / "key", "x")  # e.g. a data home not made yet
    assert stat.S_IMODE((tmp_path / "new" / "folder" / "key").stat().st_mode) == 0o600
