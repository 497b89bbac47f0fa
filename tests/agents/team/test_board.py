"""TaskBoard: transitions, errors that name the fix, events, and thread safety."""

import threading
from collections.abc import Callable
from typing import Any

import pytest

from memstack.agents.team import BoardEvent, TaskBoard
from memstack.errors import InvalidInput, NotFound


def board_with(*specs: tuple[str, tuple[str, ...]]) -> TaskBoard:
    board = TaskBoard()
    for task_id, deps in specs:
        board.add(id=task_id, title=f"Do {task_id}", depends_on=deps)
    return board


def research_and_report() -> TaskBoard:
    return board_with(("research", ()), ("report", ("research",)))


Move = Callable[[TaskBoard], object]


def claimed_by_ada(board: TaskBoard) -> None:
    board.claim("research", "ada")


def completed_by_ada(board: TaskBoard) -> None:
    board.claim("research", "ada")
    board.complete("research", "ada", {"findings": ["alpha"]})


def failed_by_ada(board: TaskBoard) -> None:
    board.claim("research", "ada")
    board.fail("research", "ada", "no sources")


def untouched(board: TaskBoard) -> None:
    pass


ALLOWED: list[tuple[str, Callable[[TaskBoard], None], Move, str]] = [
    ("claim an open task", untouched, lambda b: b.claim("research", "ada"), "claimed"),
    (
        "assignee completes",
        claimed_by_ada,
        lambda b: b.complete("research", "ada", {"x": 1}),
        "completed",
    ),
    ("assignee fails", claimed_by_ada, lambda b: b.fail("research", "ada", "why"), "failed"),
]


@pytest.mark.parametrize(("case", "setup", "move", "status"), ALLOWED, ids=[c[0] for c in ALLOWED])
def test_allowed_transitions(case: str, setup: Any, move: Move, status: str):
    board = research_and_report()
    setup(board)
    move(board)
    task = board.get("research")
    assert task is not None and task.status == status


REFUSED: list[tuple[str, Callable[[TaskBoard], None], Move, str]] = [
    ("claim twice", claimed_by_ada, lambda b: b.claim("research", "bob"), "already claimed"),
    ("claim a completed task", completed_by_ada, lambda b: b.claim("research", "bob"), "already"),
    ("claim before deps", untouched, lambda b: b.claim("report", "bob"), "waits on 'research'"),
    ("claim unknown", untouched, lambda b: b.claim("nope", "bob"), "no task 'nope'"),
    ("complete unclaimed", untouched, lambda b: b.complete("research", "ada", 1), "claim it"),
    (
        "complete someone else's",
        claimed_by_ada,
        lambda b: b.complete("research", "bob", 1),
        "claimed by 'ada', not 'bob'",
    ),
    ("fail someone else's", claimed_by_ada, lambda b: b.fail("research", "bob", "x"), "'ada'"),
    ("fail unclaimed", untouched, lambda b: b.fail("research", "ada", "x"), "claim it"),
    ("complete twice", completed_by_ada, lambda b: b.complete("research", "ada", 2), "already"),
    ("fail a failed task", failed_by_ada, lambda b: b.fail("research", "ada", "x"), "already"),
    (
        "result that is not JSON",
        claimed_by_ada,
        lambda b: b.complete("research", "ada", {1, 2}),
        "not JSON",
    ),
    ("empty error", claimed_by_ada, lambda b: b.fail("research", "ada", " "), "error"),
]


@pytest.mark.parametrize(("case", "setup", "move", "message"), REFUSED, ids=[c[0] for c in REFUSED])
def test_refused_transitions_change_nothing(case: str, setup: Any, move: Move, message: str):
    board = research_and_report()
    setup(board)
    before = board.list()
    with pytest.raises(InvalidInput, match=message):
        move(board)
    assert board.list() == before


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"id": "research", "title": "Again"}, "already on the board"),
        ({"id": "x", "title": "X", "depends_on": ["ghost", "research"]}, "unknown task 'ghost'"),
        ({"id": "x", "title": "X", "depends_on": ["x"]}, "unknown task 'x'"),
        ({"id": "", "title": "X"}, "id must be a non-empty string"),
        ({"id": "x", "title": ""}, "title"),
        ({"id": "x", "title": "X", "depends_on": "research"}, "list of task ids"),
    ],
)
def test_add_refuses_bad_tasks(kwargs: dict[str, Any], message: str):
    board = board_with(("research", ()))
    with pytest.raises(InvalidInput, match=message):
        board.add(**kwargs)
    assert [t.id for t in board.list()] == ["research"]


