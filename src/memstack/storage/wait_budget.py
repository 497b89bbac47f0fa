"""How long one request may wait, in all, for a backing store's connections.

A request can make several store calls (its key's lookup, a read, a write). While
PostgreSQL is down each call waits up to the pool's timeout for a connection, so a
request of two calls answered 503 after twice that. The server gives each request one
budget (``budget_for_waits``) for all its waits together; each wait asks how much is
left (``allowance``) and takes what it used (``spend``), so no request waits longer in
all, however many calls it makes.

The budget travels in a context variable: ``asyncio.to_thread`` and Starlette's thread
pool copy the request's context into the threads that run its work, and they share
the one budget object. Outside a request (the library, the CLI) there is no budget and
each wait keeps its own timeout.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = ["allowance", "budget_for_waits", "spend"]


_LEAST_S = 0.01
"""A budget with less left than this is spent: a wait so short could only fail."""


class _Budget:
    """Seconds left for waiting; shared by the threads of one request."""

    def __init__(self, seconds: float) -> None:
        self.left = seconds
        self.lock = threading.Lock()


_BUDGET: ContextVar[_Budget | None] = ContextVar("memstack_store_wait_budget", default=None)


@contextmanager
def budget_for_waits(seconds: float) -> Iterator[None]:
    """Within the block (and the threads it hands work to), all waits for a store's
    connection together take at most ``seconds``."""
    token = _BUDGET.set(_Budget(seconds))
    try:
        yield
    finally:
        _BUDGET.reset(token)


def allowance(timeout: float) -> float:
    """How long the next wait may take: ``timeout``, or less when the budget has less
    left; 0 when it is spent (less than ``_LEAST_S`` left)."""
    budget = _BUDGET.get()
    if budget is None:
        return timeout
    with budget.lock:
        left = budget.left
    return min(timeout, left) if left >= _LEAST_S else 0.0


def spend(seconds: float) -> None:
    """Take ``seconds`` spent waiting from the budget (none: nothing to do)."""
    budget = _BUDGET.get()
    if budget is not None:
        with budget.lock:
            budget.left -= seconds
