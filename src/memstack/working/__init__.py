"""In-run working memory: AgentMemory, its keys, and its three LLM tools."""

from memstack.working.keys import MemoryKeys, memory_keys
from memstack.working.memory import AgentMemory, MemoryEntry, MemoryKind
from memstack.working.prompts import (
    MEMORY_TOOLS_PROMPT,
    UPSTREAM_MEMORY_HEADER,
    upstream_memory_hint,
    with_upstream_hint,
)
from memstack.working.tools import (
    MAX_LIST_ENTRIES,
    MEMORY_TOOL_NAMES,
    MemoryListTool,
    MemoryReadTool,
    MemoryWriteTool,
    memory_tools,
)

__all__ = [
    "MAX_LIST_ENTRIES",
    "MEMORY_TOOLS_PROMPT",
    "MEMORY_TOOL_NAMES",
    "UPSTREAM_MEMORY_HEADER",
    "AgentMemory",
    "MemoryEntry",
    "MemoryKeys",
    "MemoryKind",
    "MemoryListTool",
    "MemoryReadTool",
    "MemoryWriteTool",
    "memory_keys",
    "memory_tools",
    "upstream_memory_hint",
    "with_upstream_hint",
]
