"""The adapters' public names, and the error a missing extra gives."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

ADAPTERS = {
    "memstack.adapters.langgraph": ("langgraph", "memstack[langgraph]"),
    "memstack.adapters.openai_agents": ("agents", "memstack[openai-agents]"),
}


@pytest.mark.parametrize("name", [*ADAPTERS, "memstack.adapters.tool_loop"])
def test_all_names_import(name: str) -> None:
    module = importlib.import_module(name)
    assert [n for n in module.__all__ if not hasattr(module, n)] == []


@pytest.mark.parametrize("name", list(ADAPTERS))
def test_a_missing_framework_names_the_extra(name: str) -> None:
    blocked, extra = ADAPTERS[name]
    code = f"import sys; sys.modules[{blocked!r}] = None; import {name}"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert run.returncode != 0
    assert "memstack.errors.ConfigError" in run.stderr
    assert f'pip install "{extra}"' in run.stderr
