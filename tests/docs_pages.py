"""The hand-written markdown pages whose examples the tests run, and their code blocks.

The pages are the README and every page under docs/ except docs/benchmarks.md and
docs/scaling.md, which `memstack bench report` writes from the benchmarks' JSON
(tests/bench checks them).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
GENERATED = {ROOT / "docs" / "benchmarks.md", ROOT / "docs" / "scaling.md"}
PAGES = [README, *sorted(p for p in (ROOT / "docs").glob("*.md") if p not in GENERATED)]
FENCE = re.compile(r"^```(\S*)\n(.*?)^```$", flags=re.S | re.M)


@dataclass(frozen=True, kw_only=True)
class Block:
    """One fenced code block: its page, the line its fence opens on, language and text."""

    page: Path
    line: int
    lang: str
    text: str

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def text(page: Path) -> str:
    return page.read_text(encoding="utf-8")


def blocks(page: Path) -> list[Block]:
    found = text(page)
    return [
        Block(page=page, line=found.count("\n", 0, m.start()) + 1, lang=m.group(1), text=m.group(2))
        for m in FENCE.finditer(found)
    ]


def all_blocks(lang: str) -> list[Block]:
    return [b for page in PAGES for b in blocks(page) if b.lang == lang]


def prose(page: Path) -> str:
    """The page without its code blocks."""
    return FENCE.sub("", text(page))


def is_curl(block: Block) -> bool:
    """A ```sh block that calls curl: run as one script against a live server."""
    return block.lang == "sh" and re.search(r"^\s*curl ", block.text, flags=re.M) is not None


def shell_lines(block: Block) -> list[tuple[str, str]]:
    """(command, what its ``# prints:`` comment says it prints) of each command of a
    shell block, read as the shell would: continuations joined, a quoted string may span
    lines."""
    found = []
    pending = ""
    for line in block.text.replace("\\\n", " ").splitlines():
        pending += line + "\n"
        try:
            words = shlex.split(pending, comments=True)
        except ValueError:  # a quotation still open
            continue
        if words:
            printed = re.search(r"#\s*prints:\s*(.+)$", line)
            found.append((pending.strip(), printed.group(1).strip() if printed else ""))
        pending = ""
    assert not pending.strip(), f"{block.name}: unfinished command {pending!r}"
    return found
