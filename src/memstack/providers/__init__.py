"""LLM providers behind one ChatModel protocol."""

from memstack.providers.base import ChatModel, Completion, Message, Role, ToolCall, Usage
from memstack.providers.scripted import ScriptedCall, ScriptedProvider

__all__ = [
    "ChatModel",
    "Completion",
    "Message",
    "Role",
    "ScriptedCall",
    "ScriptedProvider",
    "ToolCall",
    "Usage",
]
