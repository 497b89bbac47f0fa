"""Every example of the README runs as written, against a real server where it needs one:
each ```python block is executed and prints what its comments say, and each ```sh block
that calls curl is run by bash and must succeed."""

import contextlib
import io
import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from memstack.embeddings import HashEmbedder
from memstack.server.services import open_services
from tests.server.conftest import serve_in_thread

README = Path(__file__).resolve().parent.parent / "README.md"
TEXT = README.read_text(encoding="utf-8")
PYTHON = re.findall(r"```python\n(.*?)```", TEXT, flags=re.S)
CURL = [b for b in re.findall(r"```sh\n(.*?)```", TEXT, flags=re.S) if "curl" in b]


@pytest.fixture
def server_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    services = open_services(
        store_url=f"sqlite:///{tmp_path / 'readme.db'}", redis_url=None, embedder=HashEmbedder()
    )
    live = serve_in_thread(services)
    key, _ = services.keys.create(tenant="readme")
    env = {"MEMSTACK_URL": live.url, "MEMSTACK_API_KEY": key}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(tmp_path)
    yield env
    live.server.should_exit = True
    live.thread.join(timeout=10)
    services.close()


def test_the_readme_opens_with_the_two_commands():
    first_block = re.search(r"```sh\n(.*?)```", TEXT, flags=re.S)
    assert first_block is not None
    commands = [line.split("#")[0].strip() for line in first_block.group(1).splitlines()]
    assert commands == ["make serve", "make test"]
    assert PYTHON and CURL


@pytest.mark.parametrize("code", PYTHON, ids=[f"python{i}" for i in range(len(PYTHON))])
def test_python_example_runs(code: str, server_env: dict[str, str]):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, str(README), "exec"), {"__name__": "__readme__"})
    printed = [line.strip() for line in out.getvalue().splitlines()]
    expected = [m.group(1).strip() for m in re.finditer(r"print\(.*\)\s+# (.+)$", code, re.M)]
    for want in expected:
        assert want in printed, (want, printed)


@pytest.mark.parametrize("script", CURL, ids=[f"curl{i}" for i in range(len(CURL))])
def test_curl_example_runs(script: str, server_env: dict[str, str]):
    import os

    result = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **server_env},
    )
    assert result.returncode == 0, result.stderr
    replies = [
        json.loads(line)
        for line in result.stdout.replace("}{", "}\n{").splitlines()
        if line.strip()
    ]
    assert replies[0]["key"] == "coding-style"
    assert replies[1]["results"][0]["memory"]["key"] == "coding-style"
