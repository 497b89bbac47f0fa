"""Telling a caller when an embedding call starts work that holds no GIL.

A recall can run its keyword half on another thread while the query is embedded, but
only once the model runs: started any earlier, the two threads take turns on the GIL
and the embedding waits for its own tokenizer (measured: the keyword half then cost the
embedding as much as it saved). So an embedder calls ``computing()`` right before the
part of its work that releases the GIL (the local model's run), and a caller that
wants to know wraps its call in ``when_computing(callback)``.

The callback lives in a ``ContextVar``: it follows the call through wrappers on the same
thread (``CachedEmbedder``, ``BatchingEmbedder``) and goes nowhere else, so a batch that
another caller's thread runs calls no one's callback, and neither does a cache hit. A
caller must therefore not rely on the callback being called: it is a hint.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = ["computing", "when_computing"]

_CALLBACK: ContextVar[Callable[[], None] | None] = ContextVar(
    "memstack_embedding_computing", default=None
)


@contextmanager
def when_computing(callback: Callable[[], None]) -> Iterator[None]:
    """Within the block, embedders call ``callback`` (on the caller's thread, possibly
    more than once) right before work that holds no GIL. It must be quick and must not
    raise."""
    token = _CALLBACK.set(callback)
    try:
        yield
    finally:
        _CALLBACK.reset(token)


def computing() -> None:
    """For embedders: about to run work that releases the GIL."""
    callback = _CALLBACK.get()
    if callback is not None:
        callback()
