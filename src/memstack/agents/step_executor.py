"""StepExecutor: the tool-calling loop that runs one step.

Build messages, stream the model, run the turn's tool calls concurrently, append the
results, repeat until ``finish_step`` (a step with an output schema) or a plain answer
(a step without one), or ``max_iterations``. ``finish_step`` is attached only to a step
with an output schema: it exists to validate a result against one.
The executor keeps ``step.completed``: false while the step runs, true once it finishes.
Working memory is wired in: the memory tools are
attached automatically, the memory-tools section is in every default prompt, a caller's
system prompt is a preamble (never a replacement), the user message names the declared
upstream keys without their values, ``step:<id>`` is always written, ``task:<id>`` on
finish-task steps, and ``{"error": ...}`` when iterations run out.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Sequence
from typing import Final

from memstack._json import JSON, JSONObject, dumps
from memstack.agents._text import clip, one_line
from memstack.agents.finish_step import FINISH_STEP, FinishStepTool
from memstack.agents.messages import (
    Chunk,
    ProcessingMessage,
    StepResult,
    ToolCallUpdate,
    ToolResult,
)
from memstack.agents.plan import Step, Task
from memstack.agents.prompts import (
    CONCLUSION_NOTE,
    CONCLUSION_NOTE_UNSTRUCTURED,
    build_system_prompt,
)
from memstack.context import ProcessingContext
from memstack.errors import InvalidInput, ToolInputError
from memstack.providers.base import (
    INVALID_JSON_KEY,
    ChatModel,
    Message,
    TextDelta,
    ToolCall,
    Usage,
)
from memstack.tools import Tool
from memstack.working import memory_keys, memory_tools, with_upstream_hint

__all__ = ["DEFAULT_MAX_ITERATIONS", "DEFAULT_MAX_TOKEN_LIMIT", "StepExecutor", "estimate_tokens"]

DEFAULT_MAX_ITERATIONS: Final = 5
DEFAULT_MAX_TOKEN_LIMIT: Final = 128_000
CONCLUSION_AT: Final = 0.9
_KEEP_RECENT: Final = 6
_SUMMARY_CHARS: Final = 300


_DISCOVER_SCHEMA: Final[JSONObject] = {
    "type": ["array", "object"],
    "description": "The items the process step fans out over: an array of them, or an "
    "object with exactly one array field holding them.",
}


def _result_schema(step: Step) -> JSONObject | None:
    """The schema a step's result is checked against, and so whether it gets
    ``finish_step``: its ``output_schema``; a discover step without one still has to hand
    back a list of items, so it gets a schema that asks for one."""
    if step.output_schema is None and step.mode == "discover":
        return dict(_DISCOVER_SCHEMA)
    return step.output_schema


def estimate_tokens(messages: Sequence[Message]) -> int:
    """About four characters a token, over every message's text and tool calls."""
    chars = 0
    for message in messages:
        chars += len(message.content) + 8
        for call in message.tool_calls:
            chars += len(call.name) + len(dumps(call.arguments))
    return chars // 4 + 1


