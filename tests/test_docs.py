"""Every example of the README and of docs/ runs as written, against a real server where it
needs one: each ```python block is executed and prints what its comments say, each ```sh
block that calls curl is run by bash and every request must succeed, each ```json block is a
configuration whose memstack command parses, each ```ini block names real PostgreSQL
settings. Around the examples: links between the pages resolve, every environment variable
named is one the code reads, and no hand-written page holds dated figures (those are in
docs/benchmarks.md, generated). Shell commands: tests/test_docs_commands.py."""

from __future__ import annotations

import contextlib
import functools
import io
import json
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from click.testing import CliRunner

from memstack.cli import main as memstack_cli
from memstack.embeddings import HashEmbedder
from memstack.wiring import open_services
from tests.docs_pages import (
    PAGES,
    README,
    ROOT,
    Block,
    all_blocks,
    blocks,
    is_curl,
    prose,
    shell_lines,
    text,
)
from tests.server.conftest import serve_in_thread

PYTHON = all_blocks("python")
CURL = [b for b in all_blocks("sh") if is_curl(b)]
JSON = all_blocks("json")
INI = all_blocks("ini")
JS = all_blocks("js")
TESTED = {"python", "sh", "json", "ini", "js"}
JS_PACKAGES = ROOT / "tests" / "mem0" / "js"
"""Where ``make test`` installs the npm packages the ```js examples use (mem0's client)."""
SEPARATOR = "\x1e-end-of-command-\x1e"


@pytest.fixture
def server_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    services = open_services(
        store_url=f"sqlite:///{tmp_path / 'docs.db'}", redis_url=None, embedder=HashEmbedder()
    )
    live = serve_in_thread(services)
    key, _ = services.keys.create(tenant="docs", long_term=True)
    env = {"MEMSTACK_URL": live.url, "MEMSTACK_API_KEY": key}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(tmp_path)
    yield env
    live.server.should_exit = True
    live.thread.join(timeout=10)
    services.close()


def test_the_readme_opens_with_the_two_commands():
    first = next(b for b in blocks(README) if b.lang == "sh")
    commands = [line.split("#")[0].strip() for line in first.text.splitlines()]
    assert commands == ["make serve", "make test"]


def test_the_readme_is_short_and_links_every_page():
    assert len(text(README).splitlines()) <= 250
    for page in PAGES[1:]:
        assert f"(docs/{page.name})" in text(README), f"the README does not link {page.name}"


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_every_code_block_is_of_a_kind_these_tests_run(page: Path):
    untested = [b.name for b in blocks(page) if b.lang not in TESTED]
    assert untested == [], f"code blocks no test runs: {untested} (give each a language)"


@pytest.mark.parametrize("block", PYTHON, ids=[b.name for b in PYTHON])
def test_python_example_runs(block: Block, server_env: dict[str, str]):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block.text, str(block.page), "exec"), {"__name__": "__docs__"})
    printed = [line.strip() for line in out.getvalue().splitlines()]
    expected = [m.group(1).strip() for m in re.finditer(r"print\(.*\)\s+# (.+)$", block.text, re.M)]
    for want in expected:
        assert want in printed, (want, printed)


@pytest.mark.parametrize("block", CURL, ids=[b.name for b in CURL])
def test_curl_example_runs(block: Block, server_env: dict[str, str]):
    """Every request must succeed (curl fails on an HTTP error status here), and what a
    command's ``# prints:`` comment names must be in that command's output."""
    commands = shell_lines(block)
    script = "\n".join(f"{command}\nprintf '\\n{SEPARATOR}\\n'" for command, _ in commands)
    strict = 'curl() { command curl --fail-with-body --show-error "$@"; }\n'
    result = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", strict + script],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **server_env},
    )
    assert result.returncode == 0, (result.stdout, result.stderr)
    outputs = result.stdout.split(SEPARATOR)
    for (command, printed), output in zip(commands, outputs, strict=False):
        assert printed in output, (command, printed, output)


