"""``memstack bench knowledge``: one large knowledge document, from its POST to ready.

A document of ``megabytes`` of generated prose (seeded sentences from a small
vocabulary, in paragraphs, so it splits as prose does) is posted to a server; its
status is then polled until it is ready or failed. Meanwhile the server's resident
memory (the process and its workers, ``proc.tree_rss_mb``) and ``/healthz`` are sampled.
The report: how long the POST took (the 202), how long until every passage was
searchable, passages per second, and the server's RSS before, at its peak and after,
with the growth as a multiple of the document's size.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any

import httpx

from memstack.bench.proc import tree_rss_mb
from memstack.bench.report import format_table
from memstack.errors import StoreUnavailable

__all__ = ["document_text", "knowledge_table", "measure_document"]

_WORDS = (
    "river library garden morning engineer harbour winter lantern market orchard "
    "station teacher bridge letter window village mountain kitchen painter island "
    "carries opens watches builds follows remembers crosses gathers answers writes "
    "quietly early slowly often again together along beside under across"
).split()


def document_text(megabytes: float, *, seed: int = 0) -> str:
    """About ``megabytes`` MiB of prose: sentences of 8-16 words, 4-8 to a paragraph."""
    rng = random.Random(seed)
    target = int(megabytes * 1024 * 1024)
    paragraphs: list[str] = []
    size = 0
    while size < target:
        sentences = [
            " ".join(rng.choices(_WORDS, k=rng.randint(8, 16))).capitalize() + "."
            for _ in range(rng.randint(4, 8))
        ]
        paragraph = " ".join(sentences)
        paragraphs.append(paragraph)
        size += len(paragraph) + 2
    return "\n\n".join(paragraphs)[:target]


def measure_document(
    *,
    url: str,
    api_key: str,
    pid: int,
    text: str,
    timeout_s: float = 3600.0,
    tick: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Post ``text`` as one document and follow it to ready; ``tick(done, total)`` as
    its passages land. ``StoreUnavailable`` when it fails or does not finish in time."""
    headers = {"Authorization": f"Bearer {api_key}"}
    with httpx.Client(base_url=url, headers=headers, timeout=120.0) as client:
        before = tree_rss_mb(pid)
        started = time.monotonic()
        posted = client.post("/api/knowledge", json={"title": "Bench handbook", "text": text})
        answered_s = time.monotonic() - started
        if posted.status_code not in (201, 202):
            raise StoreUnavailable(
                f"POST /api/knowledge answered {posted.status_code}: {posted.text[:300]}"
            )
        doc_id = posted.json()["id"]
        peak, health_ms, state = before, 0.0, posted.json()
        while state["status"] == "indexing":
            if time.monotonic() - started > timeout_s:
                raise StoreUnavailable(f"document {doc_id} was not ready in {timeout_s:g} s")
            time.sleep(0.2)
            peak = max(peak, tree_rss_mb(pid))
            asked = time.monotonic()
            client.get("/healthz")
            health_ms = max(health_ms, (time.monotonic() - asked) * 1000)
            state = client.get(f"/api/knowledge/{doc_id}/status").json()
            if tick is not None:
                tick(state["passages_done"], state["passages_total"])
        ready_s = time.monotonic() - started
        if state["status"] != "ready":
            raise StoreUnavailable(f"document {doc_id} ended {state['status']}: {state}")
        after = tree_rss_mb(pid)
        client.delete(f"/api/knowledge/{doc_id}")
    doc_mb = len(text.encode()) / (1024 * 1024)
    passages = int(state["passages_total"])
    return {
        "status_code": posted.status_code,
        "document_mb": round(doc_mb, 2),
        "passages": passages,
        "answered_s": round(answered_s, 3),
        "ready_s": round(ready_s, 1),
        "passages_per_s": round(passages / ready_s, 1),
        "healthz_max_ms": round(health_ms, 1),
        "rss_before_mb": round(before, 1),
        "rss_peak_mb": round(peak, 1),
        "rss_after_mb": round(after, 1),
        "rss_growth_mb": round(peak - before, 1),
        "rss_growth_to_document": round((peak - before) / doc_mb, 2),
    }


def knowledge_table(runs: list[dict[str, Any]]) -> str:
    headers = ["document MB", "answer", "passages", "ready s", "passages/s", "/healthz max ms"]
    headers += ["RSS before MB", "RSS peak MB", "growth MB", "growth / document"]
    rows = [
        [
            r["document_mb"],
            f"{r['status_code']} in {r['answered_s']:.2f} s",
            r["passages"],
            r["ready_s"],
            r["passages_per_s"],
            r["healthz_max_ms"],
            r["rss_before_mb"],
            r["rss_peak_mb"],
            r["rss_growth_mb"],
            r["rss_growth_to_document"],
        ]
        for r in runs
    ]
    return format_table(headers, rows)
