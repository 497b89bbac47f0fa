import asyncio
import math
import threading
from decimal import Decimal

import pytest

from memstack import AgentMemory, InvalidInput, ManualClock, MemoryEntry, memory_keys


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(start=1_700_000_000.0)


@pytest.fixture
def memory(clock: ManualClock) -> AgentMemory:
    return AgentMemory(clock=clock)


@pytest.mark.parametrize(
    ("helper", "arg", "expected"),
    [
        (memory_keys.step, "s1", "step:s1"),
        (memory_keys.task, "research", "task:research"),
        (memory_keys.input, "url", "input:url"),
        (memory_keys.shared, "top", "shared:top"),
    ],
)
def test_key_helpers(helper, arg, expected):
    assert helper(arg) == expected


def test_set_returns_the_stored_entry(memory: AgentMemory):
    entry = memory.set(
        key=memory_keys.task("research"),
        kind="task_result",
        value={"findings": ["alpha", "beta"]},
        source="research",
        title="Research findings",
        description="Top three sources.",
    )
    assert entry == MemoryEntry(
        key="task:research",
        kind="task_result",
        value={"findings": ["alpha", "beta"]},
        source="research",
        title="Research findings",
        description="Top three sources.",
        created_at=1_700_000_000_000,
    )
    assert memory.get("task:research") == entry
    assert memory.get_value("task:research") == {"findings": ["alpha", "beta"]}
    assert memory.has("task:research")
    assert "task:research" in memory


def test_absent_keys(memory: AgentMemory):
    assert memory.get("task:nope") is None
    assert memory.get_value("task:nope") is None
    assert not memory.has("task:nope")


def test_overwrite_keeps_created_at_and_position(memory: AgentMemory, clock: ManualClock):
    memory.set(key="task:a", kind="task_result", value=1, title="first")
    memory.set(key="task:b", kind="task_result", value=2)
    clock.advance(5)
    again = memory.set(key="task:a", kind="task_result", value=3)
    assert again.created_at == 1_700_000_000_000
    assert again.value == 3
    assert again.title is None  # an overwrite replaces everything but created_at
    assert [e.key for e in memory.snapshot()] == ["task:a", "task:b"]
    clock.advance(1)
    assert memory.set(key="task:c", kind="task_result", value=4).created_at == 1_700_000_006_000


def test_value_is_copied_at_write(memory: AgentMemory):
    value = {"items": [1, 2]}
    memory.set(key="shared:x", kind="shared", value=value)
    value["items"].append(3)
    assert memory.get_value("shared:x") == {"items": [1, 2]}


def test_tuples_become_lists(memory: AgentMemory):
    memory.set(key="shared:t", kind="shared", value=(1, ("a", None)))
    assert memory.get_value("shared:t") == [1, ["a", None]]


@pytest.mark.parametrize(
    ("value", "field"),
    [
        ({1, 2}, "value"),
        ({"a": object()}, "value['a']"),
        ({"nested": [1, {"deep": b"bytes"}]}, "value['nested'][1]['deep']"),
        ({1: "int key"}, "value"),
        (math.nan, "value"),
        ([math.inf], "value[0]"),
        (Decimal("1.5"), "value"),
    ],
)
def test_non_json_values_are_refused_and_nothing_is_stored(memory, value, field):
    memory.set(key="shared:keep", kind="shared", value="kept")
    with pytest.raises(InvalidInput) as excinfo:
        memory.set(key="shared:keep", kind="shared", value=value)
    assert excinfo.value.field == field
    assert field in str(excinfo.value)
    assert memory.get_value("shared:keep") == "kept"
    assert len(memory) == 1


def test_deeply_nested_values_are_refused(memory: AgentMemory):
    value: list[object] = []
    for _ in range(300):
        value = [value]
    with pytest.raises(InvalidInput, match="nested more than"):
        memory.set(key="shared:deep", kind="shared", value=value)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"key": "", "kind": "shared"}, "key"),
        ({"key": 5, "kind": "shared"}, "key"),
        ({"key": "shared:x", "kind": "bogus"}, "kind"),
        ({"key": "shared:x", "kind": "shared", "title": 3}, "title"),
        ({"key": "shared:x", "kind": "shared", "source": ["a"]}, "source"),
        ({"key": "shared:x", "kind": "shared", "description": 1.5}, "description"),
    ],
)
def test_bad_arguments_name_the_field(memory, kwargs, field):
    with pytest.raises(InvalidInput) as excinfo:
        memory.set(value=1, **kwargs)
    assert excinfo.value.field == field
    assert len(memory) == 0


