"""Reads on a real hot standby (``running_replica``: ``pg_basebackup -R`` of a primary of
its own, streaming): answered by the standby, a write read back at once even while the
standby's replay is paused (from another store too, as from another process), a
standby lagging past the bound or down or failing mid-read routed around, and a
``StoreUnavailable`` only when nothing can answer.

Which server answered is told by a row written on the primary with plain SQL, which
memstack's write counters do not know of, while the standby's replay is paused: the
standby lacks it, the primary has it."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import psycopg
import pytest
from pgvector.psycopg import register_vector

from memstack.errors import StoreUnavailable
from memstack.storage import PostgresRecordStore, RecordStore
from memstack.storage import _postgres_query as q
from memstack.storage import _postgres_replicas as replicas
from tests.servers import PostgresServer
from tests.storage.records import rec

WAIT_S = 30.0
"""How long a test waits for the standby to replay or receive (a deadline, not a bound
under test)."""

Pair = tuple[PostgresServer, PostgresServer]


@pytest.fixture
def servers(replicated_postgres: Pair) -> Pair:
    """The session's primary and its streaming standby (``replicated_postgres``)."""
    return replicated_postgres


@pytest.fixture
def schema(servers: Pair) -> Iterator[str]:
    name = f"t_{uuid.uuid4().hex[:12]}"
    yield name
    with psycopg.connect(servers[0].url, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')


@pytest.fixture
def open_store(servers: Pair, schema: str) -> Iterator[Callable[..., RecordStore]]:
    """Stores on the primary, reading on the standby (unless ``read_urls=[]``)."""
    opened: list[RecordStore] = []

    def make(*, read_urls: list[str] | None = None, max_lag_s: float = 3600.0) -> RecordStore:
        urls = [servers[1].url] if read_urls is None else read_urls
        store = PostgresRecordStore(
            servers[0].url, schema=schema, read_urls=urls, max_lag_s=max_lag_s
        )
        opened.append(store)
        store.setup()
        return store

    yield make
    for store in opened:
        store.close()


def _lsn(url: str, sql: str) -> str:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(sql).fetchone()
    assert row is not None
    return str(row[0])


def _wait_until(standby: str, which: str, lsn: str) -> None:
    """Wait until the standby's ``which`` (``replay`` or ``receive``) LSN reaches ``lsn``."""
    deadline = time.monotonic() + WAIT_S
    with psycopg.connect(standby, autocommit=True) as conn:
        while True:
            row = conn.execute(f"SELECT pg_last_wal_{which}_lsn() >= %s::pg_lsn", (lsn,)).fetchone()
            if row is not None and row[0]:
                return
            assert time.monotonic() < deadline, f"the standby's {which} LSN never reached {lsn}"
            time.sleep(0.02)


def replayed(servers: Pair) -> None:
    """Wait until the standby has replayed everything the primary wrote so far."""
    _wait_until(
        servers[1].url, "replay", _lsn(servers[0].url, "SELECT pg_current_wal_insert_lsn()")
    )


@contextmanager
def replay_paused(servers: Pair) -> Iterator[None]:
    """The standby receives WAL but replays none of it inside the block."""
    replayed(servers)
    with psycopg.connect(servers[1].url, autocommit=True) as conn:
        conn.execute("SELECT pg_wal_replay_pause()")
        deadline = time.monotonic() + WAIT_S
        while conn.execute("SELECT pg_get_wal_replay_pause_state()").fetchone() != ("paused",):
            assert time.monotonic() < deadline, "the standby's replay did not pause"
            time.sleep(0.02)
        try:
            yield
        finally:
            conn.execute("SELECT pg_wal_replay_resume()")


def write_unmarked(servers: Pair, schema: str, namespace: str, id: str) -> None:
    """``id`` written on the primary with plain SQL (no write counter bumped) into
    ``namespace`` and a new namespace below it, then received by the standby (not
    replayed while paused)."""
    records = [
        rec(id, name, f"unmarked {id} words", embedding=[1.0, 0.0])
        for name in (namespace, f"{namespace}/{id}")
    ]
    with psycopg.connect(servers[0].url, autocommit=True) as conn:
        register_vector(conn)
        conn.execute(q.upsert_sql(f'"{schema}"'), q.upsert_params(records))
        row = conn.execute("SELECT pg_current_wal_insert_lsn()").fetchone()
        conn.execute("SELECT pg_switch_wal()")  # written out, so it streams now
    assert row is not None
    _wait_until(servers[1].url, "receive", str(row[0]))


def write(store: RecordStore, namespace: str, id: str) -> None:
    """``id`` written by ``store`` into ``namespace`` and a new namespace below it."""
    names = (namespace, f"{namespace}/{id}")
    store.upsert([rec(id, name, f"{id} words", embedding=[1.0, 0.0]) for name in names])


Read = Callable[[RecordStore, str], object]
READS: dict[str, Read] = {
    "get": lambda s, ns: {r.id for r in s.get(ns, ["mine", "hidden", "seen"])},
    "list": lambda s, ns: {r.id for r in s.list(ns)},
    "count": lambda s, ns: s.count(ns),
    "text_search": lambda s, ns: {h.record.id for h in s.text_search(ns, "words", k=5)},
    "vector_search": lambda s, ns: {h.record.id for h in s.vector_search(ns, [1.0, 0.0], k=5)},
    "nearest": lambda s, ns: s.nearest(ns, [[1.0, 0.0], [0.9, 0.1]]),
    "gather": lambda s, ns: set(s.gather(ns, query="words", vector=[1.0, 0.0], k=5).records),
    "namespaces": lambda s, ns: s.namespaces(ns),
}


@pytest.mark.parametrize("read", READS.values(), ids=READS.keys())
def test_the_standby_answers_and_ones_own_write_is_read_back_at_once(
    servers: Pair, schema: str, open_store: Callable[..., RecordStore], read: Read
) -> None:
    writer, reader = open_store(), open_store()  # two stores: as two processes would
    primary = open_store(read_urls=[])
    write(writer, "other", "seen")
    write(writer, "mine", "seen")
    with replay_paused(servers):
        write_unmarked(servers, schema, "other", "hidden")
        write(writer, "mine", "mine")
        # The standby answers for namespaces whose every write it has replayed: it
        # lacks what the primary holds...
        assert read(reader, "other") != read(primary, "other")
        # ...and the primary for those whose last write it has not replayed.
        assert read(reader, "mine") == read(primary, "mine")
        assert read(writer, "mine") == read(primary, "mine")
    replayed(servers)
    assert read(reader, "other") == read(primary, "other")


def test_a_standby_lagging_past_the_bound_is_skipped(
    servers: Pair, schema: str, open_store: Callable[..., RecordStore]
) -> None:
    bounded, unbounded = open_store(max_lag_s=0.0), open_store()
    write(open_store(read_urls=[]), "other", "seen")
    with replay_paused(servers):
        write_unmarked(servers, schema, "other", "hidden")
        assert {r.id for r in unbounded.list("other")} == {"seen"}  # the standby
        assert {r.id for r in bounded.list("other")} == {"seen", "hidden"}  # the primary


def test_a_standby_that_is_down_is_routed_around(
    servers: Pair, open_store: Callable[..., RecordStore]
) -> None:
    store = open_store()
    write(store, "ns", "a")
    replayed(servers)
    assert {r.id for r in store.list("ns")} == {"a"}  # its pool holds a standby connection
    servers[1].stop()
    try:
        written = ["a"]
        for id in ("b", "c"):
            write(store, "ns", id)
            written.append(id)
            assert {r.id for r in store.list("ns")} == set(written)
            assert store.namespaces("ns/") == [f"ns/{i}" for i in written]
    finally:
        servers[1].start()


def test_a_standby_failing_mid_read_is_routed_around(
    servers: Pair, schema: str, open_store: Callable[..., RecordStore]
) -> None:
    """The standby passes the check (it may read the counters) and fails the read itself
    (it may not read the records): the primary answers."""
    role = f"reader_{uuid.uuid4().hex[:8]}"
    store = open_store()
    write(store, "ns", "a")
    with psycopg.connect(servers[0].url, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN")
        conn.execute(f'GRANT USAGE ON SCHEMA "{schema}" TO {role}')
        conn.execute(f'GRANT SELECT ON "{schema}".write_marks TO {role}')
    replayed(servers)
    url = servers[1].url.replace("postgres@", f"{role}@")
    partial = open_store(read_urls=[url])
    assert {r.id for r in partial.list("ns")} == {"a"}
    assert partial.namespaces("ns/") == ["ns/a"]


def test_reads_are_store_unavailable_only_when_the_primary_is_down(
    servers: Pair, open_store: Callable[..., RecordStore]
) -> None:
    """Without the primary no read can know which writes it must see: a fast
    ``StoreUnavailable`` (a 503 with Retry-After from the server), never a stale answer."""
    store = open_store()
    write(store, "ns", "a")
    replayed(servers)
    servers[0].stop()
    try:
        with pytest.raises(StoreUnavailable):
            store.list("ns")
    finally:
        servers[0].start()
    assert {r.id for r in store.list("ns")} == {"a"}


def test_a_server_not_in_recovery_is_no_standby(
    servers: Pair, schema: str, open_store: Callable[..., RecordStore]
) -> None:
    """A read URL naming a primary (or a promoted standby, which may have parted from
    this primary's history) never answers as a standby."""
    open_store(read_urls=[])
    for url, standby in ((servers[0].url, False), (servers[1].url, True)):
        replayed(servers)
        with psycopg.connect(url) as conn:
            assert replicas.fresh(conn, f'"{schema}"', ([], []), 3600.0) is standby
