"""One linear history per memory, whatever the number of writers: real OS processes (and
real ``memstack serve`` processes) store new values of the same memories at once, on one
SQLite file or one PostgreSQL database.

Every acknowledged write must then be a version in the memory's history, each exactly
once; the versions must chain (each closed version's ``valid_to`` is the next one's
``valid_from``) and exactly one, the last, must be current. The figures are printed
(``Tally``). A process-local lock around the read-then-write, which is all there was
before the store checked it in its write transaction, lost versions on PostgreSQL and
broke chains: another process's writer came in between.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import multiprocessing
import threading
import uuid
from collections import defaultdict
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from click.testing import CliRunner

from memstack.cli import main
from memstack.embeddings import HashEmbedder
from memstack.service.ltm import LongTermTier
from memstack.service.memories import MemoryService
from memstack.service.principal import Principal
from memstack.service.stm import InProcessTier
from memstack.service.types import Memory
from memstack.storage import PostgresRecordStore, RecordStore, SQLiteRecordStore
from memstack.storage.versions import KEPT_VERSIONS
from tests.servers import serve_env, serving_memstack

WRITERS = 4  # processes (or client threads, against servers)
ROUNDS = 5  # each writer stores a new value of every memory this many times
KEYS = 20  # memories, each written WRITERS * ROUNDS times
assert WRITERS * ROUNDS <= KEPT_VERSIONS + 1, "older versions would be deleted by design"
TENANT = "default"
AGENT = "bot"
START_S = 60.0  # a safety bound on starting the writers, not a speed requirement

Where = tuple[str, str]
"""A store as the child processes open it: ("sqlite", path) or ("postgres", url)."""


@dataclass
class Tally:
    """What the writers were told was stored, and what the histories hold."""

    acknowledged: int = 0
    failed: int = 0
    """Writes answered with an error (nothing acknowledged)."""
    versions: int = 0
    """Versions found in the histories."""
    found: int = 0
    """Acknowledged values found among them."""
    broken: list[str] = field(default_factory=list)
    """The memories whose history is not one chain of their acknowledged values."""

    def line(self) -> str:
        return (
            f"acknowledged {self.acknowledged}, failed {self.failed}, versions "
            f"{self.versions}, acknowledged found {self.found}, broken chains "
            f"{len(self.broken)} of {KEYS}"
        )


def open_store(where: Where) -> RecordStore:
    kind, location = where
    store: RecordStore
    if kind == "sqlite":
        store = SQLiteRecordStore(location)
    else:
        store = PostgresRecordStore(location, max_size=2)
    store.setup()
    return store


def checked(where: Where, acknowledged: dict[str, list[str]], failed: int) -> Tally:
    """The tally of ``acknowledged`` (memory id -> values acknowledged) against the
    histories the store holds."""
    store = open_store(where)
    try:
        tier = LongTermTier(store)
        tally = Tally(failed=failed)
        for memory_id, values in sorted(acknowledged.items()):
            history = tier.history(TENANT, memory_id, [AGENT]) or []
            tally.acknowledged += len(values)
            tally.versions += len(history)
            held = [m.value for m in history]
            tally.found += len(set(values) & set(held))
            if sorted(held) != sorted(values) or not _linear(history):
                tally.broken.append(memory_id)
        return tally
    finally:
        store.close()


def _linear(history: list[Memory]) -> bool:
    """One chain: each version valid until the next one's start, the last one current."""
    chained = all(a.valid_to == b.valid_from for a, b in itertools.pairwise(history))
    current = [m for m in history if m.valid_to is None]
    return chained and len(current) == 1 and history[-1].valid_to is None


def value(writer: int, round: int, key: int) -> str:
    return f"value {round} of writer {writer} for key {key}"


# -- writers in processes of their own, through MemoryService ------------------------------


def _write_from_a_process(
    where: Where, writer: int, step: Any, results: Any
) -> None:  # pragma: no cover - runs in a child process
    """Store ``ROUNDS`` values of each of the ``KEYS`` memories, in the same order as the
    other writers and each write when they all are ready for it (so they collide); put
    what was acknowledged on ``results``."""
    store = open_store(where)
    service = MemoryService(records=store, embedder=HashEmbedder(), short_term=InProcessTier())
    principal = Principal(tenant=TENANT)
    acknowledged: list[tuple[str, str]] = []
    failed = 0

    async def run() -> None:
        nonlocal failed
        for round in range(ROUNDS):
            for key in range(KEYS):
                text = value(writer, round, key)
                step.wait(START_S)
                try:
                    memory = await service.store(
                        principal, agent_id=AGENT, key=f"key-{key}", value=text
                    )
                except Exception:
                    failed += 1
                    continue
                acknowledged.append((memory.id, text))

    try:
        asyncio.run(run())
    finally:
        store.close()
        results.put((acknowledged, failed))


