"""One linear history per user fact, whatever the number of writers: real OS processes
supersede the same facts of one served user at once (``UserMemories.remember`` with
``supersedes``), on one SQLite file or one PostgreSQL database.

Each writer reads the fact's current version and supersedes it; when another writer
closed that version first, the write is refused (``InvalidInput`` naming the successor)
and the writer reads again. Every acknowledged value must then be a version of the
fact's history, exactly once, the versions chained and exactly one, the last, current.
Closing the old version is checked inside the write's transaction (``Expect``): a
check in the process alone forked histories, two successors of one version both current.
"""

from __future__ import annotations

import asyncio
import itertools
import multiprocessing
from collections import defaultdict
from typing import Any

from memstack.embeddings import HashEmbedder
from memstack.errors import InvalidInput
from memstack.longterm.types import LongTermItem
from memstack.service.principal import Principal
from memstack.service.users import UserMemories
from tests.reliability.test_one_history import (
    START_S,
    Where,
    open_store,
    postgres_database,
    where,
)

__all__ = ["postgres_database", "where"]  # the stores, as the keyed memories. test has them

WRITERS = 4
ROUNDS = 4  # each writer supersedes every fact this many times
FACTS = 4
CALLER = Principal(tenant="acme", long_term=True)
USER = "u1"
TRIES = 200  # a writer's reads-again of one write: a bound on a stuck test, never reached


def _users(where: Where) -> UserMemories:
    return UserMemories(records=open_store(where), embedder=HashEmbedder())


async def _current(users: UserMemories, fact: int) -> str:
    """The fact's version no other replaces. (A version another writer closed a moment
    ago can still list as valid "now" beside its successor: the reader's clock read
    ``now`` before the writer's closing time, which validity compares with.)"""
    page = await users.memories(CALLER, USER, limit=1_000)
    found = [m.id for m in page.items if m.metadata.get("fact") == fact and m.superseded_by is None]
    assert len(found) == 1, f"fact {fact} has {len(found)} current versions"
    return found[0]


def _supersede_from_a_process(
    where: Where, writer: int, step: Any, results: Any
) -> None:  # pragma: no cover - runs in a child process
    users = _users(where)
    acknowledged: list[tuple[int, str]] = []

    async def write(fact: int, text: str) -> None:
        for _ in range(TRIES):
            old = await _current(users, fact)
            try:
                done = await users.remember(
                    CALLER, USER, text, supersedes=[old], metadata={"fact": fact}
                )
            except InvalidInput:  # another writer closed it first: read again
                continue
            assert done.outcome == "stored", done
            acknowledged.append((fact, text))
            return

    async def run() -> None:
        for round in range(ROUNDS):
            for fact in range(FACTS):
                step.wait(START_S)
                await write(fact, f"fact {fact} is value {round} of writer {writer}")

    try:
        asyncio.run(run())
    finally:
        users.records.close()
        results.put(acknowledged)


def _history_of(items: list[LongTermItem]) -> bool:
    chained = all(a.valid_to == b.valid_from for a, b in itertools.pairwise(items))
    current = [m for m in items if m.valid_to is None]
    return chained and len(current) == 1 and items[-1].valid_to is None


def test_processes_superseding_the_same_facts_leave_one_linear_history_each(where: Where):
    users = _users(where)
    try:
        firsts = {
            fact: asyncio.run(
                users.remember(CALLER, USER, f"fact {fact} first value", metadata={"fact": fact})
            ).id
            for fact in range(FACTS)
        }
        context = multiprocessing.get_context("spawn")
        step, results = context.Barrier(WRITERS), context.Queue()
        processes = [
            context.Process(target=_supersede_from_a_process, args=(where, w, step, results))
            for w in range(WRITERS)
        ]
        for process in processes:
            process.start()
        acknowledged: dict[int, list[str]] = defaultdict(list)
        for _ in processes:
            for fact, text in results.get(timeout=180):
                acknowledged[fact].append(text)
        for process in processes:
            process.join(timeout=30)
            assert process.exitcode == 0
        for fact, first in firsts.items():
            assert first is not None
            history = asyncio.run(users.history(CALLER, USER, first))
            texts = [v.text for v in history]
            assert sorted(texts) == sorted([f"fact {fact} first value", *acknowledged[fact]])
            assert len(acknowledged[fact]) == WRITERS * ROUNDS
            assert _history_of(history), [(v.text, v.valid_from, v.valid_to) for v in history]
    finally:
        users.records.close()
