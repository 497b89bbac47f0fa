"""The step executor's tool loop and its working-memory contract (spec 003, spec 000)."""

import asyncio
from collections.abc import Mapping
from typing import Any

import pytest

from memstack import ConfigError, ProcessingContext, Tool, ToolInputError
from memstack._json import JSON
from memstack.agents.messages import Chunk, StepResult, ToolCallUpdate, ToolResult
from memstack.agents.plan import Step, Task
from memstack.agents.prompts import CONCLUSION_NOTE, CONCLUSION_NOTE_UNSTRUCTURED
from memstack.agents.step_executor import StepExecutor
from memstack.providers import Completion, ScriptedProvider, ToolCall

call = ScriptedProvider.tool_call
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"findings": {"type": "array", "items": {"type": "string"}}},
    "required": ["findings"],
    "additionalProperties": False,
}


class EchoTool(Tool):
    name = "echo"
    description = "Echo the text."
    input_schema = {
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
    }

    async def process(self, context: ProcessingContext, params: Mapping[str, JSON]) -> JSON:
        return {"echo": params["text"]}


class BrokenTool(Tool):
    name = "broken"
    description = "Always fails."
    input_schema = {"type": "object"}

    async def process(self, context: ProcessingContext, params: Mapping[str, JSON]) -> JSON:
        raise RuntimeError("disk on fire")


def executor(provider: ScriptedProvider, context: ProcessingContext, **kwargs: Any) -> StepExecutor:
    step = kwargs.pop(
        "step", Step(id="s1", instructions="Research the topic.", output_schema=SCHEMA)
    )
    task = kwargs.pop("task", None) or Task(
        id="t1", title="Research", description="Find things.", steps=(step,)
    )
    return StepExecutor(
        task=task, step=step, context=context, provider=provider, model="m", **kwargs
    )


async def drain(ex: StepExecutor) -> list[Any]:
    return [m async for m in ex.execute()]


async def test_finish_step_writes_step_and_task_results():
    provider = ScriptedProvider(
        [
            Completion(
                content="Done. ",
                tool_calls=(call("finish_step", {"result": {"findings": ["alpha"]}}),),
            )
        ]
    )
    context = ProcessingContext()
    messages = await drain(executor(provider, context, use_finish_task=True))
    assert isinstance(messages[0], Chunk)
    final = messages[-1]
    assert (
        isinstance(final, StepResult)
        and final.is_task_result
        and final.result == {"findings": ["alpha"]}
    )
    step_entry = context.memory.get("step:s1")
    task_entry = context.memory.get("task:t1")
    assert step_entry is not None and step_entry.kind == "step_result" and step_entry.source == "s1"
    assert task_entry is not None and task_entry.kind == "task_result"
    assert (task_entry.title, task_entry.description, task_entry.value) == (
        "Research",
        "Find things.",
        {"findings": ["alpha"]},
    )


async def test_a_middle_step_writes_only_its_step_key():
    provider = ScriptedProvider(
        [Completion(tool_calls=(call("finish_step", {"result": {"findings": []}}),))]
    )
    context = ProcessingContext()
    await drain(executor(provider, context, use_finish_task=False))
    assert context.memory.has("step:s1") and not context.memory.has("task:t1")


async def test_memory_tools_are_attached_and_taught():
    provider = ScriptedProvider(
        [Completion(tool_calls=(call("finish_step", {"result": {"findings": []}}),))]
    )
    await drain(
        executor(
            provider,
            ProcessingContext(),
            tools=[EchoTool()],
            system_prompt="You are Ada, a careful researcher.",
        )
    )
    (sent,) = provider.calls
    assert sent.tool_names == ["echo", "memory_list", "memory_read", "memory_write", "finish_step"]
    system = sent.messages[0].content
    assert system.startswith("You are Ada, a careful researcher.")  # a preamble, not a replacement
    assert "## Memory Tools (progressive disclosure)" in system and "finish_step" in system
    assert '"findings"' in system  # the output schema


async def test_caller_tools_win_over_auto_attached_ones_of_the_same_name():
    class MyMemoryRead(EchoTool):
        name = "memory_read"

    provider = ScriptedProvider(
        [Completion(tool_calls=(call("finish_step", {"result": {"findings": []}}),))]
    )
    mine = MyMemoryRead()
    ex = executor(provider, ProcessingContext(), tools=[mine])
    assert [t for t in ex.tools if t.name == "memory_read"] == [mine]


MEMORY_TOOLS = ["memory_list", "memory_read", "memory_write"]


