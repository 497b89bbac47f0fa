"""Key helpers for the four namespaces of working memory.

Always build keys with these helpers: they prevent typos and make call sites
greppable.
"""

from __future__ import annotations

from typing import Final

__all__ = ["MemoryKeys", "memory_keys"]


class MemoryKeys:
    """``memory_keys.step("s1") == "step:s1"``, and likewise ``task``, ``input``, ``shared``."""

    STEP: Final = "step:"
    TASK: Final = "task:"
    INPUT: Final = "input:"
    SHARED: Final = "shared:"

    @staticmethod
    def step(step_id: str) -> str:
        return f"step:{step_id}"

    @staticmethod
    def task(task_id: str) -> str:
        return f"task:{task_id}"

    @staticmethod
    def input(key: str) -> str:
        return f"input:{key}"

    @staticmethod
    def shared(key: str) -> str:
        return f"shared:{key}"


memory_keys: Final = MemoryKeys()
