"""MemoryBank: a string per agent, kept between runs, and its three LLM tools.

Every bank keeps its strings in a record store: ``MemoryBank()`` in process memory (an
in-memory store of its own), ``MemoryBank(path=...)`` or ``MemoryBank(store=...)`` in a
durable one, so they survive a restart.
Attach one to an agent with ``agent.memory(bank)``: beside the run's working memory, one
``memory_read`` and one ``memory_write`` serve both, told apart by their arguments.
"""

from memstack.bank._text import MAX_CONTENT_BYTES
from memstack.bank.bank import BANK_RECORD_KIND, DEFAULT_NAMESPACE, MemoryBank
from memstack.bank.tools import (
    BANK_PROMPT,
    BANK_TOOL_NAMES,
    BankReadTool,
    BankSearchTool,
    BankWriteTool,
    bank_tools,
)
from memstack.bank.with_working import (
    SharedReadTool,
    SharedWriteTool,
    bank_tools_with_working_memory,
)

__all__ = [
    "BANK_PROMPT",
    "BANK_RECORD_KIND",
    "BANK_TOOL_NAMES",
    "DEFAULT_NAMESPACE",
    "MAX_CONTENT_BYTES",
    "BankReadTool",
    "BankSearchTool",
    "BankWriteTool",
    "MemoryBank",
    "SharedReadTool",
    "SharedWriteTool",
    "bank_tools",
    "bank_tools_with_working_memory",
]
