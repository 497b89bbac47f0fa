"""AgentStepExecutor: an agent step as a workflow node, its edge inputs and result in
working memory, so a later node of the same graph finds them through memory_list."""

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from memstack import InvalidInput, ProcessingContext
from memstack._json import JSON
from memstack.agents import AgentStepExecutor, WorkflowNode
from memstack.agents.messages import StepResult
from memstack.providers import Message, ScriptedProvider
from tests.agents.scripts import by_instructions, call, tool_results, turns


async def run_graph(
    nodes: list[WorkflowNode],
    edges: Mapping[str, Mapping[str, str]],
    inputs: Mapping[str, Mapping[str, JSON]],
    provider: ScriptedProvider,
    context: ProcessingContext,
) -> dict[str, JSON]:
    """The smallest workflow runner: nodes in order, each edge ``(target key -> source
    node)`` feeding the source node's result in as the target's input."""
    results: dict[str, JSON] = {}
    for node in nodes:
        node_inputs = dict(inputs.get(node.id, {}))
        for key, source in edges.get(node.id, {}).items():
            node_inputs[key] = results[source]
        executor = AgentStepExecutor(node=node, context=context, provider=provider, model="m")
        messages = [m async for m in executor.process(node_inputs)]
        assert isinstance(messages[-1], StepResult)
        results[node.id] = executor.result
    return results


async def test_two_chained_nodes_share_memory():
    listed: list[Any] = []

    def summarize(messages: list[Any]) -> Any:
        if not tool_results(messages, "memory_list"):
            return call("memory_list", {})
        listed.extend(tool_results(messages, "memory_list"))
        read = tool_results(messages, "memory_read")
        if not read:
            return call("memory_read", {"keys": ["step:research"]})
        return f"summary of {read[0]['entries']['step:research']['value']}"

    provider = by_instructions(
        {"Research": turns("three facts about otters"), "Summarize": summarize}
    )
    context = ProcessingContext()
    nodes = [
        WorkflowNode(id="research", instructions="Research the topic."),
        WorkflowNode(id="summarize", instructions="Summarize the research."),
    ]
    results = await run_graph(
        nodes,
        edges={"summarize": {"notes": "research"}},
        inputs={"research": {"topic": "otters", "unused": None}},
        provider=provider,
        context=context,
    )
    assert results["summarize"] == "summary of three facts about otters"
    memory = context.memory
    topic = memory.get("input:research.topic")
    assert topic is not None
    assert (topic.kind, topic.value, topic.source, topic.title) == (
        "input",
        "otters",
        "research",
        "research.topic",
    )
    assert not memory.has("input:research.unused")  # null edge inputs are skipped
    notes = memory.get("input:summarize.notes")
    assert notes is not None and notes.value == "three facts about otters"
    step = memory.get("step:research")
    assert step is not None and step.kind == "step_result"
    keys = {entry["key"] for entry in listed[0]["entries"]}
    assert {"input:research.topic", "step:research", "input:summarize.notes"} <= keys


async def test_the_node_prompt_names_its_inputs_without_their_values():
    seen: list[str] = []

    def answer(messages: Sequence[Message]) -> Any:
        seen.append(next(m.content for m in messages if m.role == "user"))
        return "done"

    executor = AgentStepExecutor(
        node=WorkflowNode(id="n1", instructions="Write it up."),
        context=ProcessingContext(),
        provider=ScriptedProvider(responder=answer),
        model="m",
    )
    [m async for m in executor.process({"draft": "SECRET-DRAFT-TEXT"})]
    assert "input:n1.draft" in seen[0] and "SECRET-DRAFT-TEXT" not in seen[0]


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [({"id": "", "instructions": "x"}, "id"), ({"id": "n", "instructions": " "}, "instructions")],
)
def test_a_node_needs_an_id_and_instructions(kwargs: dict[str, Any], field: str):
    with pytest.raises(InvalidInput) as excinfo:
        WorkflowNode(**kwargs)
    assert excinfo.value.field == field
