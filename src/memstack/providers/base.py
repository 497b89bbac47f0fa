"""The provider seam: chat messages, tool calls, completions, and the ChatModel protocol.

Real providers (OpenAI-compatible, Anthropic) and the ScriptedProvider implement
``ChatModel``; everything that needs an LLM (extraction, agents) takes one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

from memstack._json import JSONObject

__all__ = ["ChatModel", "Completion", "Message", "Role", "ToolCall", "Usage"]

Role = Literal["system", "user", "assistant", "tool"]


@dataclass(frozen=True, kw_only=True)
class ToolCall:
    id: str
    name: str
    arguments: JSONObject


@dataclass(frozen=True, kw_only=True)
class Message:
    role: Role
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    """Calls an assistant message makes."""
    tool_call_id: str | None = None
    """On a tool message: the call it answers."""
    name: str | None = None


@dataclass(frozen=True, kw_only=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0


@dataclass(frozen=True, kw_only=True)
class Completion:
    """One model turn: text, tool calls, or both."""

    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = Usage()
    model: str | None = None


@runtime_checkable
class ChatModel(Protocol):
    """An LLM that completes a conversation."""

    async def generate(
        self,
        messages: Sequence[Message],
        *,
        model: str,
        tools: Sequence[JSONObject] = (),
        json_output: bool = False,
        max_tokens: int | None = None,
    ) -> Completion:
        """One completion. ``tools`` are OpenAI-shaped function definitions;
        ``json_output`` asks for a JSON object as the whole reply."""
        ...
