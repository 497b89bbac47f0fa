"""``make serve`` installs ``memstack`` into the virtualenv, off the shell's ``PATH``, and
prints the line that puts it there (``make path`` prints that line alone); the README says so."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.docs_pages import README, ROOT, prose

BARE_PATH = "/usr/bin:/bin"
"""A shell's PATH without the virtualenv, as a new terminal has it."""


def _fake_venv(tmp_path: Path) -> Path:
    """A virtualenv folder whose ``bin/memstack`` says where it is."""
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    memstack = venv / "bin" / "memstack"
    memstack.write_text('#!/bin/sh\necho "the venv memstack"\n')
    memstack.chmod(0o755)
    return venv


def _make(*args: str) -> str:
    done = subprocess.run(
        ["make", "--no-print-directory", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout


def _in_bare_shell(script: str) -> str:
    done = subprocess.run(
        ["bash", "-c", script], capture_output=True, text=True, timeout=60, env={"PATH": BARE_PATH}
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_make_path_prints_the_line_that_puts_memstack_on_the_path(tmp_path: Path):
    venv = _fake_venv(tmp_path)
    line = _make("-s", "path", f"VENV={venv}").strip()
    assert _in_bare_shell("memstack 2>/dev/null || echo 'not found'") == "not found\n"
    assert _in_bare_shell(f"{line}\nmemstack") == "the venv memstack\n"


def test_make_serve_prints_that_line_before_it_starts(tmp_path: Path):
    venv = _fake_venv(tmp_path)
    line = _make("-s", "path", f"VENV={venv}").strip()
    planned = _make("-n", "serve", f"VENV={venv}")  # the commands, none run
    (echo,) = [c for c in planned.splitlines() if c.startswith("echo ")]
    said = _in_bare_shell(echo)
    assert said.strip().endswith(line) and "memstack" in said
    serve = planned.splitlines().index(echo)
    assert planned.splitlines()[serve + 1].strip() == f"{venv}/bin/memstack serve"


def test_the_readme_says_how_to_put_memstack_on_the_path():
    text = " ".join(prose(README).split())
    assert "`make path`" in text and "`source .venv/bin/activate`" in text
    assert "It installs `memstack` into `.venv/bin`, off your shell's `PATH`" in text
