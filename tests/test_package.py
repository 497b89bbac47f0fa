import importlib

import pytest

import memstack

SUBPACKAGES = [
    "memstack",
    "memstack.working",
    "memstack.bank",
    "memstack.agents",
    "memstack.providers",
    "memstack.tools",
    "memstack.errors",
    "memstack.clock",
]


@pytest.mark.parametrize("module_name", SUBPACKAGES)
def test_all_names_import(module_name: str):
    module = importlib.import_module(module_name)
    missing = [name for name in module.__all__ if not hasattr(module, name)]
    assert missing == []


@pytest.mark.parametrize(
    "name",
    [
        "AgentMemory",
        "MemoryEntry",
        "memory_keys",
        "memory_tools",
        "Tool",
        "ToolRegistry",
        "ProcessingContext",
        "InvalidInput",
        "ToolInputError",
        "MemoryBank",
        "ProviderError",
    ],
)
def test_issue_names_are_public(name: str):
    assert name in memstack.__all__


def test_no_docstring_cites_a_spec_users_do_not_have() -> None:
    import re
    from pathlib import Path

    import memstack

    root = Path(memstack.__file__).parent
    citing = [
        f"{path.relative_to(root)}:{n}"
        for path in sorted(root.rglob("*.py"))
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if re.search(r"\bspec 00[0-4]\b", line, re.IGNORECASE)
    ]
    assert citing == [], "say what the behaviour is instead: " + ", ".join(citing)
