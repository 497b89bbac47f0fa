"""release_heap: the heap that freed objects leave behind goes back to the OS (glibc)."""

from __future__ import annotations

import os

import pytest

from memstack.storage._heap import _malloc_trim, release_heap


def resident_mb() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def freed_between_live_objects() -> list[bytes]:
    """64 MB of 1 kB objects (too large for Python's small-object allocator, so glibc's
    heap) freed but one in 64, so the heap cannot shrink from its top: what is kept."""
    blocks = [bytes(1_024) for _ in range(65_536)]
    kept = blocks[::64]
    del blocks
    return kept


def test_release_heap_hands_back_the_heap_freed_between_live_objects() -> None:
    assert _malloc_trim() is not None, "needs glibc's malloc_trim (Debian, as make test runs)"
    kept = freed_between_live_objects()
    before = resident_mb()
    release_heap()
    assert before - resident_mb() > 24
    assert len(kept) == 1_024


def test_release_heap_does_nothing_without_malloc_trim(monkeypatch: pytest.MonkeyPatch) -> None:
    import memstack.storage._heap as heap

    monkeypatch.setattr(heap, "_malloc_trim", lambda: None)  # macOS, musl, Windows
    kept = freed_between_live_objects()
    before = resident_mb()
    heap.release_heap()
    assert before - resident_mb() < 24  # nothing handed back
    assert len(kept) == 1_024
    release_heap()  # the real one, so the next test starts from a trimmed heap
