"""LLM providers behind one ChatModel protocol.

The OpenAI and Anthropic SDKs are optional extras, imported only when a provider is
constructed, so importing this package needs neither.
"""

from memstack.providers.anthropic import AnthropicProvider
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
from memstack.providers.openai import OpenAIProvider
from memstack.providers.resolve import resolve_model
from memstack.providers.scripted import ScriptedCall, ScriptedProvider

__all__ = [
    "AnthropicProvider",
    "ChatModel",
    "Completion",
    "Message",
    "OpenAIProvider",
    "Role",
    "ScriptedCall",
    "ScriptedProvider",
    "StreamEvent",
    "TextDelta",
    "ToolCall",
    "Usage",
    "collect",
    "resolve_model",
]
