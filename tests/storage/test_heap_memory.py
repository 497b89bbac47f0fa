"""release_heap: the heap that freed objects leave behind goes back to the OS (glibc)."""

from __future__ import annotations

import os

import pytest

from memstack.storage._heap import _malloc_trim, release_heap

pytestmark = pytest.mark.skipif(_malloc_trim() is None, reason="malloc_trim is glibc's")


def resident_mb() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def test_release_heap_hands_back_the_heap_freed_between_live_objects() -> None:
    # 64 MB of 1 kB objects (too large for Python's small-object allocator, so glibc's
    # heap); one in 64 stays alive, so the heap cannot shrink from its top
    blocks = [bytes(1_024) for _ in range(65_536)]
    kept = blocks[::64]
    del blocks
    before = resident_mb()
    release_heap()
    assert before - resident_mb() > 24
    assert len(kept) == 1_024