@pytest.mark.parametrize(
    ("step", "offered"),
    [
        (
            Step(id="s1", instructions="Do it.", tools=("echo",), output_schema=SCHEMA),
            ["echo", *MEMORY_TOOLS, "finish_step"],
        ),
        (Step(id="s1", instructions="Do it.", tools=("echo",)), ["echo", *MEMORY_TOOLS]),
        (Step(id="s1", instructions="Do it."), ["echo", "broken", *MEMORY_TOOLS]),
        (  # a discover step must hand back a list, so it has a schema without one written
            Step(id="s1", instructions="Do it.", mode="discover"),
            ["echo", "broken", *MEMORY_TOOLS, "finish_step"],
        ),
    ],
    ids=["schema", "no-schema", "no-schema-no-restriction", "discover"],
)
async def test_finish_step_is_attached_only_to_a_step_with_a_schema(step: Step, offered: list[str]):
    """Spec 000: the memory tools are auto-pushed into every step's tool list, "alongside
    any caller-supplied tools and (when the step has a schema) finish_step"."""
    provider = ScriptedProvider([Completion(content="ok")])
    ex = executor(
        provider, ProcessingContext(), step=step, tools=[EchoTool(), BrokenTool()], max_iterations=1
    )
    await drain(ex)
    assert provider.calls[0].tool_names == offered
    system = provider.calls[0].messages[0].content
    assert ("finish_step" in system) == ("finish_step" in offered)


async def test_an_unstructured_step_cannot_call_finish_step_and_ends_with_its_answer():
    provider = ScriptedProvider(
        [Completion(tool_calls=(call("finish_step", {"result": "done"}),)), "All done."]
    )
    context = ProcessingContext()
    step = Step(id="u", instructions="Say it.")
    messages = await drain(executor(provider, context, step=step))
    refused = next(m for m in messages if isinstance(m, ToolResult))
    assert refused.name == "finish_step" and "unknown tool `finish_step`" in (refused.error or "")
    assert messages[-1].result == "All done." and context.memory.get_value("step:u") == "All done."


async def test_an_unstructured_step_is_nudged_to_answer_in_plain_text():
    provider = ScriptedProvider(["", "The answer."])
    step = Step(id="u", instructions="Say it.")
    ex = executor(provider, ProcessingContext(), step=step)
    await drain(ex)
    nudge = provider.calls[1].messages[-1]
    assert nudge.role == "user" and "plain text" in nudge.content
    assert "finish_step" not in nudge.content and ex.result == "The answer."


async def test_the_conclusion_stage_of_an_unstructured_step_offers_no_tool():
    big = "x" * 4000
    provider = ScriptedProvider(
        [Completion(content=big, tool_calls=(call("echo", {"text": big}),)), "Best effort."]
    )
    step = Step(id="u", instructions="Say it.")
    ex = executor(
        provider, ProcessingContext(), step=step, tools=[EchoTool()], max_token_limit=2000
    )
    await drain(ex)
    assert provider.calls[1].tool_names == []
    assert provider.calls[1].messages[-1].content == CONCLUSION_NOTE_UNSTRUCTURED
    assert ex.result == "Best effort." and step.completed


async def test_upstream_hint_names_keys_without_values():
    context = ProcessingContext()
    context.memory.set(
        key="task:research_phase",
        kind="task_result",
        value={"secret": "alpha"},
        title="Research findings",
    )
    context.memory.set(key="step:prep", kind="step_result", value="beta")
    step = Step(
        id="s2",
        instructions="Write a report from the upstream findings.",
        depends_on=("prep", "missing"),
        output_schema=SCHEMA,
    )
    provider = ScriptedProvider(
        [Completion(tool_calls=(call("finish_step", {"result": {"findings": []}}),))]
    )
    task = Task(
        id="t1",
        title="Research",
        steps=(
            Step(id="prep", instructions="Prepare."),
            Step(id="missing", instructions="Never ran."),
            step,
        ),
    )
    await drain(
        executor(
            provider, context, step=step, task=task, upstream_memory_keys=["task:research_phase"]
        )
    )
    user = provider.calls[0].messages[1].content
    assert user == (
        "Write a report from the upstream findings.\n\n"
        "# Required upstream memory (call `memory_read` with these keys):\n"
        "- step:prep\n"
        "- task:research_phase — Research findings"
    )
    assert "alpha" not in user and "beta" not in user


async def test_memory_read_round_trip_inside_the_loop():
    context = ProcessingContext()
    context.memory.set(
        key="task:research", kind="task_result", value={"findings": ["alpha", "beta"]}
    )
    provider = ScriptedProvider(
        [
            Completion(tool_calls=(call("memory_read", {"keys": ["task:research"]}),)),
            Completion(
                tool_calls=(call("finish_step", {"result": {"findings": ["alpha", "beta"]}}),)
            ),
        ]
    )
    messages = await drain(executor(provider, context))
    result = next(m for m in messages if isinstance(m, ToolResult) and m.name == "memory_read")
    assert result.result["entries"]["task:research"]["value"] == {"findings": ["alpha", "beta"]}  # type: ignore[index, call-overload]
    tool_message = provider.calls[1].messages[-1]
    assert tool_message.role == "tool" and '"alpha"' in tool_message.content


