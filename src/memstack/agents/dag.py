"""Dependency graphs of steps and tasks: checks that name the offending ids, and ordering."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence, Set

from memstack.errors import InvalidInput

__all__ = ["check_dag", "find_cycle", "next_moves", "topological_order"]


def check_dag(kind: str, ids: Sequence[str], deps: Mapping[str, Sequence[str]], field: str) -> None:
    """Raise ``InvalidInput`` for a duplicate id, a dependency on an unknown id or on
    itself, or a cycle; each message names the ids at fault."""
    seen = set(ids)
    duplicates = sorted(i for i, n in Counter(ids).items() if n > 1)
    if duplicates:
        raise InvalidInput(
            f"duplicate {kind} id {', '.join(map(repr, duplicates))}; "
            f"give every {kind} its own id.",
            field=field,
        )
    for node in ids:
        if node in deps.get(node, ()):
            raise InvalidInput(f"{kind} {node!r} depends on itself; remove it.", field=field)
        unknown = [d for d in deps.get(node, ()) if d not in seen]
        if unknown:
            raise InvalidInput(
                f"{kind} {node!r} depends on unknown {kind} {', '.join(map(repr, unknown))}; "
                f"the {kind}s are {', '.join(map(repr, ids))}.",
                field=field,
            )
    cycle = find_cycle(ids, deps)
    if cycle:
        raise InvalidInput(
            f"{kind}s form a cycle: {' -> '.join(cycle)}; break it by removing a dependency.",
            field=field,
        )


def find_cycle(ids: Sequence[str], deps: Mapping[str, Sequence[str]]) -> list[str] | None:
    """A dependency cycle as a path that returns to its start, or ``None``."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for dep in deps.get(node, ()):
            if state.get(dep) == 1:
                return [*path[path.index(dep) :], dep]
            if dep not in state and (found := visit(dep)):
                return found
        path.pop()
        state[node] = 2
        return None

    for node in ids:
        if node not in state and (found := visit(node)):
            return found
    return None


def topological_order(ids: Sequence[str], deps: Mapping[str, Sequence[str]]) -> list[str]:
    """``ids`` with every node after its dependencies, keeping the given order where free."""
    done: set[str] = set()
    order: list[str] = []
    while len(order) < len(ids):
        progressed = False
        for node in ids:
            if node not in done and all(d in done for d in deps.get(node, ())):
                done.add(node)
                order.append(node)
                progressed = True
        if not progressed:
            raise InvalidInput("the dependency graph has a cycle.", field="depends_on")
    return order


def next_moves(
    order: Sequence[str],
    deps: Mapping[str, Sequence[str]],
    *,
    started: Set[str],
    completed: Set[str],
    failed: Set[str],
) -> tuple[list[str], list[tuple[str, str]]]:
    """What a DAG executor does next: the nodes not yet started whose dependencies all
    completed, and the nodes to skip, each with a dependency that did not complete.

    ``order`` must be topological, so a skip cascades to its dependents in one pass.
    """
    start: list[str] = []
    skip: list[tuple[str, str]] = []
    blocked = set(failed)
    for node in order:
        if node in started:
            continue
        needs = deps.get(node, ())
        cause = next((d for d in needs if d in blocked), None)
        if cause is not None:
            skip.append((node, cause))
            blocked.add(node)
        elif all(d in completed for d in needs):
            start.append(node)
    return start, skip
