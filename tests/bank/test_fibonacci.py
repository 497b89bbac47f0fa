"""The spec's Fibonacci example (spec 002), with a ScriptedProvider playing the model,
and what attaching a bank to an agent does."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from memstack import ProcessingContext, Tool
from memstack._json import JSON
from memstack.agents.simple import SimpleAgent
from memstack.bank import BANK_PROMPT, BankReadTool, MemoryBank
from memstack.providers import Completion, Message, ScriptedProvider
from memstack.providers.demos import FIBONACCI_PROMPT, fibonacci

call = ScriptedProvider.tool_call


def fibonacci_model(messages: Sequence[Message]) -> Completion:
    """scripted:fibonacci, checking it was given the spec's prompt."""
    assert FIBONACCI_PROMPT in messages[0].content
    return fibonacci(messages)


def fibonacci_agent(bank: MemoryBank) -> tuple[SimpleAgent, ScriptedProvider]:
    provider = ScriptedProvider(responder=fibonacci_model)
    agent = SimpleAgent(
        name="fibonacci",
        objective="do it",
        provider=provider,
        model="scripted",
        system_prompt=FIBONACCI_PROMPT,
        max_iterations=5,
    ).memory(bank)
    assert agent.memory_bank is bank
    return agent, provider


async def fib(agent: SimpleAgent) -> int:
    """One call, as the spec's ``fib("do it")`` with its transformOutput."""
    async for _ in agent.execute(ProcessingContext()):
        pass
    result = agent.get_results()
    assert isinstance(result, str), result
    return int(result.strip())


async def test_the_sequence_and_the_bank_state_between_calls():
    bank = MemoryBank()
    agent, provider = fibonacci_agent(bank)
    seen = []
    for _ in range(5):
        seen.append((await fib(agent), bank.read("fibonacci")))
    assert seen == [(1, "0|1"), (1, "1|1"), (2, "1|2"), (3, "2|3"), (5, "3|5")]
    assert len(provider.calls) == 15  # read, write, answer: three turns a call
    assert bank.entries() == {"fibonacci": "3|5"}


async def test_pre_seeding_resumes_from_an_arbitrary_point():
    bank = MemoryBank()
    bank.write("fibonacci", "21|34")
    agent, _ = fibonacci_agent(bank)
    assert [await fib(agent) for _ in range(3)] == [55, 89, 144]
    assert bank.read("fibonacci") == "89|144"


async def test_the_sequence_survives_reopening_a_durable_bank(tmp_path: Path):
    path = tmp_path / "bank.db"
    with MemoryBank(path=path) as bank:
        agent, _ = fibonacci_agent(bank)
        assert [await fib(agent) for _ in range(3)] == [1, 1, 2]
    with MemoryBank(path=path) as bank:
        assert bank.read("fibonacci") == "1|2"
        agent, _ = fibonacci_agent(bank)
        assert [await fib(agent) for _ in range(2)] == [3, 5]
        assert bank.read("fibonacci") == "3|5"


