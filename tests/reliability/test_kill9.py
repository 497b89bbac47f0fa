"""``kill -9`` of a real ``memstack serve`` on a SQLite file during concurrent writes.

Each cycle: writers store memories (and delete some of their own) as fast as the server
answers; once ``STORES_PER_CYCLE`` stores of the cycle are acknowledged the server is
killed with SIGKILL, the other writers' requests still in flight; it is started again on
the same file. How much gets written is a count, not a duration: every machine, fast or
slow, runs the same test.

The server caps each agent's long-term memories at ``LTM_CAP`` (``MEMSTACK_LTM_MAX_ENTRIES``),
far below what the writers store, so the cap evicts in every cycle. What the API promises
for a memory the cap evicted (``MemoryService``): ``GET /api/memories/{id}`` answers 404,
the listing and search (current versions) leave it out, and
``GET /api/memories/{id}/history`` still has it, its last version closed with
``closed_reason="evicted"`` and the value acknowledged; ``DELETE`` erases it, history and
all.

So after each restart every acknowledged, undeleted write must be either current
(gettable and listed with its acknowledged value) or evicted (404, not listed, in its
history as above); ``lost`` counts those that are neither. Every acknowledged delete must
stay deleted (404, no history, not listed), every listed memory must be a whole one:
gettable, and after the last cycle updatable and deletable, and every evicted one
erasable. Writes and deletes in flight at the kill may land or not; nothing else may. The
figures are printed; lost, resurrected, ghosts, not_erased and over_cap must all be 0.

The cap keeps ``LTM_CAP * KEPT_VERSIONS`` closed records per agent and deletes the earliest
beyond that; no agent is sent that many stores here, so no evicted memory may lack its
history (``HISTORY_BOUND``, checked every cycle).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from memstack.service.api_keys import ApiKeys
from memstack.storage.versions import KEPT_VERSIONS
from memstack.wiring import open_records
from tests.servers import serve_env, serving_memstack

CYCLES = 3
WRITERS = 6  # threads; each one writes to every agent in turn
AGENTS = 6
LTM_CAP = 10  # the server's MEMSTACK_LTM_MAX_ENTRIES: current memories kept per agent
STORES_PER_CYCLE = 150  # acknowledged stores, then SIGKILL with requests in flight
SEARCHED = 15  # current memories that search must find, evicted ones it must not, per cycle
WAIT_S = 180  # a safety bound on one cycle's writes, not a speed requirement
HISTORY_BOUND = LTM_CAP * KEPT_VERSIONS
"""The closed records the cap keeps per agent (``LongTermTier.upsert``: ``keep_closed``);
beyond it the earliest evicted would be deleted, history and all. The test stays below
it (checked before each check), so every evicted memory must still have its history."""


@dataclass
class Ledger:
    """What the server acknowledged: id -> value stored, and ids deleted."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    stored: dict[str, tuple[str, str]] = field(default_factory=dict)  # id -> (agent, value)
    deleted: set[str] = field(default_factory=set)
    deleting: set[str] = field(default_factory=set)  # sent, no answer: either state is right
    sent: Counter[str] = field(default_factory=Counter)  # agent -> stores sent, ever
    failed_requests: int = 0
    cycle_stores: int = 0  # stores acknowledged in this cycle
    this_cycle: set[str] = field(default_factory=set)  # their ids
    in_flight: int = 0  # requests sent and not answered
    in_flight_at_kill: int = 0


@dataclass(frozen=True)
class Server:
    url: str
    headers: dict[str, str]
    process: subprocess.Popen[bytes]
    log: Path


@contextmanager
def _serving(db: Path, key: str, log: Path) -> Iterator[Server]:
    env = serve_env(MEMSTACK_LTM_MAX_ENTRIES=str(LTM_CAP))  # wins over LTM_MAX_ENTRIES, .env
    with serving_memstack(["--db", str(db)], env=env, log=log, kill=True) as served:
        headers = {"Authorization": f"Bearer {key}"}
        yield Server(url=served.url, headers=headers, process=served.process, log=log)


