"""memstack: the memory layer for LLM agents.

The names below load on first use, so ``import memstack.client`` (or ``memstack.errors``)
costs no numpy, storage or embedding import.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from memstack.errors import (
    ConfigError,
    InvalidInput,
    MemstackError,
    NotFound,
    ProviderError,
    StoreUnavailable,
    ToolInputError,
)

if TYPE_CHECKING:
    from memstack._json import JSON
    from memstack.bank import MemoryBank
    from memstack.clock import Clock, ManualClock, SystemClock
    from memstack.context import ProcessingContext
    from memstack.tools import (
        DEFAULT_REGISTRY,
        ProviderTool,
        Tool,
        ToolRegistry,
        get_all_tools,
        register_tool,
        resolve_tool,
    )
    from memstack.working import (
        MEMORY_TOOLS_PROMPT,
        AgentMemory,
        MemoryEntry,
        MemoryKind,
        memory_keys,
        memory_tools,
        upstream_memory_hint,
    )

__version__ = "0.1.0"

_LAZY: dict[str, str] = {
    "JSON": "memstack._json",
    "MemoryBank": "memstack.bank",
    "Clock": "memstack.clock",
    "ManualClock": "memstack.clock",
    "SystemClock": "memstack.clock",
    "ProcessingContext": "memstack.context",
    **dict.fromkeys(
        (
            "DEFAULT_REGISTRY",
            "ProviderTool",
            "Tool",
            "ToolRegistry",
            "get_all_tools",
            "register_tool",
            "resolve_tool",
        ),
        "memstack.tools",
    ),
    **dict.fromkeys(
        (
            "MEMORY_TOOLS_PROMPT",
            "AgentMemory",
            "MemoryEntry",
            "MemoryKind",
            "memory_keys",
            "memory_tools",
            "upstream_memory_hint",
        ),
        "memstack.working",
    ),
}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'memstack' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "DEFAULT_REGISTRY",
    "JSON",
    "MEMORY_TOOLS_PROMPT",
    "AgentMemory",
    "Clock",
    "ConfigError",
    "InvalidInput",
    "ManualClock",
    "MemoryBank",
    "MemoryEntry",
    "MemoryKind",
    "MemstackError",
    "NotFound",
    "ProcessingContext",
    "ProviderError",
    "ProviderTool",
    "StoreUnavailable",
    "SystemClock",
    "Tool",
    "ToolInputError",
    "ToolRegistry",
    "__version__",
    "get_all_tools",
    "memory_keys",
    "memory_tools",
    "register_tool",
    "resolve_tool",
    "upstream_memory_hint",
]