async def test_tool_errors_go_back_to_the_model():
    provider = ScriptedProvider(
        [
            Completion(
                tool_calls=(
                    call("echo", {"txt": "oops"}, call_id="c1"),
                    call("broken", {}, call_id="c2"),
                    call("nope", {}, call_id="c3"),
                )
            ),
            Completion(tool_calls=(call("finish_step", {"result": {"findings": []}}),)),
        ]
    )
    messages = await drain(
        executor(provider, ProcessingContext(), tools=[EchoTool(), BrokenTool()])
    )
    errors = {m.call_id: m.error or "" for m in messages if isinstance(m, ToolResult)}
    assert "missing required field `text`" in errors["c1"]
    assert "disk on fire" in errors["c2"]
    assert "unknown tool `nope`" in errors["c3"]
    tool_messages = [m for m in provider.calls[1].messages if m.role == "tool"]
    assert [m.tool_call_id for m in tool_messages] == ["c1", "c2", "c3"]
    assert isinstance(messages[-1], StepResult) and messages[-1].error is None


async def test_invalid_result_is_sent_back_and_can_be_fixed():
    provider = ScriptedProvider(
        [
            Completion(tool_calls=(call("finish_step", {"result": {"findings": "not a list"}}),)),
            Completion(tool_calls=(call("finish_step", {"result": {"findings": ["fixed"]}}),)),
        ]
    )
    context = ProcessingContext()
    messages = await drain(executor(provider, context))
    first = next(m for m in messages if isinstance(m, ToolResult))
    assert first.error is not None and "result.findings" in first.error
    assert context.memory.get_value("step:s1") == {"findings": ["fixed"]}


async def test_iterations_running_out_writes_an_error():
    provider = ScriptedProvider(
        responder=lambda messages: Completion(tool_calls=(call("echo", {"text": "again"}),))
    )
    context = ProcessingContext()
    messages = await drain(executor(provider, context, tools=[EchoTool()], max_iterations=3))
    assert len(provider.calls) == 3
    final = messages[-1]
    assert isinstance(final, StepResult) and final.error is not None
    assert context.memory.get_value("step:s1") == {
        "error": "step 's1' did not finish within 3 iterations"
    }
    assert not context.memory.has("task:t1")


async def test_plain_text_finishes_an_unstructured_step_but_not_a_structured_one():
    unstructured = Step(id="u", instructions="Say hi.")
    provider = ScriptedProvider(["Hello there."])
    context = ProcessingContext()
    messages = await drain(executor(provider, context, step=unstructured))
    assert (
        messages[-1].result == "Hello there."
        and context.memory.get_value("step:u") == "Hello there."
    )
    structured = ScriptedProvider(
        [
            "Here are findings: alpha",
            Completion(tool_calls=(call("finish_step", {"result": {"findings": ["alpha"]}}),)),
        ]
    )
    await drain(executor(structured, ProcessingContext()))
    nudge = structured.calls[1].messages[-1]
    assert nudge.role == "user" and "finish_step" in nudge.content


async def test_tool_calls_of_one_turn_run_concurrently():
    started: list[str] = []
    both = asyncio.Event()

    class Waiter(Tool):
        description = "Waits for its sibling."
        input_schema = {"type": "object"}

        def __init__(self, name: str) -> None:
            self.name = name

        async def process(self, context: ProcessingContext, params: Mapping[str, JSON]) -> JSON:
            started.append(self.name)
            if len(started) == 2:
                both.set()
            await asyncio.wait_for(both.wait(), timeout=5)
            return self.name

    provider = ScriptedProvider(
        [
            Completion(tool_calls=(call("a", {}), call("b", {}))),
            Completion(tool_calls=(call("finish_step", {"result": {"findings": []}}),)),
        ]
    )
    messages = await drain(
        executor(provider, ProcessingContext(), tools=[Waiter("a"), Waiter("b")])
    )
    results = [m for m in messages if isinstance(m, ToolResult)]
    assert [(r.name, r.result, r.error) for r in results[:2]] == [
        ("a", "a", None),
        ("b", "b", None),
    ]
    updates = [m.name for m in messages if isinstance(m, ToolCallUpdate)]
    assert updates == ["a", "b", "finish_step"]


