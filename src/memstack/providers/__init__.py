"""LLM providers behind one ChatModel protocol."""

from memstack.providers.base import (
    ChatModel,
    Completion,
    Message,
    Role,
    StreamEvent,
    TextDelta,
    ToolCall,
    Usage,
    collect,
)
from memstack.providers.scripted import ScriptedCall, ScriptedProvider

__all__ = [
    "ChatModel",
    "Completion",
    "Message",
    "Role",
    "ScriptedCall",
    "ScriptedProvider",
    "StreamEvent",
    "TextDelta",
    "ToolCall",
    "Usage",
    "collect",
]
