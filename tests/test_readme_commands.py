"""Every shell command of the README runs as written, on a fresh checkout's virtualenv.

Each line of each ```sh block is read as the shell would (comments dropped, continuations
joined) and run: a memstack command that is quick and offline exactly as written, one that
would reach a hosted LLM or run a full benchmark with ``--help`` (the command and its options
parse) or, for ``bench recall``, at a tiny size; ``make`` targets with ``make -n``. curl
examples are run against a live server by tests/test_readme.py; the ``claude`` CLI is not
ours, so its line is checked for the memstack command it starts. A line this table does not
know fails, so a new README command gets a rule here.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TEXT = (ROOT / "README.md").read_text(encoding="utf-8")
MEMSTACK = str(Path(sys.executable).parent / "memstack")
TINY_RECALL = ["--sizes", "10", "--queries", "2", "--writes", "0", "--embedder", "hash"]


def _lines() -> list[tuple[str, str]]:
    """(command, what its comment says it prints) of every ```sh block; a quoted string may
    span lines, as in the shell."""
    found = []
    for block in re.findall(r"```sh\n(.*?)```", TEXT, flags=re.S):
        pending = ""
        for line in block.replace("\\\n", " ").splitlines():
            pending += line + "\n"
            try:
                words = shlex.split(pending, comments=True)
            except ValueError:  # a quotation still open
                continue
            if words:
                printed = re.search(r"#\s*prints:\s*(.+)$", line)
                found.append((pending.strip(), printed.group(1).strip() if printed else ""))
            pending = ""
        assert not pending.strip(), f"unfinished README command: {pending!r}"
    return found


LINES = _lines()
RUN = [(line, printed) for line, printed in LINES if not line.startswith("curl ")]
"""curl lines are run against a live server by tests/test_readme.py."""


def _plan(argv: list[str], tmp: Path) -> list[str]:
    """The argv to run for one README line."""
    name = Path(argv[0]).name
    if name == "make":
        return ["make", "--no-print-directory", "-n", *argv[1:]]
    if name == "claude":
        started = argv[argv.index("--") + 1 :] if "--" in argv else ["memstack", "mcp"]
        return [MEMSTACK, *started[1:2], "--help"]
    assert name == "memstack", f"no rule for README command {argv[0]!r}: add one"
    args = argv[1:]
    if "--help" in args or "--version" in args:
        return [MEMSTACK, *args]
    if args[:2] == ["agent", "run"] and any(a.startswith("scripted:") for a in args):
        return [MEMSTACK, *args]
    if args[:2] == ["bench", "recall"]:
        return [MEMSTACK, *args, *TINY_RECALL, "--out", str(tmp / "recall.json")]
    return [MEMSTACK, *args, "--help"]


def test_the_readme_has_the_first_run_commands():
    memstack_lines = [shlex.split(line, comments=True)[1:] for line, _ in LINES]
    for wanted in (["--version"], ["keys", "--help"], ["bench", "recall", "--help"]):
        assert wanted in memstack_lines, wanted


@pytest.mark.parametrize(("line", "printed"), RUN, ids=[line[:60] for line, _ in RUN])
def test_readme_shell_line_runs(line: str, printed: str, tmp_path: Path):
    argv = _plan(shlex.split(line, comments=True), tmp_path)
    env = {**os.environ, "MEMSTACK_MEMORY_EMBEDDING_PROVIDER": "hash"}
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, (argv, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    assert printed in done.stdout


def test_the_readme_says_what_happens_instead_of_citing_specifications():
    cited = re.findall(r"[^\n]*\b(?:spec \d{3}|specification)[^\n]*", TEXT, flags=re.I)
    assert cited == []