@pytest.fixture
def populated(memory: AgentMemory) -> AgentMemory:
    memory.set(key="input:url", kind="input", value="https://a", source="caller")
    memory.set(key="step:s1", kind="step_result", value=1, source="research")
    memory.set(key="task:research", kind="task_result", value=2, source="research")
    memory.set(key="step:s2", kind="step_result", value=3, source="summary")
    memory.set(key="shared:top", kind="shared", value=4)
    return memory


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        ({}, ["input:url", "step:s1", "task:research", "step:s2", "shared:top"]),
        ({"kind": "step_result"}, ["step:s1", "step:s2"]),
        ({"kind": ["task_result", "input"]}, ["input:url", "task:research"]),
        ({"keys": ["shared:top", "step:s1", "nope"]}, ["step:s1", "shared:top"]),
        ({"key_prefix": "step:"}, ["step:s1", "step:s2"]),
        ({"sources": ["research"]}, ["step:s1", "task:research"]),
        ({"kind": "step_result", "sources": ["summary"]}, ["step:s2"]),
        ({"key_prefix": "task:", "kind": "step_result"}, []),
        ({"kind": []}, []),
    ],
)
def test_list_filters_combine_in_insertion_order(populated, filters, expected):
    assert [e.key for e in populated.list(**filters)] == expected


@pytest.mark.parametrize(
    ("filters", "field"),
    [
        ({"kind": "nonsense"}, "kind"),
        ({"kind": ["shared", "nonsense"]}, "kind"),
        ({"keys": "step:s1"}, "keys"),
        ({"sources": "research"}, "sources"),
    ],
)
def test_list_rejects_bad_filters(populated, filters, field):
    with pytest.raises(InvalidInput) as excinfo:
        populated.list(**filters)
    assert excinfo.value.field == field


@pytest.mark.parametrize(
    ("filters", "remaining"),
    [
        ({}, []),
        ({"kind": "step_result"}, ["input:url", "task:research", "shared:top"]),
        ({"key_prefix": "input:"}, ["step:s1", "task:research", "step:s2", "shared:top"]),
        (
            {"kind": "step_result", "key_prefix": "step:s2"},
            ["input:url", "step:s1", "task:research", "shared:top"],
        ),
    ],
)
def test_clear(populated, filters, remaining):
    removed = populated.clear(**filters)
    assert [e.key for e in populated.snapshot()] == remaining
    assert removed == 5 - len(remaining)


def test_subscribers_see_every_write_and_can_unsubscribe(memory: AgentMemory):
    seen: list[str] = []
    unsubscribe = memory.subscribe(lambda entry: seen.append(entry.key))
    memory.set(key="step:a", kind="step_result", value=1)
    memory.set(key="step:a", kind="step_result", value=2)
    unsubscribe()
    unsubscribe()  # harmless twice
    memory.set(key="step:b", kind="step_result", value=3)
    assert seen == ["step:a", "step:a"]


def test_a_failing_subscriber_stops_neither_the_write_nor_the_others(memory, caplog):
    seen: list[object] = []

    def broken(entry: MemoryEntry) -> None:
        raise RuntimeError("subscriber bug")

    memory.subscribe(broken)
    memory.subscribe(lambda entry: seen.append(entry.value))
    entry = memory.set(key="shared:x", kind="shared", value="v")
    assert entry.value == "v"
    assert memory.get_value("shared:x") == "v"
    assert seen == ["v"]
    assert "subscriber bug" in caplog.text


def test_subscriber_may_write_to_memory(memory: AgentMemory):
    def mirror(entry: MemoryEntry) -> None:
        if entry.key.startswith("task:"):
            memory.set(key=f"shared:{entry.key}", kind="shared", value=entry.value)

    memory.subscribe(mirror)
    memory.set(key="task:t", kind="task_result", value=7)
    assert memory.get_value("shared:task:t") == 7


def test_subscribe_requires_a_callable(memory: AgentMemory):
    with pytest.raises(InvalidInput):
        memory.subscribe("not callable")  # type: ignore[arg-type]


def test_concurrent_writes_from_threads_lose_nothing(memory: AgentMemory):
    writes: list[str] = []
    lock = threading.Lock()

    def record(entry: MemoryEntry) -> None:
        with lock:
            writes.append(entry.key)

    memory.subscribe(record)
    barrier = threading.Barrier(8)

    def worker(n: int) -> None:
        barrier.wait()
        for i in range(250):
            memory.set(key=f"step:{n}-{i}", kind="step_result", value=i)
            memory.set(key="shared:counter", kind="shared", value=[n, i])
            memory.list(kind="step_result")

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(memory.list(kind="step_result")) == 8 * 250
    assert len(writes) == 8 * 250 * 2
    assert memory.has("shared:counter")


async def test_concurrent_writes_from_asyncio_tasks_lose_nothing(memory: AgentMemory):
    async def worker(n: int) -> None:
        for i in range(100):
            memory.set(key=f"step:{n}-{i}", kind="step_result", value=i)
            await asyncio.sleep(0)

    async def threaded(n: int) -> None:
        await asyncio.to_thread(
            lambda: [
                memory.set(key=f"task:{n}-{i}", kind="task_result", value=i) for i in range(100)
            ]
        )

    await asyncio.gather(*(worker(n) for n in range(10)), *(threaded(n) for n in range(4)))
    assert len(memory.list(kind="step_result")) == 1000
    assert len(memory.list(kind="task_result")) == 400