async def test_conclusion_stage_leaves_only_finish_step():
    big = "x" * 4000
    provider = ScriptedProvider(
        [
            Completion(content=big, tool_calls=(call("echo", {"text": big}),)),
            Completion(tool_calls=(call("finish_step", {"result": {"findings": []}}),)),
        ]
    )
    await drain(executor(provider, ProcessingContext(), tools=[EchoTool()], max_token_limit=2000))
    assert (
        provider.calls[0].tool_names[-1] == "finish_step" and len(provider.calls[0].tool_names) > 1
    )
    assert provider.calls[1].tool_names == ["finish_step"]  # memory_read is filtered out too
    assert provider.calls[1].messages[-1].content == CONCLUSION_NOTE


async def test_the_conclusion_stage_is_never_left_once_entered():
    """Summarizing after the stage began brings the history under 90% again; the model
    is still offered only finish_step."""
    big = "x" * 4000
    provider = ScriptedProvider(
        [
            Completion(content=big, tool_calls=(call("echo", {"text": big}),)),
            Completion(content="Let me think about it first."),  # no call: nudged
            Completion(content="Still thinking."),  # the big turn is summarized now
            Completion(tool_calls=(call("finish_step", {"result": {"findings": []}}),)),
        ]
    )
    ex = executor(provider, ProcessingContext(), tools=[EchoTool()], max_token_limit=2000)
    await drain(ex)
    later = provider.calls[3].messages
    assert any(m.content.startswith("Summary of earlier work") for m in later)
    assert [c.tool_names for c in provider.calls[1:]] == [["finish_step"]] * 3
    assert [m.content for m in later].count(CONCLUSION_NOTE) == 1
    assert ex.result == {"findings": []}


async def test_older_messages_are_summarized():
    chunk = "y" * 1500
    replies = [Completion(tool_calls=(call("echo", {"text": f"{i} {chunk}"}),)) for i in range(6)]
    replies.append(Completion(tool_calls=(call("finish_step", {"result": {"findings": []}}),)))
    provider = ScriptedProvider(replies)
    await drain(
        executor(
            provider,
            ProcessingContext(),
            tools=[EchoTool()],
            max_token_limit=4000,
            max_iterations=10,
        )
    )
    later = provider.calls[-1].messages
    assert any(m.content.startswith("Summary of earlier work in this step:") for m in later)
    assert later[0].role == "system" and later[1].content == "Research the topic."


async def test_invalid_json_arguments_are_reported():
    bad = ToolCall(id="c9", name="echo", arguments={"__invalid_json__": "{text: "})
    provider = ScriptedProvider(
        [
            Completion(tool_calls=(bad,)),
            Completion(tool_calls=(call("finish_step", {"result": {"findings": []}}),)),
        ]
    )
    messages = await drain(executor(provider, ProcessingContext(), tools=[EchoTool()]))
    (result,) = [m for m in messages if isinstance(m, ToolResult) and m.call_id == "c9"]
    assert result.error is not None and "not valid JSON" in result.error


async def test_our_own_errors_propagate():
    provider = ScriptedProvider([])  # no script: a bug in the caller's setup
    with pytest.raises(ConfigError, match="only 0 replies"):
        await drain(executor(provider, ProcessingContext()))


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [({"max_iterations": 0}, "max_iterations"), ({"max_token_limit": 10}, "max_token_limit")],
)
def test_bad_limits(kwargs, field):
    with pytest.raises(Exception) as excinfo:
        executor(ScriptedProvider([]), ProcessingContext(), **kwargs)
    assert getattr(excinfo.value, "field", None) == field


def test_tool_input_error_is_what_the_model_sees():
    assert issubclass(ToolInputError, Exception)


@pytest.mark.parametrize(
    ("reply", "completed"),
    [
        (Completion(tool_calls=(call("finish_step", {"result": {"findings": []}}),)), True),
        (Completion(content="I am still working on it."), False),  # iterations run out
    ],
    ids=["finished", "gave-up"],
)
@pytest.mark.parametrize("completed_before", [False, True])
async def test_the_executor_keeps_step_completed(
    reply: Completion, completed: bool, completed_before: bool
):
    """Spec 003: ``Step.completed``, false while the step runs (whatever it said before)
    and true only once the step has finished with a result."""
    step = Step(id="s1", instructions="Research.", output_schema=SCHEMA, completed=completed_before)
    while_running: list[bool] = []

    def respond(messages: Any) -> Completion:
        while_running.append(step.completed)
        return reply

    ex = executor(ScriptedProvider(responder=respond), ProcessingContext(), step=step)
    messages = await drain(ex)
    assert while_running and not any(while_running)
    assert step.completed is completed
    assert (messages[-1].error is None) is completed
