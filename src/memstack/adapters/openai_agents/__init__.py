"""memstack in the OpenAI Agents SDK: a ``Session`` and memstack's tools as function tools.

- ``MemstackSession``: conversation history kept by memstack (``Runner.run(..., session=)``).
- ``function_tools(tools)``: memstack tools (e.g. ``long_term_memory_tools(memory)``) as
  ``FunctionTool``s for ``Agent(tools=...)``.
- ``ScriptedResponsesModel``: a ``Model`` replaying Responses API payloads, for tests.

Needs the SDK: ``pip install "memstack[openai-agents]"``.
"""

try:
    import agents  # noqa: F401
except ImportError as exc:  # pragma: no cover - the extra is installed in the tests
    from memstack.errors import ConfigError

    raise ConfigError(
        "memstack.adapters.openai_agents needs the OpenAI Agents SDK: "
        'pip install "memstack[openai-agents]"'
    ) from exc

from memstack.adapters.openai_agents.scripted import (
    ResponsesCall,
    ScriptedResponsesModel,
    function_call_item,
    message_item,
    response_payload,
)
from memstack.adapters.openai_agents.session import MemstackSession
from memstack.adapters.openai_agents.tools import function_tool, function_tools

__all__ = [
    "MemstackSession",
    "ResponsesCall",
    "ScriptedResponsesModel",
    "function_call_item",
    "function_tool",
    "function_tools",
    "message_item",
    "response_payload",
]
