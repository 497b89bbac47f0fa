"""Helpers for knowledge documents indexed in the background: prose of a known number of
passages, and waiting (with a deadline, never a speed assertion) for a document's status."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Sequence
from typing import Any

import httpx

from memstack.embeddings import HashEmbedder, Vectors
from memstack.embeddings.base import EmbedderWrapper
from memstack.service.knowledge import CHUNK_CHARS

WAIT_S = 120.0
"""A safety bound on indexing one test document, not a speed requirement."""


def prose(passages: int, *, word: str = "river") -> str:
    """Prose that splits into exactly ``passages`` passages, numbered ``p<i>``."""
    paragraph = " ".join([f"The {word} runs past the library garden every morning."] * 14)
    assert CHUNK_CHARS // 2 < len(paragraph) + 8 < CHUNK_CHARS - 2
    return "\n\n".join(f"p{i} {paragraph}" for i in range(passages))


async def status(api: httpx.AsyncClient, key: str, doc_id: str) -> dict[str, Any]:
    response = await api.get(
        f"/api/knowledge/{doc_id}/status", headers={"Authorization": f"Bearer {key}"}
    )
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def until_indexed(
    api: httpx.AsyncClient, key: str, doc_id: str, *, wait_s: float = WAIT_S
) -> dict[str, Any]:
    """The document's status once it is no longer ``indexing``; fails after ``wait_s``."""
    deadline = time.monotonic() + wait_s
    while True:
        now = await status(api, key, doc_id)
        if now["status"] != "indexing":
            return now
        assert time.monotonic() < deadline, (
            f"{doc_id} still indexing after {wait_s:.0f} s: {now['passages_done']} of "
            f"{now['passages_total']} passages"
        )
        await asyncio.sleep(0.05)


class GatedEmbedder(EmbedderWrapper):
    """A HashEmbedder whose batches of a document's passages (texts starting with
    ``prefix``) wait at ``gate`` once ``free`` of them went through: the document stays
    half indexed until the test opens it. Other texts (queries) are never held."""

    def __init__(self, *, prefix: str, free: int, dim: int = 32) -> None:
        self.inner = HashEmbedder(dim=dim)
        self.prefix = prefix
        self.free = free
        self.gate = threading.Event()
        self.batches = 0
        self._lock = threading.Lock()

    def embed_batch(self, texts: Sequence[str]) -> Vectors:
        if texts and texts[0].startswith(self.prefix):
            with self._lock:
                self.batches += 1
                held = self.batches > self.free
            if held and not self.gate.wait(WAIT_S):
                raise TimeoutError("the test never opened the gate")
        return self.inner.embed_batch(texts)