def _writer(
    server: Server, writer: int, agents: list[str], ledger: Ledger, killed: threading.Event
) -> None:
    """Store memories round the agents (so each agent gets its share whatever the thread
    scheduling), every fifth request deleting one of this writer's own: its oldest (by
    now evicted, mostly) or its newest (current). The store that brings the cycle's
    acknowledged stores to ``STORES_PER_CYCLE`` kills the server, the other writers'
    requests in flight."""
    with httpx.Client(base_url=server.url, headers=server.headers, timeout=30) as http:
        mine: list[str] = []
        n = 0
        while not killed.is_set():
            n += 1
            agent = agents[(writer + n) % len(agents)]
            try:
                if n % 5 == 0 and mine:
                    gone = mine.pop(0 if n % 10 else -1)
                    with ledger.lock:
                        ledger.deleting.add(gone)
                        ledger.in_flight += 1
                    status = http.delete(f"/api/memories/{gone}").status_code
                    with ledger.lock:
                        ledger.in_flight -= 1
                        if status == 200:
                            ledger.deleting.discard(gone)
                            ledger.deleted.add(gone)
                        else:
                            ledger.failed_requests += 1
                    continue
                value = f"note {n} of writer {writer} token{uuid.uuid4().hex}"
                body = {"agent_id": agent, "key": f"k{uuid.uuid4().hex[:12]}", "value": value}
                with ledger.lock:
                    ledger.sent[agent] += 1
                    ledger.in_flight += 1
                response = http.post("/api/memories", json=body)
            except httpx.TransportError:
                return  # the server is gone: this request was never answered
            with ledger.lock:
                ledger.in_flight -= 1
                if response.status_code != 201:
                    ledger.failed_requests += 1
                    continue
                memory_id = response.json()["id"]
                mine.append(memory_id)
                ledger.stored[memory_id] = (agent, value)
                ledger.cycle_stores += 1
                ledger.this_cycle.add(memory_id)
                if ledger.cycle_stores == STORES_PER_CYCLE:
                    # Under the lock: no request is answered and counted in between.
                    ledger.in_flight_at_kill = ledger.in_flight
                    os.kill(server.process.pid, signal.SIGKILL)  # no shutdown of any kind
                    killed.set()


def _write_then_kill(server: Server, agents: list[str], ledger: Ledger) -> None:
    ledger.cycle_stores = ledger.in_flight = ledger.in_flight_at_kill = 0
    ledger.this_cycle.clear()
    killed = threading.Event()
    threads = [
        threading.Thread(target=_writer, args=(server, w, agents, ledger, killed))
        for w in range(WRITERS)
    ]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + WAIT_S
    while not killed.wait(timeout=0.1):  # the writers kill the server; stop on a dead end
        died = server.process.poll() is not None or not any(t.is_alive() for t in threads)
        if died or time.monotonic() > deadline:
            break
    reached = killed.is_set()
    if not reached:
        server.process.kill()
        killed.set()
    server.process.wait(timeout=30)
    for thread in threads:
        thread.join(timeout=60)
    assert reached, (
        f"only {ledger.cycle_stores} of {STORES_PER_CYCLE} stores were acknowledged within "
        f"{WAIT_S} s (a safety bound, not a speed requirement), or before the server or "
        f"every writer stopped: {server.log.read_text(errors='replace')[-2000:]}"
    )
    assert not any(t.is_alive() for t in threads), "a writer still runs after the kill"


def _listed(http: httpx.Client, agent: str, *, every_version: bool = False) -> dict[str, str]:
    """The agent's memories listed, id -> value: the current ones, or every version (a
    version carries the id of its memory)."""
    found: dict[str, str] = {}
    offset = 0
    while True:
        params: dict[str, Any] = {"agent_id": agent, "limit": 500, "offset": offset}
        if every_version:
            params["include_superseded"] = True
        response = http.get("/api/memories", params=params)
        assert response.status_code == 200, response.text
        page = response.json()
        found.update({m["id"]: m["value"] for m in page["memories"]})
        offset += 500
        if offset >= page["total"]:
            return found


def _evicted(http: httpx.Client, memory_id: str, value: str) -> bool:
    """Whether the memory's history ends in its evicted version, with ``value``."""
    response = http.get(f"/api/memories/{memory_id}/history")
    if response.status_code != 200:
        return False
    last = response.json()["versions"][-1]
    return bool(
        last["id"] == memory_id
        and last["closed_reason"] == "evicted"
        and last["valid_to"] is not None
        and last["value"] == value
    )


def _found_by_search(http: httpx.Client, memory_id: str, agent: str, value: str) -> bool:
    response = http.post(
        "/api/memories/search",
        json={"query": value.rsplit(" ", 1)[1], "agent_id": agent, "mode": "text"},
    )
    assert response.status_code == 200, response.text
    return memory_id in [h["memory"]["id"] for h in response.json()["results"]]


