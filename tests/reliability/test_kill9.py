"""``kill -9`` of a real ``memstack serve`` on a SQLite file during concurrent writes.

Each cycle: writers store memories (and delete some of their own) as fast as the server
answers; the server is killed with SIGKILL mid-stream; it is started again on the same
file. Then every acknowledged write must be there with its acknowledged value (by id,
in the listing and by search), every acknowledged delete must stay deleted, and every
listed memory must be a whole one: gettable, and after the last cycle updatable and
deletable. Writes in flight at the kill may land or not; nothing else may. The figures
are printed; lost, resurrected and ghost must all be 0.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from memstack.server.services import open_records
from memstack.service.api_keys import ApiKeys
from tests.servers import free_port

CYCLES = 3
WRITERS = 6
WRITE_FOR_S = 1.0  # then SIGKILL, mid-stream
SEARCHED = 15  # acknowledged writes looked up by search per cycle


@dataclass
class Ledger:
    """What the server acknowledged: id -> value stored, and ids deleted."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    stored: dict[str, tuple[str, str]] = field(default_factory=dict)  # id -> (agent, value)
    deleted: set[str] = field(default_factory=set)
    deleting: set[str] = field(default_factory=set)  # sent, no answer: either state is right
    failed_requests: int = 0


@dataclass(frozen=True)
class Server:
    url: str
    headers: dict[str, str]
    process: subprocess.Popen[bytes]


@contextmanager
def _serving(db: Path, key: str, log: Path) -> Iterator[Server]:
    port = free_port()
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("MEMSTACK_POSTGRES_URL", "MEMSTACK_REDIS_URL", "MEMSTACK_WORKERS")
    }
    env["MEMSTACK_MEMORY_EMBEDDING_PROVIDER"] = "hash"
    command = [sys.executable, "-m", "memstack", "serve", "--db", str(db), "--port", str(port)]
    with log.open("ab") as out:
        process = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, log.read_text(errors="replace")[-2000:]
            assert time.monotonic() < deadline, "the server did not start within 60 s"
            try:
                if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.05)
        yield Server(url=url, headers={"Authorization": f"Bearer {key}"}, process=process)
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=30)


def _writer(server: Server, agent: str, ledger: Ledger, stop: threading.Event) -> None:
    with httpx.Client(base_url=server.url, headers=server.headers, timeout=10) as http:
        mine: list[str] = []
        n = 0
        while not stop.is_set():
            n += 1
            value = f"note {n} of {agent} token{uuid.uuid4().hex}"
            body = {"agent_id": agent, "key": f"k{uuid.uuid4().hex[:12]}", "value": value}
            try:
                if n % 5 == 0 and mine:
                    gone = mine.pop(0)
                    with ledger.lock:
                        ledger.deleting.add(gone)
                    if http.delete(f"/api/memories/{gone}").status_code == 200:
                        with ledger.lock:
                            ledger.deleting.discard(gone)
                            ledger.deleted.add(gone)
                    continue
                response = http.post("/api/memories", json=body)
            except httpx.TransportError:
                return  # the server is gone: this write was never acknowledged
            if response.status_code != 201:
                with ledger.lock:
                    ledger.failed_requests += 1
                continue
            memory_id = response.json()["id"]
            mine.append(memory_id)
            with ledger.lock:
                ledger.stored[memory_id] = (agent, value)


def _write_then_kill(server: Server, agents: list[str], ledger: Ledger) -> None:
    stop = threading.Event()
    threads = [threading.Thread(target=_writer, args=(server, a, ledger, stop)) for a in agents]
    for thread in threads:
        thread.start()
    time.sleep(WRITE_FOR_S)
    os.kill(server.process.pid, signal.SIGKILL)  # mid-stream, no shutdown of any kind
    server.process.wait(timeout=30)
    stop.set()
    for thread in threads:
        thread.join(timeout=30)


def _listed(http: httpx.Client, agent: str) -> dict[str, str]:
    found: dict[str, str] = {}
    offset = 0
    while True:
        page = http.get(
            "/api/memories", params={"agent_id": agent, "limit": 500, "offset": offset}
        ).json()
        found.update({m["id"]: m["value"] for m in page["memories"]})
        offset += 500
        if offset >= page["total"]:
            return found


def _check(server: Server, agents: list[str], ledger: Ledger, *, last: bool) -> dict[str, int]:
    """The cycle's figures: what was lost, resurrected or listed but not whole."""
    gone = ledger.deleted | ledger.deleting
    live = {i: v for i, v in ledger.stored.items() if i not in gone}
    with httpx.Client(base_url=server.url, headers=server.headers, timeout=30) as http:
        listed: dict[str, str] = {}
        for agent in agents:
            listed.update(_listed(http, agent))
        lost = sum(
            http.get(f"/api/memories/{i}").json().get("value") != value
            for i, (_, value) in live.items()
        )
        lost_from_list = sum(listed.get(i) != value for i, (_, value) in live.items())
        resurrected = sum(http.get(f"/api/memories/{i}").status_code != 404 for i in ledger.deleted)
        resurrected += sum(i in listed for i in ledger.deleted)
        not_found_by_search = 0
        for i, (agent, value) in list(live.items())[-SEARCHED:]:
            hits = http.post(
                "/api/memories/search",
                json={"query": value.rsplit(" ", 1)[1], "agent_id": agent, "mode": "text"},
            ).json()["results"]
            not_found_by_search += i not in [h["memory"]["id"] for h in hits]
        ghosts = sum(http.get(f"/api/memories/{i}").status_code != 200 for i in listed)
        if last:
            for i in listed:
                ghosts += (
                    http.put(f"/api/memories/{i}", json={"value": "checked"}).status_code != 200
                )
                ghosts += http.delete(f"/api/memories/{i}").status_code != 200
            ghosts += sum(len(_listed(http, agent)) for agent in agents)  # all gone now
    return {
        "acknowledged": len(ledger.stored),
        "deleted": len(ledger.deleted),
        "listed": len(listed),
        "in_flight_landed": len(set(listed) - set(live)),
        "in_flight_deletes": len(ledger.deleting),
        "lost": lost + lost_from_list,
        "not_found_by_search": not_found_by_search,
        "resurrected": resurrected,
        "ghosts": ghosts,
        "failed_requests": ledger.failed_requests,
    }


def test_no_acknowledged_write_is_lost_to_kill_9(tmp_path: Path):
    db, log = tmp_path / "kill9.db", tmp_path / "server.log"
    records = open_records(f"sqlite:///{db}")
    key = ApiKeys(records).create(tenant="crash")[0]
    records.close()
    agents = [f"writer-{n}" for n in range(WRITERS)]
    ledger = Ledger()
    started = time.monotonic()
    with contextlib.ExitStack() as running:
        server = running.enter_context(_serving(db, key, log))
        for cycle in range(1, CYCLES + 1):
            _write_then_kill(server, agents, ledger)
            running.close()
            server = running.enter_context(_serving(db, key, log))  # the same file again
            figures = _check(server, agents, ledger, last=cycle == CYCLES)
            print(f"\nkill -9 cycle {cycle}: {figures}")
            assert figures["acknowledged"] > 0 and figures["failed_requests"] == 0
            assert figures["lost"] == figures["resurrected"] == figures["ghosts"] == 0
            assert figures["not_found_by_search"] == 0
    print(
        f"kill -9: {CYCLES} crashes, {len(ledger.stored)} acknowledged writes and "
        f"{len(ledger.deleted)} deletes, 0 lost, 0 ghosts, {time.monotonic() - started:.1f} s"
    )
