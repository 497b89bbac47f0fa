"""mem0's official TypeScript client (npm ``mem0ai``, pinned in ``js/package.json``)
against a live ``memstack serve``: ``node --test`` runs ``js/mem0.test.mjs`` with the
server's URL and key. ``make test`` installs the client first (``npm ci`` in ``js/``)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from tests.mem0.conftest import MEM0_DIR, Mem0Server

JS = Path(__file__).parent / "js"
NPM_CI = "npm ci --legacy-peer-deps --no-audit --no-fund"


def test_the_typescript_client_runs_against_memstack(server: Mem0Server) -> None:
    node = shutil.which("node")
    assert node is not None, "these tests need Node.js 20 or newer (node) on the PATH"
    installed = JS / "node_modules" / "mem0ai" / "package.json"
    assert installed.is_file(), f"mem0ai is not installed: run `make test`, or `{NPM_CI}` in {JS}"
    env = {
        **os.environ,
        "MEMSTACK_URL": server.url,
        "MEMSTACK_KEY": server.key,
        "MEM0_TELEMETRY": "false",
        "MEM0_DIR": str(MEM0_DIR),
        "NODE_OPTIONS": "",
    }
    done = subprocess.run(
        [node, "--test", "--test-reporter=spec"],
        cwd=JS,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, (
        f"node --test failed ({done.returncode}):\n{done.stdout}\n{done.stderr}\n"
        f"--- server log ---\n{server.tail()}"
    )
    counts = dict(re.findall("^\u2139 (\\w+) (\\d+)$", done.stdout, re.MULTILINE))
    assert counts.get("fail") == "0" and counts.get("skipped") == "0", done.stdout
    assert int(counts.get("pass", "0")) >= 4, done.stdout  # every test of the file ran
