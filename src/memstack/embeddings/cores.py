"""Cores of their own for the local model's calls, apart from the request threads.

A ``memstack serve`` process runs the local model's calls (``wiring.model_lanes`` of
them at once) beside Python request threads that hand the GIL to each other thousands
of times a second. Each handoff wakes a thread, and the scheduler may wake it on the
core where a model call runs: the call, which holds no GIL, is set back again and again,
and with a lane busy the whole time, the lane bounds the server.

So ``memstack serve --pin-cores`` (one process alone on its machine) splits the cores it
may use: the lanes' cores for model calls, the others for everything else. The model's
calls are made by lane threads that stay on the model's cores (``BatchingEmbedder`` with
``cores``), and ``pin_threads`` moves every other thread of the process onto the request
cores when the server starts (threads started later inherit it); a spill lane at idle
priority embeds on the request cores only when they have nothing else to run. Without
the flag, or on a platform without ``os.sched_setaffinity``, or with fewer than two cores
to split, nothing is pinned.
"""

from __future__ import annotations

import os
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

__all__ = ["CoreSplit", "pin_threads", "split_cores", "usable_cores"]


@dataclass(frozen=True, kw_only=True)
class CoreSplit:
    """The cores the model's calls run on, and the cores every other thread runs on."""

    model: frozenset[int]
    requests: frozenset[int]


def usable_cores() -> int:
    """How many cores this process may run on (its affinity where the platform has one,
    else every core): a container limited to 2 of 16 cores has 2."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def split_cores(lanes: int, allowed: Collection[int] | None = None) -> CoreSplit | None:
    """``lanes`` cores for the model (the highest-numbered), the rest for requests, out of
    ``allowed`` (default: the cores this process may use); None where threads cannot be
    pinned or there are not two cores to split. The requests keep at least one core."""
    if not hasattr(os, "sched_setaffinity"):
        return None
    cores = sorted(os.sched_getaffinity(0) if allowed is None else allowed)
    if len(cores) < 2 or lanes < 1:
        return None
    taken = min(lanes, len(cores) - 1)
    return CoreSplit(model=frozenset(cores[-taken:]), requests=frozenset(cores[:-taken]))


def pin_threads(cores: frozenset[int]) -> int:
    """Every thread of this process onto ``cores``; how many threads were moved. Threads
    started afterwards inherit the core set of the thread that starts them."""
    moved = 0
    for task in Path("/proc/self/task").iterdir():
        try:
            os.sched_setaffinity(int(task.name), cores)
        except (ProcessLookupError, FileNotFoundError):  # the thread ended meanwhile
            continue
        moved += 1
    return moved
