"""memstack: the memory layer for LLM agents."""

from memstack._json import JSON
from memstack.bank import MemoryBank
from memstack.clock import Clock, ManualClock, SystemClock
from memstack.context import ProcessingContext
from memstack.errors import (
    ConfigError,
    InvalidInput,
    MemstackError,
    NotFound,
    ProviderError,
    StoreUnavailable,
    ToolInputError,
)
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
