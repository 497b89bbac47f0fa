"""The short-term tier on a real Redis Cluster (three masters, Debian's redis-server): each
tenant's keys in its own hash slot, and every context equal to the long-term tier's own
newest entries after a master restarts (empty, or from a snapshot taken before some
writes and erasures), is flushed, or is down while requests go on.

Two services (two server processes) share the cluster and one SQLite file; three tenants,
one on each master. Each case writes, reads (every bucket warm), marks the point the
master of the first tenant goes back to, then updates, adds and deletes a memory and
erases an agent for every tenant; the master goes back; then every context each service
serves is compared with the long-term tier. The figures are printed (``-s``); all must
be 0.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

import pytest
import redis

from memstack import ManualClock
from memstack.embeddings import HashEmbedder
from memstack.service.memories import MemoryService
from memstack.service.principal import Principal
from memstack.service.stm_redis import RedisTier
from memstack.storage import SQLiteRecordStore
from tests.servers import RedisCluster, RedisServer
from tests.service.test_redis_restarts import STEP, STM_MAX, Figures, figures, rows
from tests.service.test_stm import T0

Way = Literal["restart-empty", "restart-rdb", "flushed", "outage"]
AGENTS = ("ann", "bob", "cy")


@pytest.fixture
def cluster(redis_cluster: RedisCluster) -> RedisCluster:
    return redis_cluster


def tenants_on_each_master(cluster: RedisCluster, layout: RedisTier) -> list[str]:
    """One tenant name per master, the first on the first master."""
    found: dict[int, str] = {}
    for n in range(1_000):
        tenant = f"tenant-{n}"
        node = cluster.node_of(layout.keys.tenant(tenant))
        found.setdefault(node.port, tenant)
        if len(found) == len(cluster.nodes):
            break
    return [found[node.port] for node in cluster.nodes]


class Deployment:
    def __init__(self, cluster: RedisCluster, db: Path, prefix: str) -> None:
        self.cluster = cluster
        self.clock = ManualClock(start=T0)
        self.opened: list[tuple[SQLiteRecordStore, RedisTier]] = []
        for _ in range(2):
            records = SQLiteRecordStore(db, clock=self.clock)
            records.setup()
            tier = RedisTier.from_url(cluster.url, max_entries=STM_MAX, cluster=True, prefix=prefix)
            self.opened.append((records, tier))
        self.services = [
            MemoryService(records=r, embedder=HashEmbedder(), short_term=t, clock=self.clock)
            for r, t in self.opened
        ]
        self.tenants = tenants_on_each_master(cluster, self.opened[0][1])

    def close(self) -> None:
        for records, tier in self.opened:
            tier.close()
            records.close()

    async def write(self, tenant: str, agent: str, key: str, value: str, via: int = 0) -> None:
        self.clock.advance(STEP)
        await self.services[via].store(
            Principal(tenant=tenant), agent_id=agent, key=key, value=value
        )

    async def read_all(self) -> None:
        for service in self.services:
            for tenant in self.tenants:
                for agent in AGENTS:
                    await service.context(Principal(tenant=tenant), agent_id=agent)

    async def before_the_mark(self) -> None:
        for tenant in self.tenants:
            for i in range(7):  # more than STM_MAX
                await self.write(tenant, "ann", f"k{i}", f"ann {i}")
            for agent in ("bob", "cy"):
                for i in range(3):
                    await self.write(tenant, agent, f"k{i}", f"{agent} {i}", via=1)
        await self.read_all()

    async def after_the_mark(self) -> None:
        a, b = self.services
        for tenant in self.tenants:
            who = Principal(tenant=tenant)
            await self.write(tenant, "ann", "k4", "ann 4, updated")  # stale
            await self.write(tenant, "ann", "k7", "ann 7", via=1)  # missing
            bob = await a.list(who, agent_id="bob", key="k1")
            await b.delete(who, bob.memories[0].id)  # resurrected
            assert await a.delete_many(who, agent_id="cy") == 3  # an agent erased
        await self.read_all()

    async def check(self) -> tuple[Figures, list[str]]:
        total = Figures(served=0, stale=0, resurrected=0, missing=0)
        wrong: list[str] = []
        ltm = self.services[0].long_term
        for name, service in reversed(list(zip("ab", self.services, strict=True))):
            for tenant in self.tenants:
                held = {m.id for b in ltm.buckets(tenant) for m in ltm.list(tenant, b, limit=500)}
                for agent in AGENTS:
                    context = await service.context(Principal(tenant=tenant), agent_id=agent)
                    truth = ltm.list(tenant, agent, limit=STM_MAX, order="updated_desc")
                    total += figures(rows(context), rows(truth), held)
                    if rows(context) != rows(truth):
                        wrong.append(f"{name}/{tenant}/{agent}: {rows(context)}")
        return total, wrong


def node_keys(node: RedisServer, prefix: str) -> list[str]:
    with redis.Redis(host="127.0.0.1", port=node.port, decode_responses=True) as client:
        return list(client.scan_iter(match=f"{prefix}:*"))


@pytest.fixture
def deployment(
    cluster: RedisCluster, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[Deployment]:
    prefix = f"memstack:test:{uuid.uuid4().hex[:12]}"
    d = Deployment(cluster, tmp_path / "ltm.db", prefix)
    yield d
    d.close()


async def test_each_tenant_lives_on_its_own_master(deployment: Deployment) -> None:
    d = deployment
    await d.before_the_mark()
    prefix = d.opened[0][1].keys.prefix
    for node, tenant in zip(d.cluster.nodes, d.tenants, strict=True):
        keys = node_keys(node, prefix)
        assert keys and all(f"{{{tenant}}}" in key for key in keys), (tenant, keys)
    total, wrong = await d.check()
    assert (total.errors(), wrong) == ((0, 0, 0), [])
    assert total.served > 0


@pytest.mark.parametrize("way", ["restart-empty", "restart-rdb", "flushed", "outage"])
async def test_every_context_equals_the_long_term_tier_after_a_master_goes_back(
    deployment: Deployment, way: Way, tmp_path: Path
) -> None:
    d = deployment
    node = d.cluster.nodes[0]
    await d.before_the_mark()
    snapshot = node.save_rdb(tmp_path / "mark.rdb") if way == "restart-rdb" else None
    await d.after_the_mark()
    if way == "flushed":
        with redis.Redis(host="127.0.0.1", port=node.port) as client:
            client.flushall()
    elif way == "outage":
        node.stop()
        a = d.services[0]
        who = Principal(tenant=d.tenants[0])
        await a.context(who, agent_id="ann")  # served from the long-term tier
        assert await a.delete_many(who, agent_id="bob") == 2  # erased while it is down
        node.start()
    else:
        node.restart(rdb=snapshot)
    d.cluster.wait_ok()
    total, wrong = await d.check()
    print(
        f"\nredis cluster master {way}: {total.served} served, {total.stale} stale, "
        f"{total.resurrected} resurrected, {total.missing} missing"
    )
    assert (total.errors(), wrong) == ((0, 0, 0), [])
