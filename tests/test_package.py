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
