"""The scheduling rule both DAG executors use."""

from memstack.agents.dag import next_moves

DEPS = {"a": (), "b": ("a",), "c": ("b",), "d": (), "e": ("a", "d")}
ORDER = ["a", "d", "b", "e", "c"]


def test_nothing_done_starts_the_roots():
    assert next_moves(ORDER, DEPS, started=set(), completed=set(), failed=set()) == (["a", "d"], [])


def test_started_nodes_are_not_started_again_and_ready_ones_are():
    moves = next_moves(ORDER, DEPS, started={"a", "d"}, completed={"a"}, failed=set())
    assert moves == (["b"], [])  # e still waits on d


def test_a_failure_skips_its_dependents_in_one_pass_and_spares_the_rest():
    start, skip = next_moves(ORDER, DEPS, started={"a", "d"}, completed={"d"}, failed={"a"})
    assert start == []
    assert skip == [("b", "a"), ("e", "a"), ("c", "b")]