def _check(
    server: Server, agents: list[str], ledger: Ledger, *, last: bool
) -> tuple[dict[str, int], list[str]]:
    """The cycle's figures (what is current, evicted, lost, resurrected or listed but not
    whole), and what the first lost writes look like now."""
    gone = ledger.deleted | ledger.deleting
    live = {i: v for i, v in ledger.stored.items() if i not in gone}
    with httpx.Client(base_url=server.url, headers=server.headers, timeout=30) as http:
        listed: dict[str, str] = {}
        over_cap = 0
        for agent in agents:
            theirs = _listed(http, agent)
            over_cap += max(0, len(theirs) - LTM_CAP)
            listed.update(theirs)
        current: list[str] = []
        evicted: list[str] = []
        lost: list[str] = []
        for i, (_, value) in live.items():
            got = http.get(f"/api/memories/{i}")
            if got.status_code == 200:
                whole = got.json()["value"] == value and listed.get(i) == value
                (current if whole else lost).append(i)
            elif got.status_code == 404 and i not in listed and _evicted(http, i, value):
                evicted.append(i)
            else:
                lost.append(i)
        examples = [
            f"{i} {live[i]}: GET {http.get(f'/api/memories/{i}').text[:300]}, listed "
            f"{listed.get(i)!r}, history {http.get(f'/api/memories/{i}/history').text[:300]}"
            for i in lost[:3]
        ]
        resurrected = 0
        for i in ledger.deleted:  # an erasure: no current version, no history
            resurrected += http.get(f"/api/memories/{i}").status_code != 404
            resurrected += http.get(f"/api/memories/{i}/history").status_code != 404
            resurrected += i in listed
        not_found_by_search = sum(
            not _found_by_search(http, i, *live[i]) for i in current[-SEARCHED:]
        )
        evicted_found_by_search = sum(
            _found_by_search(http, i, *live[i]) for i in evicted[-SEARCHED:]
        )
        ghosts = sum(http.get(f"/api/memories/{i}").status_code != 200 for i in listed)
        not_erased = 0
        if last:
            for i in listed:
                ghosts += (
                    http.put(f"/api/memories/{i}", json={"value": "checked"}).status_code != 200
                )
                ghosts += http.delete(f"/api/memories/{i}").status_code != 200
            ghosts += sum(len(_listed(http, agent)) for agent in agents)  # all gone now
            for agent in agents:  # what remains is evicted: erasable by id, history and all
                for i in _listed(http, agent, every_version=True):
                    not_erased += http.delete(f"/api/memories/{i}").status_code != 200
                    not_erased += http.get(f"/api/memories/{i}/history").status_code != 404
                not_erased += len(_listed(http, agent, every_version=True))
    figures = {
        "acknowledged": len(ledger.stored),
        "deleted": len(ledger.deleted),
        "current": len(current),
        "evicted": len(evicted),
        "evicted_of_this_cycle": len(ledger.this_cycle.intersection(evicted)),
        "lost": len(lost),
        "listed": len(listed),
        "in_flight_at_kill": ledger.in_flight_at_kill,
        "in_flight_landed": len(set(listed) - set(ledger.stored)),
        "in_flight_deletes": len(ledger.deleting),
        "resurrected": resurrected,
        "ghosts": ghosts,
        "not_erased": not_erased,
        "over_cap": over_cap,
        "not_found_by_search": not_found_by_search,
        "evicted_found_by_search": evicted_found_by_search,
        "failed_requests": ledger.failed_requests,
        "most_stores_to_one_agent": max(ledger.sent.values()),
    }
    return figures, examples


def test_no_acknowledged_write_is_lost_to_kill_9(tmp_path: Path):
    db, log = tmp_path / "kill9.db", tmp_path / "server.log"
    records = open_records(f"sqlite:///{db}")
    key = ApiKeys(records).create(tenant="crash")[0]
    records.close()
    agents = [f"writer-{n}" for n in range(AGENTS)]
    ledger = Ledger()
    started = time.monotonic()
    with contextlib.ExitStack() as running:
        server = running.enter_context(_serving(db, key, log))
        for cycle in range(1, CYCLES + 1):
            _write_then_kill(server, agents, ledger)
            running.close()
            # The test's own bound: below it the cap keeps every evicted memory's history
            # (one more closed record for the last cycle's update).
            assert max(ledger.sent.values()) < HISTORY_BOUND, (
                f"an agent was sent {max(ledger.sent.values())} stores; the cap keeps "
                f"{HISTORY_BOUND} closed records per agent: lower STORES_PER_CYCLE"
            )
            server = running.enter_context(_serving(db, key, log))  # the same file again
            figures, lost = _check(server, agents, ledger, last=cycle == CYCLES)
            print(f"\nkill -9 cycle {cycle}: {figures}")
            assert figures["lost"] == 0, f"neither current nor evicted: {lost}"
            assert figures["acknowledged"] >= cycle * STORES_PER_CYCLE
            assert figures["failed_requests"] == 0
            assert figures["resurrected"] == figures["ghosts"] == figures["not_erased"] == 0
            assert figures["over_cap"] == 0
            assert figures["not_found_by_search"] == figures["evicted_found_by_search"] == 0
            # STORES_PER_CYCLE is far above AGENTS * LTM_CAP plus the deletes: the cap
            # evicts stores of every cycle, and some memories stay current.
            assert figures["evicted_of_this_cycle"] > 0 and figures["current"] > 0
    print(
        f"kill -9: {CYCLES} crashes, {len(ledger.stored)} acknowledged writes "
        f"(cap {LTM_CAP} per agent) and {len(ledger.deleted)} deletes, 0 lost, 0 ghosts, "
        f"{time.monotonic() - started:.1f} s"
    )
