"""Running one piece of work in several threads at once, for the concurrency tests."""

from __future__ import annotations

import threading
from collections.abc import Callable


def in_threads(work: Callable[[int], None], threads: int) -> list[BaseException]:
    """Run ``work(0)`` .. ``work(threads - 1)`` each in a thread of its own, all at once;
    return what they raised (an assertion in a thread fails nothing by itself, so the
    test asserts that this is empty)."""
    errors: list[BaseException] = []

    def run(t: int) -> None:
        try:
            work(t)
        except BaseException as exc:  # reported to the test's thread
            errors.append(exc)

    workers = [threading.Thread(target=run, args=(t,)) for t in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return errors
