"""Scripted models that play a real model's part, by name (``scripted:<name>``), so an
example runs offline and runs against a real model by changing one string.

- ``echo`` answers ``echo: <first line of the last user message>``.
- ``fibonacci`` follows the MemoryBank Fibonacci procedure (``FIBONACCI_PROMPT``) from the
  messages it is shown: ``memory_read``, then ``memory_write("prev|curr")``, then the
  number alone.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Final

from memstack.providers.base import Completion, Message
from memstack.providers.scripted import ScriptedProvider

__all__ = ["DEMOS", "FIBONACCI_PROMPT", "echo", "fibonacci"]

FIBONACCI_PROMPT: Final = """You maintain a Fibonacci sequence in memory.

Memory format: "prev|curr" (example: "5|8" means prev=5 curr=8).
Empty memory means no numbers generated yet.

PROCEDURE -- do this EVERY time, no exceptions:
1. Call memory_read
2. Look at the result:
   - If empty -> new prev=0, new curr=1, answer=1
   - If "A|B" -> compute next=A+B, new prev=B, new curr=next, answer=next
3. Call memory_write with content "new_prev|new_curr"
4. Reply with ONLY the answer number

Worked examples:
  memory="" -> answer=1, write "0|1"
  memory="0|1" -> 0+1=1, answer=1, write "1|1"
  memory="1|1" -> 1+1=2, answer=2, write "1|2"
  memory="1|2" -> 1+2=3, answer=3, write "2|3"
  memory="2|3" -> 2+3=5, answer=5, write "3|5"

Rules: exactly one memory_read, exactly one memory_write, then reply with just the number."""
"""The MemoryBank Fibonacci agent prompt, word for word."""


def echo(messages: Sequence[Message]) -> str:
    """``echo: <first line of the last user message>``."""
    last = next((m.content for m in reversed(messages) if m.role == "user"), "")
    lines = last.strip().splitlines()
    return f"echo: {lines[0] if lines else ''}".rstrip()


def _next(memory: str) -> tuple[int, int, int]:
    """The procedure's step 2: (new prev, new curr, answer)."""
    if not memory.strip():
        return 0, 1, 1
    prev, curr = (int(part) for part in memory.strip().split("|"))
    return curr, prev + curr, prev + curr


def fibonacci(messages: Sequence[Message]) -> Completion:
    """The next move of a model following ``FIBONACCI_PROMPT`` in this conversation."""
    call = ScriptedProvider.tool_call
    results = {m.name: m.content for m in messages if m.role == "tool"}
    if "memory_read" not in results:
        return Completion(tool_calls=(call("memory_read", {}),))
    prev, curr, answer = _next(results["memory_read"])
    if "memory_write" not in results:
        return Completion(tool_calls=(call("memory_write", {"content": f"{prev}|{curr}"}),))
    return Completion(content=str(answer))


DEMOS: Final[dict[str, Callable[[Sequence[Message]], str | Completion]]] = {
    "echo": echo,
    "fibonacci": fibonacci,
}
