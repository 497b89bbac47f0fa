"""What a structure built in a test keeps allocated (tracemalloc)."""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def allocated(build: Callable[[], T]) -> tuple[T, int]:
    """``build()``'s result and the bytes still allocated after it, garbage collected."""
    gc.collect()
    tracemalloc.start()
    try:
        built = build()
        gc.collect()
        return built, tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
