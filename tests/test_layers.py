"""Imports point down the layers ``DESIGN.md`` draws, never up, and no transport imports
another: a module that imports a layer above its own fails here, naming both.

Each module's layer is its top-level package under ``memstack`` (``LAYERS``, lowest
first), or ``core`` for the small modules at the top (``CORE``). Imports under
``if TYPE_CHECKING:`` are left out: they name a type for the checker and load nothing.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "memstack"

LAYERS = (
    "core",
    "embeddings",
    "storage",
    "working",
    "providers",
    "bank",
    "longterm",
    "service",
    "agents",
    "wiring",
    "transports",
    "client",
    "adapters",
    "bench",
    "cli",
)
CORE = {
    "errors",
    "clock",
    "_json",
    "_counts",
    "_env",
    "secrets",
    "_secret_assignment",
    "_tokenness",
    "_gitleaks",
    "_secret_prose",
    "_payment",
    "secret_rules",
    "redaction",
    "_prompt_text",
    "tools",
    "home",
}
ELSEWHERE = {
    "context": "working",  # ProcessingContext carries the run's AgentMemory
    "settings": "wiring",  # what the wiring is built from
}
TRANSPORTS = ("rest", "mcp", "inspector")
"""Under ``memstack.transports``: none imports another (``app`` serves them together;
``schemas`` and ``errors`` are what REST and MCP share)."""


def layer(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "memstack" or len(parts) == 1 or parts[1] in ("__init__", "__main__"):
        return None
    top = parts[1]
    return "core" if top in CORE else ELSEWHERE.get(top, top)


def transport(module: str) -> str | None:
    parts = module.split(".")
    if parts[:2] == ["memstack", "transports"] and len(parts) > 2 and parts[2] in TRANSPORTS:
        return parts[2]
    return None


def modules() -> Iterator[tuple[str, Path]]:
    for path in sorted(SRC.rglob("*.py")):
        parts = path.relative_to(SRC.parent).with_suffix("").parts
        yield ".".join(parts[:-1] if parts[-1] == "__init__" else parts), path


def imports(path: Path) -> Iterator[str]:
    """Absolute imports of ``path`` that run (not those under ``if TYPE_CHECKING:``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped = {
        id(node)
        for block in ast.walk(tree)
        if isinstance(block, ast.If) and "TYPE_CHECKING" in ast.unparse(block.test)
        for statement in block.body
        for node in ast.walk(statement)
    }
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module
        elif isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)


def test_every_package_has_a_layer() -> None:
    tops = {top for module, _ in modules() if (top := layer(module)) is not None}
    assert tops <= set(LAYERS), f"give these a place in LAYERS: {sorted(tops - set(LAYERS))}"


def test_imports_point_down_the_layers() -> None:
    upward = [
        f"{module} ({mine}) imports {name} ({theirs})"
        for module, path in modules()
        if (mine := layer(module)) is not None
        for name in imports(path)
        if (theirs := layer(name)) is not None and LAYERS.index(theirs) > LAYERS.index(mine)
    ]
    assert upward == []


def test_no_transport_imports_another() -> None:
    across = [
        f"{module} imports {name}"
        for module, path in modules()
        if (mine := transport(module)) is not None
        for name in imports(path)
        if (theirs := transport(name)) is not None and theirs != mine
    ]
    assert across == []


@pytest.mark.parametrize(
    ("source", "found"),
    [
        ("from memstack.wiring import Services\n", ["memstack.wiring"]),
        ("import memstack.cli\n", ["memstack.cli"]),
        ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import memstack.cli\n", []),
    ],
)
def test_the_walk_sees_runtime_imports_only(tmp_path: Path, source: str, found: list[str]) -> None:
    module = tmp_path / "m.py"
    module.write_text(source)
    assert [name for name in imports(module) if name.startswith("memstack")] == found
