from pathlib import Path

from memstack import AgentMemory, ManualClock, ProcessingContext


def test_every_context_gets_its_own_memory():
    a, b = ProcessingContext(), ProcessingContext()
    a.memory.set(key="shared:x", kind="shared", value=1)
    assert isinstance(b.memory, AgentMemory)
    assert not b.memory.has("shared:x")


def test_copy_keeps_the_surroundings_but_not_the_memory(tmp_path: Path):
    clock = ManualClock(start=10.0)
    parent = ProcessingContext(memory=AgentMemory(clock=clock), workspace=tmp_path, user_id="u1")
    parent.memory.set(key="task:t", kind="task_result", value="done")
    child = parent.copy()
    assert child.memory is not parent.memory
    assert len(child.memory) == 0
    assert (child.workspace, child.user_id, child.clock) == (tmp_path, "u1", clock)
    child.memory.set(key="shared:c", kind="shared", value=1)
    assert not parent.memory.has("shared:c")
    assert child.memory.get("shared:c").created_at == 10_000  # type: ignore[union-attr]
