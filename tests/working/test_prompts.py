from memstack import AgentMemory
from memstack.working import (
    MEMORY_TOOLS_PROMPT,
    UPSTREAM_MEMORY_HEADER,
    upstream_memory_hint,
    with_upstream_hint,
)


def test_memory_tools_section_teaches_the_three_tools_in_order():
    lines = MEMORY_TOOLS_PROMPT.splitlines()
    assert lines[0] == "## Memory Tools (progressive disclosure)"
    assert "Memory contents are NOT auto-included in your prompt." in MEMORY_TOOLS_PROMPT
    steps = [line.strip().split("`")[1] for line in lines if line.strip()[:2] in ("1.", "2.", "3.")]
    assert steps == ["memory_list", "memory_read", "memory_write"]
    assert lines[-1] == "- Pull only what you need — don't fetch every entry by reflex."


def test_hint_names_declared_keys_with_titles_but_never_values():
    memory = AgentMemory()
    memory.set(
        key="task:research_phase",
        kind="task_result",
        value={"secret_sauce": "alpha"},
        title="Research findings",
    )
    memory.set(key="step:s1", kind="step_result", value="beta")
    hint = upstream_memory_hint(memory, ["task:research_phase", "step:s1", "step:missing"])
    assert hint == (
        "# Required upstream memory (call `memory_read` with these keys):\n"
        "- task:research_phase — Research findings\n"
        "- step:s1"
    )
    assert "alpha" not in hint and "beta" not in hint


def test_hint_lists_each_key_once_and_is_empty_without_keys():
    memory = AgentMemory()
    memory.set(key="step:a", kind="step_result", value=1)
    assert upstream_memory_hint(memory, ["step:a", "step:a"]).count("step:a") == 1
    assert upstream_memory_hint(memory, []) == ""
    assert upstream_memory_hint(memory, ["step:absent"]) == ""


def test_user_message_layout():
    memory = AgentMemory()
    memory.set(key="task:r", kind="task_result", value=1, title="R")
    message = with_upstream_hint("Write a report.", memory, ["task:r"])
    assert message == f"Write a report.\n\n{UPSTREAM_MEMORY_HEADER}\n- task:r — R"
    assert with_upstream_hint("Just do it.", memory, ["task:none"]) == "Just do it."
