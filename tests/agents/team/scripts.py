"""A scripted model that plays every member of a team: the member's name starts the
user message of each of its turns, and that member's rule answers."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from memstack.providers import Completion, Message, ScriptedProvider

Rule = Callable[[list[Message]], Completion]


def use(name: str, args: dict[str, Any]) -> Completion:
    return Completion(tool_calls=(ScriptedProvider.tool_call(name, args),))


def finish(status: str) -> Completion:
    """A member's turn ends with a plain-text status: its steps have no output schema,
    so they are not offered ``finish_step``."""
    return Completion(content=status)


def last_tool(messages: Sequence[Message]) -> str | None:
    """The tool whose result the model is answering, if any."""
    last = messages[-1]
    return last.name if last.role == "tool" else None


def last_result(messages: Sequence[Message]) -> Any:
    return json.loads(messages[-1].content)


def instructions(messages: Sequence[Message]) -> str:
    return next(m.content for m in messages if m.role == "user")


def member_of(messages: Sequence[Message]) -> str:
    return instructions(messages).split(":", 1)[0]


def team_model(rules: dict[str, Rule]) -> ScriptedProvider:
    def responder(messages: Sequence[Message]) -> Completion:
        return rules[member_of(messages)](list(messages))

    return ScriptedProvider(responder=responder)


def calls_of(provider: ScriptedProvider, member: str) -> list[Any]:
    return [c for c in provider.calls if member_of(c.messages) == member]