async def test_both_memories_stay_usable_under_the_shared_tool_names():
    """The bank's memory_read() / memory_write(content) and working memory's
    memory_read(keys) / memory_write(key, value) are one tool each, told apart by their
    arguments; memory_list's advice to call memory_read with keys still works."""
    bank = MemoryBank(max_lines=10)
    bank.write("fibonacci", "0|1")
    replies = [
        Completion(tool_calls=(call("memory_list", {}),)),
        Completion(
            tool_calls=(
                call("memory_read", {"keys": ["input:topic"]}),
                call("memory_read", {}),
                call("memory_write", {"key": "note", "value": {"seen": True}}),
                call("memory_write", {"content": "x", "key": "both"}),
            )
        ),
        # the calls of one turn run concurrently: the bank's write and search get turns
        Completion(tool_calls=(call("memory_write", {"content": "1|1"}),)),
        Completion(tool_calls=(call("memory_search", {"query": "1|"}),)),
        Completion(content="done"),
    ]
    provider = ScriptedProvider(replies)
    agent = SimpleAgent(
        name="fibonacci", objective="do it", provider=provider, model="scripted"
    ).memory(bank)
    context = ProcessingContext()
    context.memory.set(key="input:topic", kind="input", value="rabbits")
    async for _ in agent.execute(context):
        pass
    listed, read_keys, read_bank, wrote_key, both, wrote_bank, searched = [
        m.content for m in provider.calls[4].messages if m.role == "tool"
    ]
    assert '"input:topic"' in listed
    assert '"value": "rabbits"' in read_keys and '"missing": []' in read_keys
    assert read_bank == "0|1"
    assert '"key": "shared:note"' in wrote_key and context.memory.has("shared:note")
    assert wrote_bank == "ok" and bank.read("fibonacci") == "1|1"
    assert searched == "1|1"
    assert "either `content`" in both and bank.read("fibonacci") == "1|1"
    offered = {t.name: t for t in provider.calls[0].tools}
    assert [n for n in offered if n.startswith("memory_")] == [
        "memory_read",
        "memory_write",
        "memory_search",
        "memory_list",
    ]
    read_props = offered["memory_read"].input_schema["properties"]
    write_props = offered["memory_write"].input_schema["properties"]
    assert isinstance(read_props, dict) and isinstance(write_props, dict)
    assert set(read_props) == {"keys"}
    assert set(write_props) >= {"content", "key", "value"}
    # the prompt says which memory_read / memory_write is which
    system = provider.calls[0].messages[0].content
    assert BANK_PROMPT in system and system.index(BANK_PROMPT) < system.index("## Memory Tools")
    for phrase in ("`memory_read()`", "`memory_read(keys)`", "`memory_write(content)`"):
        assert phrase in BANK_PROMPT


class CustomRead(Tool):
    name = "memory_read"
    description = "A user's own memory_read."
    input_schema = {"type": "object", "properties": {}}

    async def process(self, context: ProcessingContext, params: Mapping[str, JSON]) -> JSON:
        return "custom implementation"


async def test_a_user_tool_defined_first_is_not_replaced():
    bank = MemoryBank()
    custom = CustomRead()
    provider = ScriptedProvider(
        [Completion(tool_calls=(call("memory_read", {}),)), Completion(content="done")]
    )
    agent = SimpleAgent(
        name="a", objective="read it", provider=provider, model="scripted", tools=[custom]
    ).memory(bank)
    by_name = {t.name: t for t in agent.tools}
    assert by_name["memory_read"] is custom
    assert [t.name for t in agent.tools] == ["memory_read", "memory_write", "memory_search"]
    assert not any(isinstance(t, BankReadTool) for t in agent.tools)
    async for _ in agent.execute(ProcessingContext()):
        pass
    [tool_message] = [m for m in provider.calls[1].messages if m.role == "tool"]
    assert tool_message.content == "custom implementation"


def writer_model(text: str) -> ScriptedProvider:
    def respond(messages: Sequence[Message]) -> Completion:
        if not any(m.role == "tool" for m in messages):
            return Completion(tool_calls=(call("memory_write", {"content": text}),))
        return Completion(content="written")

    return ScriptedProvider(responder=respond)


async def test_agents_sharing_a_bank_are_isolated_by_name():
    bank = MemoryBank()
    for name in ("agent-a", "agent-b"):
        agent = SimpleAgent(
            name=name,
            objective="remember",
            provider=writer_model(f"from-{name[-1]}"),
            model="scripted",
        ).memory(bank)
        async for _ in agent.execute(ProcessingContext()):
            pass
        assert agent.get_results() == "written"
    assert bank.entries() == {"agent-a": "from-a", "agent-b": "from-b"}
    assert bank.read("agent-a") == "from-a"
    reader = {t.name: t for t in bank.tools("agent-a")}["memory_read"]
    assert await reader.process(ProcessingContext(), {}) == "from-a"
