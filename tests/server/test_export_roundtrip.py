"""``memstack memories export`` then ``import`` into an empty store then ``export`` again
gives the same lines (issue 30, "nothing cut short"): 10,200 memories with their
histories, through the real CLI commands against real servers over HTTP, on SQLite and
on PostgreSQL.

The source holds 10,000 memories written back by a restore with known chains (closed
versions superseded, evicted in place, evicted then stored anew; TTLs, metadata,
provenances) and 201 written by the service as an agent writes them (updates, a
session, a global key two agents wrote, a capped agent whose oldest the cap evicted).
The export must hold every version of each (checked against the chains seeded and
against ``/history``), and the second export the same lines: in the same order up to
memories created in the same millisecond (the API shows times to the millisecond; the
restored store orders such ties by id, as it orders every tie)."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from click.testing import CliRunner, Result

from memstack._json import JSON
from memstack.cli import main
from memstack.client import MemoryClient
from memstack.clock import SystemClock
from memstack.embeddings import HashEmbedder
from memstack.service.api_keys import ApiKeys
from memstack.service.knowledge import KnowledgeBase
from memstack.service.memories import MemoryService
from memstack.service.principal import Principal
from memstack.service.restore import MAX_RESTORE_MEMORIES, MemoryIn, VersionIn
from memstack.service.stm import InProcessTier
from memstack.service.types import PROVENANCES, memory_id
from memstack.storage import PostgresRecordStore, RecordStore, SQLiteRecordStore
from memstack.transports.schemas import iso
from memstack.wiring import Services
from tests.server.conftest import LiveServer, serve_in_thread

ACME = Principal(tenant="acme")
BULK = 10_000
BASE = 1_760_000_000.0
"""When the bulk memories were created (every time a whole millisecond)."""
DAY = 86_400.0
AHEAD = float(round(time.time() + 30 * DAY))
"""A TTL still ahead while the test runs."""


def _services(records: RecordStore, *, cap: int = 0) -> Services:
    records.setup()
    embedder, clock = HashEmbedder(), SystemClock()
    return Services(
        records=records,
        short_term=InProcessTier(max_entries=20),
        embedder=embedder,
        memories=MemoryService(
            records=records,
            embedder=embedder,
            short_term=InProcessTier(max_entries=20),
            ltm_max_entries=cap,
            clock=clock,
        ),
        knowledge=KnowledgeBase(records=records, embedder=embedder, clock=clock),
        keys=ApiKeys(records, clock=clock),
    )


@pytest.fixture(params=["sqlite", "postgres"])
def stores(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Services, Services]]:
    """A source and an empty target store of one backend, unlimited memories."""
    opened: list[Services] = []
    schemas: list[str] = []
    for name in ("source", "target"):
        records: RecordStore
        if request.param == "sqlite":
            records = SQLiteRecordStore(tmp_path / f"{name}.db")
        else:
            schemas.append(f"t_{uuid.uuid4().hex[:12]}")
            url: str = request.getfixturevalue("postgres_url")
            records = PostgresRecordStore(url, schema=schemas[-1])
        opened.append(_services(records))
    yield opened[0], opened[1]
    for services in opened:
        services.close()
    if schemas:
        with psycopg.connect(request.getfixturevalue("postgres_url"), autocommit=True) as conn:
            for schema in schemas:
                conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


# -- the bulk memories: chains written back by a restore, known to the last field ------


def _bulk_chain(i: int) -> list[VersionIn]:
    """Memory ``i``'s versions, oldest first; three memories share each creation time."""
    c = BASE + (i // 3)
    meta: dict[str, JSON] = {"n": i} if i % 4 == 0 else {}
    provenance = PROVENANCES[i % 4]
    detail = f"model-{i % 3}" if provenance == "extracted" else None
    expires = AHEAD if i % 7 == 0 else None

    def version(n: int, **fields: Any) -> VersionIn:
        return VersionIn(
            value=f"bulk {i} v{n}",
            metadata=meta,
            expires_at=expires,
            provenance=provenance,
            provenance_detail=detail,
            version_id=f"ver_b{i}v{n}",
            **{"created_at": c, "updated_at": c + n * 0.1, "valid_from": c + n * 0.1, **fields},
        )

    def closed(n: int, until: float, reason: str = "superseded", **fields: Any) -> VersionIn:
        return version(n, valid_to=until, superseded_by="-", closed_reason=reason, **fields)

    if i % 50 == 2:  # the cap closed it in place: no current version
        return [version(0, valid_to=c + 0.5, closed_reason="evicted")]
    if i % 50 == 3:  # evicted, then stored anew
        return [
            closed(0, c + 0.5, "evicted"),
            version(1, created_at=c + 1, updated_at=c + 1, valid_from=c + 1),
        ]
    count = 3 if i % 10 == 0 else 2 if i % 10 == 1 else 1
    return [*(closed(n, c + (n + 1) * 0.1) for n in range(count - 1)), version(count - 1)]


def _bulk() -> list[MemoryIn]:
    return [
        MemoryIn(agent_id="bulk-bot", scope="agent", key=f"b{i:05}", versions=_bulk_chain(i))
        for i in range(BULK)
    ]


def _expected_line(memory: MemoryIn, at: int) -> dict[str, Any]:
    """How the export lists the seeded version ``at``: a closed one names the next."""
    version = memory.versions[at]
    mid = memory_id(
        tenant="acme", scope="agent", agent_id="bulk-bot", session_id=None, key=memory.key
    )
    created = version.created_at
    assert created is not None and version.updated_at is not None
    return {
        "id": mid,
        "agent_id": "bulk-bot",
        "scope": "agent",
        "key": memory.key,
        "value": version.value,
        "session_id": None,
        "metadata": version.metadata,
        "expires_at": None if version.expires_at is None else iso(version.expires_at),
        "created_at": iso(created),
        "updated_at": iso(version.updated_at),
        "valid_from": iso(created if version.valid_from is None else version.valid_from),
        "valid_to": None if version.valid_to is None else iso(version.valid_to),
        "superseded_by": None
        if version.superseded_by is None
        else memory.versions[at + 1].version_id,
        "closed_reason": version.closed_reason,
        "version_id": version.version_id,
        "provenance": version.provenance,
        "provenance_detail": version.provenance_detail,
    }


# -- the memories an agent writes, through the service ---------------------------------


async def _written(source: Services) -> list[str]:
    """200 memories as the service writes them; returns their ids."""
    memories = source.memories
    ids = []
    for n in range(180):
        stored = await memories.store(ACME, agent_id="bot", key=f"fact {n}", value=f"fact {n}")
        ids.append(stored.id)
        if n % 3 == 0:
            await memories.store(ACME, agent_id="bot", key=f"fact {n}", value=f"fact {n}, v2")
            await memories.update(ACME, stored.id, value=f"fact {n}, v3", metadata={"v": 3})
    for n in range(10):
        stored = await memories.store(
            ACME, agent_id="bot", key=f"topic {n}", value="tea", scope="session", session_id="s1"
        )
        ids.append(stored.id)
        if n < 3:
            await memories.update(ACME, stored.id, value="coffee", provenance="tool_output")
    motto = await memories.store(ACME, agent_id="bot", key="motto", value="Ship.", scope="global")
    await memories.store(ACME, agent_id="ops", key="motto", value="Ship safely.", scope="global")
    ids.append(motto.id)
    capped = MemoryService(  # the same store, a cap of 5: it evicts the oldest of 9
        records=source.records,
        embedder=source.embedder,
        short_term=InProcessTier(max_entries=20),
        ltm_max_entries=5,
    )
    for n in range(9):
        stored = await capped.store(ACME, agent_id="capped", key=f"c{n}", value=f"c{n}")
        ids.append(stored.id)
    for n in (0, 1):  # evicted, then stored anew: a closed copy beside a current one
        await capped.store(ACME, agent_id="capped", key=f"c{n}", value=f"c{n} again")
    return ids


# -- the test ---------------------------------------------------------------------------


def _cli(server: LiveServer, key: str, *args: str) -> Result:
    env = {"MEMSTACK_URL": server.url, "MEMSTACK_API_KEY": key}
    result = CliRunner().invoke(main, ["memories", *args], env=env)
    assert result.exit_code == 0, result.output
    return result


def _by_memory(lines: list[str]) -> dict[str, list[dict[str, Any]]]:
    """Each memory's exported versions, oldest first."""
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for line in lines:
        version = json.loads(line)
        out[version["id"]].append(version)
    for versions in out.values():
        versions.sort(key=lambda v: (v["valid_from"], v["valid_to"] or "~"))
    return out


def _check_chain(versions: list[dict[str, Any]]) -> None:
    """Every version but the latest was replaced by a newer one of the same memory (its
    superseded_by names the next version), and a superseded one ends when the next
    begins; one version at most is current."""
    *earlier, latest = versions
    for before, after in zip(earlier, versions[1:], strict=True):
        assert before["superseded_by"] == after["version_id"] and before["valid_to"], versions
    assert latest["superseded_by"] is None, versions
    assert [v["valid_to"] is None for v in versions].count(True) <= 1
    for before, after in zip(earlier, versions[1:], strict=True):
        if before["closed_reason"] == "superseded":
            assert before["valid_to"] == after["valid_from"], versions


def test_export_import_export_gives_the_same_lines(
    stores: tuple[Services, Services], tmp_path: Path
) -> None:
    source, target = stores
    bulk = _bulk()
    for at in range(0, BULK, MAX_RESTORE_MEMORIES):
        asyncio.run(source.memories.restore(ACME, bulk[at : at + MAX_RESTORE_MEMORIES]))
    written = asyncio.run(_written(source))
    source_key, target_key = (
        source.keys.create(tenant="acme")[0],
        target.keys.create(tenant="acme")[0],
    )
    servers = [serve_in_thread(source), serve_in_thread(target)]
    try:
        first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
        exported = _cli(servers[0], source_key, "export", "-o", str(first))
        lines = first.read_text(encoding="utf-8").splitlines()
        versions = sum(len(m.versions) for m in bulk) + 180 + 60 * 2 + 10 + 3 + 2 + 9 + 2
        assert f"exported {versions} memory versions" in exported.output
        assert len(lines) == versions
        exported_memories = _by_memory(lines)
        assert len(exported_memories) == BULK + 201

        # Every version of every memory: the chains seeded, and the history of the rest.
        for memory in bulk:
            seeded = [_expected_line(memory, at) for at in range(len(memory.versions))]
            assert exported_memories[seeded[0]["id"]] == seeded
        with MemoryClient(servers[0].url, api_key=source_key) as client:
            for mid in written:
                assert exported_memories[mid] == client.history(mid)["versions"]
        evicted = [
            v for vs in exported_memories.values() for v in vs if v["closed_reason"] == "evicted"
        ]
        # Capped: 4 of 9, then 2 more as 2 evicted ones are stored anew (each keeping its
        # evicted version); bulk: 2 in each 50.
        assert len(evicted) == 6 + BULK // 50 * 2
        # Two agents' global mottos are two memories (spec 004: (agent_id, scope, key)).
        motto = exported_memories[written[190]]
        assert [(v["agent_id"], v["value"]) for v in motto] == [("bot", "Ship.")]

        imported = _cli(servers[1], target_key, "import", str(first), "--json")
        assert json.loads(imported.stdout) == {
            "imported": BULK + 201,
            "versions": versions,
            "skipped": 0,
            "expired": 0,
        }
        _cli(servers[1], target_key, "export", "-o", str(second))
        again = second.read_text(encoding="utf-8").splitlines()

        assert sorted(again) == sorted(lines)  # the same lines, ids and every field
        assert [json.loads(line)["created_at"] for line in again] == [
            json.loads(line)["created_at"] for line in lines
        ]  # in the same order, up to ties within a millisecond
        restored = _by_memory(again)
        assert restored == exported_memories
        for chain in restored.values():
            _check_chain(chain)
        with (
            MemoryClient(servers[0].url, api_key=source_key) as before,
            MemoryClient(servers[1].url, api_key=target_key) as after,
        ):
            sample = [*written[::7], *(v[0]["id"] for v in list(exported_memories.values())[::500])]
            for mid in sample:
                assert after.history(mid) == before.history(mid)
            assert after.list(limit=1)["total"] == before.list(limit=1)["total"]
    finally:
        for server in servers:
            server.server.should_exit = True
            server.thread.join(timeout=10)