@pytest.mark.parametrize("block", JS, ids=[b.name for b in JS])
def test_js_example_runs(block: Block, server_env: dict[str, str]):
    """Run by node beside the npm packages ``make test`` installs; each ``console.log``
    prints what its comment says, and nothing is sent to mem0's telemetry."""
    env = {**os.environ, **server_env, "MEM0_TELEMETRY": "false"}
    result = subprocess.run(
        ["node", "-e", block.text],
        cwd=JS_PACKAGES,
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert result.returncode == 0, (result.stdout, result.stderr)
    printed = [line.strip() for line in result.stdout.splitlines()]
    expected = re.findall(r"console\.log\(.*\);\s+// (.+)$", block.text, re.M)
    assert expected, f"{block.name}: no console.log says what it prints"
    for want in expected:
        assert want.strip() in printed, (want, printed, result.stderr)


@pytest.mark.parametrize("block", JSON, ids=[b.name for b in JSON])
def test_json_example_is_a_configuration_that_starts_memstack(block: Block):
    servers = json.loads(block.text)["mcpServers"]
    for entry in servers.values():
        if "command" in entry:
            assert Path(entry["command"]).name == "memstack"
            ran = CliRunner().invoke(memstack_cli, [*entry["args"], "--help"])
            assert ran.exit_code == 0, ran.output
            assert set(entry.get("env", {})) <= {"MEMSTACK_API_KEY", "MEMSTACK_AGENT_ID"}
        else:
            assert entry["url"].endswith("/mcp"), entry
            assert entry["headers"]["Authorization"].startswith("Bearer msk_")


@pytest.mark.parametrize("block", INI, ids=[b.name for b in INI])
def test_ini_example_sets_real_postgresql_settings(block: Block, postgres_url: str):
    settings = [
        [part.strip() for part in line.split("#")[0].split("=")]
        for line in block.text.splitlines()
        if line.split("#")[0].strip()
    ]
    with psycopg.connect(postgres_url) as conn:
        for name, value in settings:
            row = conn.execute("SELECT unit FROM pg_settings WHERE name = %s", [name]).fetchone()
            assert row is not None, f"{block.name}: PostgreSQL has no setting {name}"
            if row[0] in ("8kB", "kB", "MB"):
                assert conn.execute("SELECT pg_size_bytes(%s)", [value]).fetchone()


def _slug(heading: str) -> str:
    """The anchor GitHub gives a heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    return {_slug(h) for h in re.findall(r"^#+ (.+)$", prose(page), flags=re.M)}


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_every_link_resolves(page: Path):
    for link in re.findall(r"\]\(([^)\s]+)\)", prose(page)):
        if re.match(r"[a-z]+:", link):
            continue
        path, _, anchor = link.partition("#")
        target = (page.parent / path).resolve() if path else page
        assert target.is_file(), f"{page.name} links {link}: no such file"
        if anchor:
            assert anchor in _anchors(target), f"{page.name} links {link}: no such heading"


ENV_NAME = re.compile(r"\b(?:MEMSTACK|NODETOOL)_[A-Z0-9_]*[A-Z0-9]\b")


@functools.cache
def _names_in_code() -> frozenset[str]:
    """The variable names the package and the tests use (not the tests of these pages)."""
    ours = {Path(__file__).name, "test_docs_commands.py", "docs_pages.py"}
    files = [*(ROOT / "src").rglob("*.py"), *(ROOT / "tests").rglob("*.py")]
    return frozenset(
        name
        for p in files
        if p.name not in ours
        for name in ENV_NAME.findall(p.read_text(encoding="utf-8"))
    )


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_every_environment_variable_named_is_read_somewhere(page: Path):
    unknown = set(ENV_NAME.findall(text(page))) - _names_in_code()
    assert unknown == set(), f"{page.name} names variables nothing reads: {sorted(unknown)}"


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_hand_written_pages_hold_no_dated_figures_and_cite_no_specifications(page: Path):
    """Measured figures live in docs/benchmarks.md, generated from the benchmarks' JSON."""
    assert re.findall(r"[^\n]*\b20\d\d-\d\d-\d\d\b[^\n]*", text(page)) == []
    cited = re.findall(r"[^\n]*\b(?:spec \d{3}|specification)[^\n]*", text(page), flags=re.I)
    assert cited == []