def _from_processes(where: Where) -> Tally:
    open_store(where).close()  # the schema, once, before the writers race
    context = multiprocessing.get_context("spawn")
    step = context.Barrier(WRITERS)
    results = context.Queue()
    processes = [
        context.Process(target=_write_from_a_process, args=(where, w, step, results))
        for w in range(WRITERS)
    ]
    for process in processes:
        process.start()
    acknowledged: dict[str, list[str]] = defaultdict(list)
    failed = 0
    for _ in processes:
        written, errors = results.get(timeout=120)
        failed += errors
        for memory_id, text in written:
            acknowledged[memory_id].append(text)
    for process in processes:
        process.join(timeout=30)
        assert process.exitcode == 0
    return checked(where, acknowledged, failed)


@pytest.fixture
def postgres_database(postgres_url: str) -> Iterator[str]:
    """The URL of a fresh database of the test server, dropped after the test (a server
    keeps its tables in schema ``memstack``, so each test gets a database)."""
    name = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    yield postgres_url.rsplit("/", 1)[0] + f"/{name}"
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(params=["sqlite", "postgres"])
def where(request: pytest.FixtureRequest, tmp_path: Path) -> Where:
    if request.param == "sqlite":
        return ("sqlite", str(tmp_path / "shared.db"))
    return ("postgres", request.getfixturevalue("postgres_database"))


def test_processes_writing_the_same_memories_leave_one_linear_history_each(where: Where):
    tally = _from_processes(where)
    print(f"\n{where[0]}, {WRITERS} processes: {tally.line()}")
    assert (tally.failed, tally.acknowledged) == (0, WRITERS * ROUNDS * KEYS), tally.line()
    assert (tally.found, tally.versions, tally.broken) == (tally.acknowledged,) * 2 + ([],)


# -- writers through real servers ------------------------------------------------------------


def _through_servers(urls: list[str], key: str, where: Where) -> Tally:
    """``WRITERS`` client threads, writer w sending to ``urls[w % len(urls)]``, each
    storing every memory ``ROUNDS`` times in the same order as the others, each write
    when they all are ready for it."""
    acknowledged: dict[str, list[str]] = defaultdict(list)
    failures: list[str] = []
    lock = threading.Lock()
    step = threading.Barrier(WRITERS)

    def write(writer: int) -> None:
        url = urls[writer % len(urls)]
        headers = {"Authorization": f"Bearer {key}"}
        fresh = httpx.Limits(max_keepalive_connections=0)  # spread over --workers too
        with httpx.Client(base_url=url, headers=headers, timeout=60, limits=fresh) as http:
            for round in range(ROUNDS):
                for k in range(KEYS):
                    text = value(writer, round, k)
                    body = {"agent_id": AGENT, "key": f"key-{k}", "value": text}
                    step.wait(START_S)
                    answer = http.post("/api/memories", json=body)
                    with lock:
                        if answer.status_code == 201:
                            acknowledged[answer.json()["id"]].append(text)
                        else:
                            failures.append(f"{answer.status_code} {answer.text[:200]}")

    threads = [threading.Thread(target=write, args=(w,)) for w in range(WRITERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failures:
        print(f"\nfailed writes, e.g. {failures[:3]}")
    return checked(where, acknowledged, len(failures))


def _key(store_flags: list[str]) -> str:
    created = CliRunner().invoke(
        main, ["keys", "create", "--tenant", TENANT, "--json", *store_flags]
    )
    assert created.exit_code == 0, created.output
    key: str = json.loads(created.stdout)["key"]
    return key


@pytest.fixture
def redis_database(redis_url: str) -> str:
    """A database of its own in the shared test Redis, emptied first."""
    import redis

    url = redis_url.rsplit("/", 1)[0] + "/11"
    with redis.Redis.from_url(url) as client:
        client.flushdb()
    return url


@pytest.mark.parametrize("setup", ["two servers, sqlite", "two servers, postgres", "--workers 2"])
def test_servers_writing_the_same_memories_leave_one_linear_history_each(
    setup: str, request: pytest.FixtureRequest, tmp_path: Path
):
    where: Where
    if setup.endswith("postgres"):
        where = ("postgres", request.getfixturevalue("postgres_database"))
        flags = ["--postgres-url", where[1]]
    else:
        where = ("sqlite", str(tmp_path / "served.db"))
        flags = ["--db", where[1]]
    open_store(where).close()
    key = _key(flags)
    servers = 2
    if setup == "--workers 2":
        flags += ["--workers", "2", "--redis-url", request.getfixturevalue("redis_database")]
        servers = 1
    with ExitStack() as running:
        env = serve_env(PYTHONUNBUFFERED="1")
        urls = [
            running.enter_context(
                serving_memstack(flags, env=env, log=tmp_path / f"serve-{n}.log", start_s=START_S)
            ).url
            for n in range(servers)
        ]
        tally = _through_servers(urls, key, where)
    print(f"\n{setup}, {WRITERS} writers: {tally.line()}")
    assert (tally.failed, tally.acknowledged) == (0, WRITERS * ROUNDS * KEYS), tally.line()
    assert (tally.found, tally.versions, tally.broken) == (tally.acknowledged,) * 2 + ([],)
