"""Scripted models for whole agent runs: each step is answered by the rule whose prefix
starts its instructions (the first line of the step's user message)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from memstack import ProcessingContext, Tool
from memstack._json import JSON
from memstack.providers import Completion, Message, ScriptedProvider, ToolCall

call = ScriptedProvider.tool_call
Reply = str | Completion | ToolCall
Rule = Callable[[list[Message]], Reply]


def finish(result: Any) -> Completion:
    return Completion(tool_calls=(call("finish_step", {"result": result}),))


def turns(*replies: Reply) -> Rule:
    """Reply with the n-th entry on the n-th model turn of the step (the last repeats)."""

    def rule(messages: list[Message]) -> Reply:
        done = sum(1 for m in messages if m.role == "assistant")
        return replies[min(done, len(replies) - 1)]

    return rule


def tool_results(messages: Sequence[Message], name: str) -> list[Any]:
    return [json.loads(m.content) for m in messages if m.role == "tool" and m.name == name]


def by_instructions(rules: Mapping[str, Rule]) -> ScriptedProvider:
    def responder(messages: Sequence[Message]) -> Reply:
        user = next(m.content for m in messages if m.role == "user")
        for prefix, rule in rules.items():
            if user.startswith(prefix):
                return rule(list(messages))
        raise AssertionError(f"no scripted rule for a step starting {user[:60]!r}")

    return ScriptedProvider(responder=responder)


class Rendezvous(Tool):
    """Returns only once ``parties`` calls are waiting at once: proves they overlap."""

    name = "rendezvous"
    description = "Wait for the others."
    input_schema = {"type": "object", "properties": {}, "additionalProperties": False}

    def __init__(self, parties: int) -> None:
        self.parties = parties
        self.arrived = 0
        self.all_here = asyncio.Event()

    async def process(self, context: ProcessingContext, params: Mapping[str, JSON]) -> JSON:
        self.arrived += 1
        if self.arrived >= self.parties:
            self.all_here.set()
        await asyncio.wait_for(self.all_here.wait(), timeout=5)
        return {"met": self.parties}
