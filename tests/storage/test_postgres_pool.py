"""The PostgreSQL store's pool against a server that is not there: a fast
``StoreUnavailable``, not a wait of psycopg_pool's default 30 s.

(A server stopped and restarted under load: ``tests/reliability/test_postgres_outage.py``.)
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import pytest

from memstack.errors import StoreUnavailable
from memstack.storage import Namespace
from memstack.storage.postgres import (
    CONNECT_TIMEOUT_S,
    PING_TIMEOUT_S,
    REQUEST_TIMEOUT_S,
    PostgresBackend,
    PostgresRecordStore,
)
from memstack.storage.wait_budget import budget_for_waits
from tests.servers import free_port

DEADLINE_S = 5.0  # a bound that holds on a slow machine; the store's own is printed


@pytest.fixture
def nowhere() -> Iterator[PostgresRecordStore]:
    """A store whose server refuses every connection (nothing listens on its port)."""
    store = PostgresRecordStore(f"postgresql://postgres@127.0.0.1:{free_port()}/postgres")
    yield store
    store.close()


CALLS: list[tuple[str, Callable[[PostgresRecordStore], object], float]] = [
    ("count", lambda store: store.count(Namespace("mem", "a")), REQUEST_TIMEOUT_S),
    ("get", lambda store: store.get(Namespace("mem", "a"), ["x"]), REQUEST_TIMEOUT_S),
    ("ping", lambda store: store.ping(), PING_TIMEOUT_S),
]


@pytest.mark.parametrize(("name", "call", "bound"), CALLS, ids=[c[0] for c in CALLS])
def test_a_server_that_is_not_there_is_a_fast_store_unavailable(
    nowhere: PostgresRecordStore,
    name: str,
    call: Callable[[PostgresRecordStore], object],
    bound: float,
) -> None:
    started = time.monotonic()
    with pytest.raises(StoreUnavailable, match=f"no connection within {bound:g} s"):
        call(nowhere)
    took = time.monotonic() - started
    print(f"\n{name} without a server: StoreUnavailable after {took:.2f} s (bound {bound} s)")
    assert took < DEADLINE_S


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("postgresql://u@127.0.0.1:5432/db", {"connect_timeout": CONNECT_TIMEOUT_S}),
        ("postgresql://u@127.0.0.1:5432/db?connect_timeout=9", {}),  # the URL's own stays
        ("host=127.0.0.1 dbname=db connect_timeout=9", {}),
    ],
)
def test_connections_give_up_connecting_unless_the_url_says_otherwise(
    url: str, expected: dict[str, int]
) -> None:
    backend = PostgresBackend(url)
    try:
        assert backend._pool.kwargs == expected
    finally:
        backend.close()


def test_a_request_waits_for_connections_once_however_many_calls_it_makes(
    nowhere: PostgresRecordStore,
) -> None:
    """Within one request's wait budget (``StoreWaitBudget`` gives every HTTP request
    one), the first call takes all of it and every later call fails at once, so a
    request of several calls still answers within the budget."""
    with budget_for_waits(0.3):
        with pytest.raises(StoreUnavailable, match=r"no connection within 0\.3 s"):
            nowhere.count(Namespace("mem", "a"))
        for _ in range(3):
            with pytest.raises(StoreUnavailable, match="already waited as long as it may"):
                nowhere.get(Namespace("mem", "a"), ["x"])
    # Outside a budget each call has its own wait again.
    with pytest.raises(StoreUnavailable, match=f"no connection within {REQUEST_TIMEOUT_S:g} s"):
        nowhere.count(Namespace("mem", "a"))
