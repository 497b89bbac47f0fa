"""A large knowledge document survives its server: a real ``memstack serve`` on a SQLite
file is killed with SIGKILL half-way through indexing a 1 MB document, started again on
the same file, and carries on to ``ready`` from the passages already stored (once the dead
server's lease runs out); one stopped with SIGTERM hands its lease back as it stops. Every
passage is stored exactly once (ids ``<doc>:<i>``), the text comes back whole, and
``/healthz`` answers while the document indexes. The waits are safety bounds with a
message, never speed requirements."""

from __future__ import annotations

import signal
import time
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import httpx

from memstack.service.api_keys import ApiKeys
from memstack.service.passages import split_passages
from memstack.wiring import open_records
from tests.server.indexing import WAIT_S, prose
from tests.servers import ServeProcess, serve_env, serving_memstack

PASSAGES = 1_320  # about 1 MB
KILL_AFTER = 10 * 16  # passages stored before the kill: ten batches


def _serving(db: Path, log: Path) -> AbstractContextManager[ServeProcess]:
    """``memstack serve`` on ``db``, killed (SIGKILL) afterwards unless the test ended it."""
    return serving_memstack(["--db", str(db)], env=serve_env(), log=log, kill=True)


def _status(http: httpx.Client, doc_id: str) -> dict[str, Any]:
    response = http.get(f"/api/knowledge/{doc_id}/status")
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def _add_and_stop_midway(server: ServeProcess, key: str, text: str, stop: signal.Signals) -> str:
    """Add the document, then send ``stop`` once ``KILL_AFTER`` passages are stored (and
    before the last): the document's id."""
    headers = {"Authorization": f"Bearer {key}"}
    with httpx.Client(base_url=server.url, headers=headers, timeout=60) as http:
        response = http.post("/api/knowledge", json={"title": "Handbook", "text": text})
        assert response.status_code == 202, response.text
        doc_id: str = response.json()["id"]
        deadline = time.monotonic() + WAIT_S
        while (now := _status(http, doc_id))["passages_done"] < KILL_AFTER:
            assert time.monotonic() < deadline, f"{KILL_AFTER} passages not stored: {now}"
            time.sleep(0.02)
        assert http.get("/healthz").status_code == 200  # answering while it indexes
        server.process.send_signal(stop)
    assert now["status"] == "indexing" and now["passages_done"] < PASSAGES, (
        f"the document was indexed before the server could be stopped: {now}"
    )
    server.process.wait(timeout=60)
    return doc_id


def _until_ready(server: ServeProcess, key: str, doc_id: str, stored: int) -> dict[str, Any]:
    """The status once ready; progress never below ``stored`` (it carries on)."""
    headers = {"Authorization": f"Bearer {key}"}
    with httpx.Client(base_url=server.url, headers=headers, timeout=60) as http:
        deadline = time.monotonic() + WAIT_S
        while (now := _status(http, doc_id))["status"] == "indexing":
            assert now["passages_done"] >= stored, (now, stored)
            assert time.monotonic() < deadline, (
                f"not resumed to ready within {WAIT_S:.0f} s: {now}\n{server.tail()}"
            )
            time.sleep(0.1)
        return now


def _check_whole(server: ServeProcess, key: str, doc_id: str, text: str) -> None:
    headers = {"Authorization": f"Bearer {key}"}
    with httpx.Client(base_url=server.url, headers=headers, timeout=60) as http:
        assert http.get(f"/api/knowledge/{doc_id}").json()["text"] == text
        found = http.post("/api/knowledge/search", json={"query": "p1319 heron", "limit": 1})
        assert found.json()["results"][0]["passage"].startswith("p1319 ")


def test_a_document_resumes_after_kill_9_and_after_sigterm(tmp_path: Path):
    db, log = tmp_path / "kb.db", tmp_path / "server.log"
    records = open_records(f"sqlite:///{db}")
    key = ApiKeys(records).create(tenant="crash")[0]
    records.close()
    text = prose(PASSAGES, word="heron")

    with _serving(db, log) as server:
        killed = _add_and_stop_midway(server, key, text, signal.SIGKILL)
    records = open_records(f"sqlite:///{db}")
    stored = records.count("kb/crash/chunks")
    [doc] = records.get("kb/crash/docs", [killed])
    records.close()
    assert stored == doc.metadata["done"] and 0 < stored < PASSAGES, doc.metadata
    assert doc.metadata["lease_until"] and doc.metadata["worker"]  # the dead server's lease

    with _serving(db, log) as server:
        ready = _until_ready(server, key, killed, stored)
        assert ready["status"] == "ready" and ready["passages_done"] == PASSAGES, ready
        _check_whole(server, key, killed, text)
        stopped = _add_and_stop_midway(server, key, text, signal.SIGTERM)
    records = open_records(f"sqlite:///{db}")
    [doc] = records.get("kb/crash/docs", [stopped])
    handed = doc.metadata["done"]
    assert isinstance(handed, int) and 0 < handed < PASSAGES, doc.metadata
    assert doc.metadata["status"] == "indexing"
    assert doc.metadata["lease_until"] == 0.0 and doc.metadata["worker"] is None  # handed back
    records.close()

    with _serving(db, log) as server:
        ready = _until_ready(server, key, stopped, handed)
        assert ready["status"] == "ready" and ready["passages_done"] == PASSAGES, ready
        _check_whole(server, key, stopped, text)

    records = open_records(f"sqlite:///{db}")
    chunks = records.list("kb/crash/chunks", limit=10_000)
    passages = split_passages(text)
    for doc_id in (killed, stopped):  # each passage exactly once, under its own number
        stored_passages = {c.id: c.metadata["passage"] for c in chunks if c.id.startswith(doc_id)}
        assert stored_passages == {f"{doc_id}:{i}": p for i, p in enumerate(passages)}
    assert len(chunks) == 2 * PASSAGES and records.count("kb/indexing") == 0
    records.close()