def test_unknown_task_is_not_found():
    with pytest.raises(NotFound, match="the tasks are: 'research'"):
        board_with(("research", ())).claim("ghost", "ada")


def test_cannot_depend_on_a_failed_task():
    board = research_and_report()
    failed_by_ada(board)
    with pytest.raises(InvalidInput, match="failed task 'research'"):
        board.add(id="again", title="Again", depends_on=["research"])


def test_claimable_follows_dependencies():
    board = research_and_report()
    assert [t.id for t in board.claimable()] == ["research"]
    completed_by_ada(board)
    assert [t.id for t in board.claimable()] == ["report"]
    task = board.get("research")
    assert task is not None and task.result == {"findings": ["alpha"]} and task.assignee == "ada"


def test_a_failure_fails_every_dependent_transitively_but_not_independent_tasks():
    board = board_with(("a", ()), ("b", ("a",)), ("c", ("b",)), ("d", ()))
    events: list[BoardEvent] = []
    board.on_event(events.append)
    board.claim("a", "ada")
    board.fail("a", "ada", "broken")
    assert {t.id: t.status for t in board.list()} == {
        "a": "failed",
        "b": "failed",
        "c": "failed",
        "d": "open",
    }
    c = board.get("c")
    assert c is not None and c.error is not None and "'b'" in c.error
    assert [(e.type, e.task_id) for e in events][-3:] == [
        ("task_failed", "a"),
        ("task_failed", "b"),
        ("task_failed", "c"),
    ]
    assert not board.is_done()


def test_is_done_and_list_by_status():
    board = research_and_report()
    assert TaskBoard().is_done()
    assert not board.is_done()
    completed_by_ada(board)
    assert [t.id for t in board.list("completed")] == ["research"]
    assert [t.id for t in board.list("open")] == ["report"]
    board.claim("report", "bob")
    board.complete("report", "bob", "text")
    assert board.is_done()
    with pytest.raises(InvalidInput, match="status must be one of"):
        board.list("done")  # type: ignore[arg-type]


def test_fail_unfinished_fails_open_and_claimed_tasks_with_the_reason():
    board = board_with(("a", ()), ("b", ()), ("c", ()))
    board.claim("a", "ada")
    board.complete("a", "ada", 1)
    board.claim("b", "bob")
    failed = board.fail_unfinished("out of rounds", agent="team")
    assert [t.id for t in failed] == ["b", "c"]
    b, c = board.get("b"), board.get("c")
    assert b is not None and b.error == "out of rounds (it was claimed by 'bob')"
    assert c is not None and c.error == "out of rounds (it was open)"
    assert board.is_done()


def test_events_are_emitted_for_every_change():
    board = TaskBoard()
    events: list[BoardEvent] = []
    board.on_event(events.append)
    board.add(id="research", title="Research", added_by="lead")
    board.claim("research", "ada")
    board.complete("research", "ada", "done")
    assert events == [
        BoardEvent(type="task_added", task_id="research", agent="lead"),
        BoardEvent(type="task_claimed", task_id="research", agent="ada"),
        BoardEvent(type="task_completed", task_id="research", agent="ada"),
    ]


def test_a_raising_callback_stops_neither_the_change_nor_the_others(
    caplog: pytest.LogCaptureFixture,
):
    board = research_and_report()
    seen: list[str] = []

    def broken(event: BoardEvent) -> None:
        raise RuntimeError("listener on fire")

    board.on_event(broken)
    board.on_event(lambda e: seen.append(e.type))
    board.claim("research", "ada")
    task = board.get("research")
    assert task is not None and task.status == "claimed"
    assert seen == ["task_claimed"]
    assert "listener on fire" in caplog.text


def test_callbacks_see_the_change_already_made_and_can_unsubscribe():
    board = research_and_report()
    statuses: list[str] = []

    def on_event(event: BoardEvent) -> None:
        task = board.get(event.task_id)
        statuses.append(task.status if task else "?")

    unsubscribe = board.on_event(on_event)
    board.claim("research", "ada")
    unsubscribe()
    unsubscribe()  # twice is harmless
    board.complete("research", "ada", 1)
    assert statuses == ["claimed"]


def test_only_one_of_many_threads_claims_a_task():
    board = board_with(("research", ()))
    winners: list[str] = []
    start = threading.Barrier(8)

    def grab(agent: str) -> None:
        start.wait()
        try:
            board.claim("research", agent)
            winners.append(agent)
        except InvalidInput:
            pass

    threads = [threading.Thread(target=grab, args=(f"agent{i}",)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    task = board.get("research")
    assert len(winners) == 1 and task is not None and task.assignee == winners[0]
