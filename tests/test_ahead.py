"""Ahead: work that may start early on a helper thread, and runs exactly once; IdleHelper:
the one-thread executor whose thread ends when idle."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import pytest

from memstack._ahead import Ahead, IdleHelper


def _recorded(calls: list[str], value: int) -> int:
    calls.append(threading.current_thread().name)
    return value


def test_result_runs_the_work_in_the_caller_when_no_helper_began_it() -> None:
    calls: list[str] = []
    with ThreadPoolExecutor(max_workers=1) as pool:
        ahead = Ahead(lambda: _recorded(calls, 7), pool)
        assert ahead.result() == 7
        ahead.start()  # too late: already run, nothing is submitted
    assert calls == [threading.current_thread().name]


def test_a_started_helper_runs_it_once_and_the_caller_gets_its_value() -> None:
    calls: list[str] = []
    ran = threading.Event()

    def work() -> int:
        calls.append(threading.current_thread().name)
        ran.set()
        return 3

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="helper") as pool:
        ahead = Ahead(work, pool)
        ahead.start()
        ahead.start()
        assert ran.wait(5)
        assert ahead.result() == 3
    assert len(calls) == 1 and calls[0].startswith("helper")


def test_the_caller_runs_it_when_the_helper_is_busy_and_the_helper_then_skips_it() -> None:
    release = threading.Event()
    calls: list[str] = []
    with ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(release.wait, 5)  # the only helper is busy
        ahead = Ahead(lambda: _recorded(calls, 1), pool)
        ahead.start()
        assert ahead.result() == 1  # no deadlock: claimed and run here
        release.set()
    assert calls == [threading.current_thread().name]


def test_the_works_exception_reaches_the_caller() -> None:
    def work() -> int:
        raise KeyError("boom")

    with ThreadPoolExecutor(max_workers=1) as pool:
        ahead = Ahead(work, pool)
        ahead.start()
        with pytest.raises(KeyError, match="boom"):
            ahead.result()


def test_a_shut_down_executor_leaves_the_work_to_the_caller() -> None:
    pool = ThreadPoolExecutor(max_workers=1)
    pool.shutdown()
    ahead = Ahead(lambda: "here", pool)
    ahead.start()
    assert ahead.result() == "here"


def _wait_until(condition: Callable[[], bool], seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.005)
    return False


def test_the_idle_helper_runs_work_on_its_thread_and_ends_it_when_idle() -> None:
    helper = IdleHelper(name="helper-test", idle_s=0.05)
    assert not helper.running  # no thread before the first work
    assert helper.submit(lambda: threading.current_thread().name).result(5) == "helper-test"
    assert _wait_until(lambda: not helper.running)  # idle past idle_s: the thread ended
    assert not any(t.name == "helper-test" for t in threading.enumerate())
    failed = helper.submit(lambda: 1 // 0)  # a new thread for new work
    with pytest.raises(ZeroDivisionError):
        failed.result(5)
    helper.shutdown()
    assert not helper.running


def test_a_shut_down_idle_helper_refuses_work_and_ahead_runs_it_inline() -> None:
    helper = IdleHelper(name="helper-test", idle_s=30)
    assert helper.submit(lambda: 2).result(5) == 2
    helper.shutdown()
    assert not helper.running  # shutdown ends an idle thread at once
    with pytest.raises(RuntimeError, match="shutdown"):
        helper.submit(lambda: 3)
    ahead = Ahead(lambda: 4, helper)
    ahead.start()
    assert ahead.result() == 4


def test_shutdown_can_cancel_queued_work() -> None:
    helper = IdleHelper(name="helper-test", idle_s=30)
    release = threading.Event()
    helper.submit(release.wait, 5)
    queued = helper.submit(lambda: "never")
    helper.shutdown(wait=False, cancel_futures=True)
    release.set()
    assert queued.cancelled()
    assert _wait_until(lambda: not helper.running)