class StepExecutor:
    def __init__(
        self,
        *,
        task: Task,
        step: Step,
        context: ProcessingContext,
        provider: ChatModel,
        model: str,
        tools: Sequence[Tool] = (),
        system_prompt: str = "",
        skills_section: str = "",
        max_iterations: int = DEFAULT_MAX_ITERATIONS,
        max_token_limit: int = DEFAULT_MAX_TOKEN_LIMIT,
        use_finish_task: bool = False,
        upstream_memory_keys: Sequence[str] = (),
    ) -> None:
        if max_iterations < 1:
            raise InvalidInput("max_iterations must be at least 1.", field="max_iterations")
        if max_token_limit < 1000:
            raise InvalidInput("max_token_limit must be at least 1000.", field="max_token_limit")
        self.task, self.step, self.context = task, step, context
        self.provider, self.model = provider, model
        self.max_iterations = max_iterations
        self.max_token_limit = max_token_limit
        self.use_finish_task = use_finish_task
        self.upstream_memory_keys = tuple(upstream_memory_keys)
        schema = _result_schema(step)
        self.finish_tool = FinishStepTool(schema) if schema is not None else None
        """``finish_step``, only on a step with an output schema."""
        self.tools = _attach(tools, step, self.finish_tool)
        self.system_prompt = build_system_prompt(
            caller_prompt=system_prompt,
            output_schema=schema,
            finish_task=use_finish_task,
            skills_section=skills_section,
        )
        self.history: list[Message] = []
        self.concluding = False
        """In the conclusion stage: once entered it lasts to the end of the step."""
        self.usage = Usage()
        self.result: JSON = None
        self.error: str | None = None

    def user_message(self) -> str:
        """The step's instructions and the "Required upstream memory" hint (keys, no values)."""
        declared = [memory_keys.step(dep) for dep in self.step.depends_on]
        return with_upstream_hint(
            self.step.instructions, self.context.memory, [*declared, *self.upstream_memory_keys]
        )

    async def execute(self) -> AsyncIterator[ProcessingMessage]:
        self.step.completed = False
        self.history = [
            Message(role="system", content=self.system_prompt),
            Message(role="user", content=self.user_message()),
        ]
        for _ in range(self.max_iterations):
            tools = self._offered()
            text: list[str] = []
            calls: list[ToolCall] = []
            async for event in self.provider.stream(
                self.history,
                model=self.model,
                tools=[t.to_provider_tool() for t in tools],
            ):
                if isinstance(event, TextDelta):
                    text.append(event.content)
                    yield Chunk(content=event.content, step_id=self.step.id)
                elif isinstance(event, ToolCall):
                    calls.append(event)
                else:
                    self.usage = Usage(
                        input_tokens=self.usage.input_tokens + event.input_tokens,
                        output_tokens=self.usage.output_tokens + event.output_tokens,
                    )
            content = "".join(text)
            self.history.append(Message(role="assistant", content=content, tool_calls=tuple(calls)))
            if not calls:
                if self.finish_tool is None and content.strip():
                    yield self._finish(content)
                    return
                self.history.append(Message(role="user", content=self._nudge()))
                continue
            finished = False
            async for message in self._run_tools(calls, tools):
                if isinstance(message, StepResult):
                    finished = True
                yield message
            if finished:
                return
        yield self._give_up()

    # -- tools ---------------------------------------------------------------------------

    async def _run_tools(
        self, calls: list[ToolCall], available: Sequence[Tool]
    ) -> AsyncIterator[ProcessingMessage]:
        by_name = {t.name: t for t in available}
        for call in calls:
            tool = by_name.get(call.name)
            message = tool.user_message(call.arguments) if tool else f"Calling {call.name}"
            yield ToolCallUpdate(
                step_id=self.step.id,
                call_id=call.id,
                name=call.name,
                arguments=call.arguments,
                message=message,
            )
        outcomes = await asyncio.gather(*(self._run_one(call, by_name) for call in calls))
        finish: JSON = None
        finished = False
        for call, (result, error) in zip(calls, outcomes, strict=True):
            payload: JSON = {"error": error} if error is not None else result
            self.history.append(
                Message(
                    role="tool", tool_call_id=call.id, name=call.name, content=_as_text(payload)
                )
            )
            yield ToolResult(
                step_id=self.step.id, call_id=call.id, name=call.name, result=payload, error=error
            )
            ends = self.finish_tool is not None and call.name == FINISH_STEP
            if ends and error is None and not finished:
                finish, finished = result, True
        if finished:
            yield self._finish(finish)

    async def _run_one(self, call: ToolCall, by_name: dict[str, Tool]) -> tuple[JSON, str | None]:
        tool = by_name.get(call.name)
        if tool is None:
            available = ", ".join(sorted(by_name))
            return None, f"unknown tool `{call.name}`; the available tools are: {available}."
        if INVALID_JSON_KEY in call.arguments:
            return None, (
                f"the arguments of `{call.name}` were not valid JSON; "
                "call it again with a JSON object that matches its schema."
            )
        try:
            return await tool.process(self.context, call.arguments), None
        except ToolInputError as exc:
            return None, str(exc)
        except Exception as exc:  # a tool's own failure goes back to the model
            return None, f"`{call.name}` failed: {type(exc).__name__}: {exc}"

    # -- ending ----------------------------------------------------------------------------

    def _finish(self, result: JSON) -> StepResult:
        memory = self.context.memory
        memory.set(
            key=memory_keys.step(self.step.id),
            kind="step_result",
            value=result,
            source=self.step.id,
            title=one_line(self.step.instructions),
        )
        if self.use_finish_task:
            memory.set(
                key=memory_keys.task(self.task.id),
                kind="task_result",
                value=result,
                source=self.task.id,
                title=self.task.title,
                description=self.task.description,
            )
        self.result = result
        self.step.completed = True
        return StepResult(step_id=self.step.id, result=result, is_task_result=self.use_finish_task)

    def _give_up(self) -> StepResult:
        self.error = f"step {self.step.id!r} did not finish within {self.max_iterations} iterations"
        value: JSON = {"error": self.error}
        self.context.memory.set(
            key=memory_keys.step(self.step.id),
            kind="step_result",
            value=value,
            source=self.step.id,
            title=one_line(self.step.instructions),
        )
        self.result = value
        return StepResult(step_id=self.step.id, result=value, error=self.error)

    # -- token management -----------------------------------------------------------------

    def _offered(self) -> list[Tool]:
        """The tools of this turn: all of them, or in the conclusion stage only
        ``finish_step`` (none for a step without an output schema, which then ends with
        its plain answer)."""
        if not self._concluding():
            return self.tools
        return [self.finish_tool] if self.finish_tool is not None else []

    def _nudge(self) -> str:
        """What the model is told after a turn that neither called a tool nor finished."""
        return _NUDGE if self.finish_tool is not None else _NUDGE_UNSTRUCTURED

    def _concluding(self) -> bool:
        """Summarize older messages when the history outgrows the budget; at 90% of it,
        enter the conclusion stage, where only ``finish_step`` is offered (no tool at all
        on a step without an output schema). A summary that brings the history under 90%
        again does not end the stage."""
        if estimate_tokens(self.history) >= self.max_token_limit * CONCLUSION_AT:
            self._summarize_older()
        if self.concluding:
            return True
        if estimate_tokens(self.history) < self.max_token_limit * CONCLUSION_AT:
            return False
        self.concluding = True
        note = CONCLUSION_NOTE if self.finish_tool is not None else CONCLUSION_NOTE_UNSTRUCTURED
        self.history.append(Message(role="user", content=note))
        return True

    def _summarize_older(self) -> None:
        """Keep the system prompt, the instructions and the latest turns; fold the turns
        between into one short summary message."""
        head, middle = self.history[:2], self.history[2:-_KEEP_RECENT]
        if not middle:
            return
        lines: list[str] = []
        for message in middle:
            if message.tool_calls:
                lines.extend(
                    f"- called {c.name}({clip(dumps(c.arguments), _SUMMARY_CHARS)})"
                    for c in message.tool_calls
                )
            elif message.role == "tool":
                lines.append(f"- {message.name} returned: {clip(message.content, _SUMMARY_CHARS)}")
            elif message.content.strip():
                lines.append(f"- {message.role}: {clip(message.content, _SUMMARY_CHARS)}")
        summary = Message(
            role="user", content="Summary of earlier work in this step:\n" + "\n".join(lines)
        )
        recent = self.history[-_KEEP_RECENT:]
        while recent and recent[0].role == "tool":  # never start with an orphaned tool result
            recent = recent[1:]
        self.history = [*head, summary, *recent]


_NUDGE: Final = (
    "Continue the step. When it is complete, call `finish_step` with the result; "
    "a plain-text answer does not finish a step that has an output schema."
)
_NUDGE_UNSTRUCTURED: Final = (
    "Continue the step. When it is complete, reply with the result as plain text, "
    "without a tool call."
)


def _attach(tools: Sequence[Tool], step: Step, finish: FinishStepTool | None) -> list[Tool]:
    """The step's tools: the caller's (restricted to ``step.tools`` when set), then the
    memory tools, then ``finish_step`` when the step has an output schema. The first tool
    of a name wins, so a caller's tool is never replaced by an auto-attached one."""
    allowed = set(step.tools) if step.tools is not None else None
    chosen: dict[str, Tool] = {}
    for tool in tools:
        if allowed is None or tool.name in allowed:
            chosen.setdefault(tool.name, tool)
    auto: list[Tool] = [*memory_tools(source=step.id), *([finish] if finish else [])]
    for tool in auto:
        chosen.setdefault(tool.name, tool)
    return list(chosen.values())


def _as_text(payload: JSON) -> str:
    return payload if isinstance(payload, str) else json.dumps(payload, ensure_ascii=False)
