"""Every shell command of the README and of docs/ runs as written, on a fresh checkout's
virtualenv, and every `memstack ...` the prose names exists with the options it shows.

Each line of each ```sh block is read as the shell would (comments dropped, continuations
joined) and run: a memstack command that is quick and offline exactly as written, one that
would reach a hosted LLM, a server or run a full benchmark with ``--help`` (the command and
its options parse) or, for ``bench recall``, at a tiny size; ``make`` targets with
``make -n``. Blocks that call curl are run against a live server by tests/test_docs.py; the
``claude`` CLI is not ours, so its line is checked for the memstack command it starts. A
line this table does not know fails, so a new command in the docs gets a rule here.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import click
import pytest

from memstack.cli import main as memstack_cli
from tests.docs_pages import PAGES, ROOT, all_blocks, is_curl, prose, shell_lines

MEMSTACK = str(Path(sys.executable).parent / "memstack")
TINY_RECALL = ["--sizes", "10", "--queries", "2", "--writes", "0", "--embedder", "hash"]
LINES = [
    (f"{block.name}: {command}", command, printed)
    for block in all_blocks("sh")
    if not is_curl(block)
    for command, printed in shell_lines(block)
]
INLINE = sorted(
    {(page.name, span) for page in PAGES for span in re.findall(r"`(memstack [^`]+)`", prose(page))}
)


def _plan(argv: list[str], tmp: Path) -> list[str]:
    """The argv to run for one documented line."""
    name = Path(argv[0]).name
    if name == "make":
        return ["make", "--no-print-directory", "-n", *argv[1:]]
    if name == "claude":
        started = argv[argv.index("--") + 1 :] if "--" in argv else ["memstack", "mcp"]
        return [MEMSTACK, *started[1:], "--help"]
    assert name == "memstack", f"no rule for the documented command {argv[0]!r}: add one"
    args = argv[1:]
    if "--help" in args or "--version" in args or args[:1] == ["prompt"]:
        return [MEMSTACK, *args]
    if args[:2] == ["agent", "run"] and any(a.startswith("scripted:") for a in args):
        return [MEMSTACK, *args]
    if args[:2] == ["bench", "recall"]:
        return [MEMSTACK, *args, *TINY_RECALL, "--out", str(tmp / "recall.json")]
    return [MEMSTACK, *args, "--help"]


def test_the_docs_have_the_first_run_commands():
    memstack_lines = [shlex.split(command, comments=True)[1:] for _, command, _ in LINES]
    for wanted in (["--version"], ["keys", "--help"], ["bench", "recall", "--help"]):
        assert wanted in memstack_lines, wanted


@pytest.mark.parametrize(("where", "line", "printed"), LINES, ids=[w[:80] for w, _, _ in LINES])
def test_documented_shell_line_runs(where: str, line: str, printed: str, tmp_path: Path):
    argv = _plan(shlex.split(line, comments=True), tmp_path)
    env = {**os.environ, "MEMSTACK_MEMORY_EMBEDDING_PROVIDER": "hash"}
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, (where, argv, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    assert printed in done.stdout


def _placeholder(word: str) -> bool:
    """NAME, <noun>, ..., mem_...: stands for what the reader fills in."""
    return word.isupper() or word.startswith("<") or "..." in word


@pytest.mark.parametrize(("page", "span"), INLINE, ids=[f"{p}: {s}" for p, s in INLINE])
def test_memstack_command_named_in_prose_exists(page: str, span: str):
    """`memstack keys create --tenant NAME [--agents a,b]`: each word a subcommand until the
    arguments start, and each option one that command takes."""
    command: click.Command = memstack_cli
    words = span.replace("[", " ").replace("]", " ").split()[1:]
    arguments = False
    for word in words:
        if word.startswith("-"):
            option = word.split("=")[0]
            known = {o for p in command.params for o in (*p.opts, *p.secondary_opts)}
            assert option in known | {"--help"}, f"{page}: `{span}`: {option} is not an option"
        elif isinstance(command, click.Group) and not arguments:
            sub = command.get_command(click.Context(command), word)
            if sub is not None:
                command = sub
            else:
                assert _placeholder(word), f"{page}: `{span}`: no command {word!r}"
                arguments = True
        else:
            arguments = True
