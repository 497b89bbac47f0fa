"""The short-term tier never serves what the long-term tier does not hold, whatever way
Redis restarts: empty, from its AOF (whole, or cut short as a crash cuts it), or from an
RDB snapshot taken before some writes and erasures; with requests failing while it is
down (a read, or erasures), or with none (Redis restarted between two requests: redis-py
reconnects silently).

Two services (two server processes) share a real Redis and one SQLite file, on a clock
that never lets their cached epochs expire. Each case writes, reads (every bucket warm),
marks the point Redis will come back to, then updates, adds, deletes a memory, erases an
agent (``delete_many``) and reads again; Redis restarts; then every context each service
serves is compared with the long-term tier's own newest entries. The figures are printed
(``-s``); all must be 0.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import httpx
import pytest
import redis

from memstack import ManualClock
from memstack.embeddings import HashEmbedder
from memstack.errors import StoreUnavailable
from memstack.service.memories import MemoryService
from memstack.service.principal import Principal
from memstack.service.stm_redis import RedisTier
from memstack.service.types import GLOBAL_BUCKET, Memory, Scope
from memstack.storage import SQLiteRecordStore
from memstack.transports.app import create_app
from memstack.wiring import open_services
from tests.servers import RedisServer, running_redis
from tests.service.test_stm import T0, mem

ACME = Principal(tenant="acme")
STM_MAX = 5
AGENTS = ("ann", "bob", "cy", "dee")
Kind = Literal["empty", "aof", "aof-cut", "rdb", "reload", "failover"]
Between = Literal["nothing", "a-read", "erasures"]
STEP = 0.01  # clock seconds per write: a whole case stays inside one epoch_ttl


@dataclass(frozen=True, kw_only=True)
class Figures:
    served: int
    stale: int
    resurrected: int
    missing: int

    def __add__(self, other: Figures) -> Figures:
        return Figures(
            served=self.served + other.served,
            stale=self.stale + other.stale,
            resurrected=self.resurrected + other.resurrected,
            missing=self.missing + other.missing,
        )

    def errors(self) -> tuple[int, int, int]:
        return self.stale, self.resurrected, self.missing


Row = tuple[str, object]  # a memory's id, and its value and update time


def figures(served: list[Row], truth: list[Row], held: set[str]) -> Figures:
    """``served`` against ``truth``: an id served that the long-term tier no longer holds
    is resurrected; one served with another value or time, or no longer among the newest,
    is stale; one of the truth not served is missing."""
    got, want = dict(served), dict(truth)
    extra = got.keys() - want.keys()
    return Figures(
        served=len(served),
        stale=sum(got[i] != want[i] for i in got.keys() & want.keys()) + len(extra & held),
        resurrected=len(extra - held),
        missing=len(want.keys() - got.keys()),
    )


# -- two services over one Redis and one SQLite file -------------------------------------


@dataclass(kw_only=True)
class Deployment:
    kind: Kind
    redis: RedisServer
    clock: ManualClock
    services: list[MemoryService]

    @property
    def a(self) -> MemoryService:
        return self.services[0]

    async def write(self, agent: str, key: str, value: str, *, via: int = 0) -> Memory:
        self.clock.advance(STEP)
        scope: Scope = "global" if agent == GLOBAL_BUCKET else "agent"
        owner = "ann" if agent == GLOBAL_BUCKET else agent
        return await self.services[via].store(
            ACME, agent_id=owner, key=key, value=value, scope=scope
        )

    async def read_all(self) -> None:
        for service in self.services:
            for agent in AGENTS:
                await service.context(ACME, agent_id=agent)

    async def check(self) -> tuple[Figures, list[str]]:
        """Every agent's context from each service, b first (b never saw Redis fail),
        against the truth: the figures, and each context that differs."""
        total = Figures(served=0, stale=0, resurrected=0, missing=0)
        wrong: list[str] = []
        for name, service in reversed(list(zip("ab", self.services, strict=True))):
            for agent in AGENTS:
                served = rows(await service.context(ACME, agent_id=agent))
                truth = rows(self.truth(agent))
                total += figures(served, truth, self.held())
                if served != truth:
                    wrong.append(f"{name}/{agent}: {served}")
        return total, wrong

    def truth(self, agent: str) -> list[Memory]:
        """The context the long-term tier alone gives (agent scope only here)."""
        ltm = self.a.long_term
        own = ltm.list("acme", agent, limit=STM_MAX, order="updated_desc")
        shared = ltm.list("acme", GLOBAL_BUCKET, limit=STM_MAX, order="updated_desc")
        return own + shared

    def redis_run_id(self) -> str:
        with redis.Redis.from_url(self.redis.url) as client:
            return str(client.info("server")["run_id"])

    def held(self) -> set[str]:
        ltm = self.a.long_term
        return {m.id for b in ltm.buckets("acme") for m in ltm.list("acme", b, limit=500)}


def rows(memories: list[Memory]) -> list[Row]:
    return [(m.id, (m.value, m.updated_at)) for m in memories]


@pytest.fixture
def deployment(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Deployment]:
    kind: Kind = request.param
    clock = ManualClock(start=T0)
    with running_redis(aof=kind.startswith("aof")) as redis:
        opened: list[tuple[SQLiteRecordStore, RedisTier]] = []
        for _ in range(2):
            records = SQLiteRecordStore(tmp_path / "ltm.db", clock=clock)
            records.setup()
            opened.append((records, RedisTier.from_url(redis.url, max_entries=STM_MAX)))
        services = [
            MemoryService(records=r, embedder=HashEmbedder(), short_term=t, clock=clock)
            for r, t in opened
        ]
        yield Deployment(kind=kind, redis=redis, clock=clock, services=services)
        for records, tier in opened:
            tier.close()
            records.close()


async def before_the_mark(d: Deployment) -> None:
    for i in range(8):
        await d.write("ann", f"k{i}", f"ann {i}")  # more than STM_MAX
    for agent in ("bob", "cy", "dee"):
        for i in range(3):
            await d.write(agent, f"k{i}", f"{agent} {i}", via=1)
    for i in range(2):
        await d.write(GLOBAL_BUCKET, f"g{i}", f"global {i}")
    await d.read_all()  # every bucket filled: complete at the current epoch


async def after_the_mark(d: Deployment) -> None:
    """Writes the mark does not hold: each would be stale, resurrected or missing if a
    bucket restored to the mark were served."""
    await d.write("ann", "k5", "ann 5, updated")  # stale
    await d.write("ann", "k8", "ann 8")  # missing, and k3 leaves the window
    await d.write("bob", "k0", "bob 0, updated", via=1)
    dee = await d.a.list(ACME, agent_id="dee", key="k1")
    await d.services[1].delete(ACME, dee.memories[0].id)  # resurrected
    assert await d.a.delete_many(ACME, agent_id="cy") == 3  # an agent erased
    shared = await d.a.list(ACME, scope="global", key="g0")
    await d.a.delete(ACME, shared.memories[0].id)
    await d.write(GLOBAL_BUCKET, "g2", "global 2", via=1)
    await d.read_all()


KINDS: list[Kind] = ["empty", "aof", "aof-cut", "rdb"]
IN_PLACE: list[Kind] = ["reload", "failover"]


async def while_down(d: Deployment, between: Between) -> None:
    """What service a does while Redis is down (b does nothing)."""
    if between == "a-read":
        await d.a.context(ACME, agent_id="ann")
    elif between == "erasures":
        assert await d.a.delete_many(ACME, agent_id="bob") == 3
        ann = await d.a.list(ACME, agent_id="ann", key="k7")
        await d.a.delete(ACME, ann.memories[0].id)


@pytest.mark.parametrize("deployment", KINDS, indirect=True)
@pytest.mark.parametrize("between", ["nothing", "a-read", "erasures"])
async def test_every_context_equals_the_long_term_tier_after_redis_restarts(
    deployment: Deployment, between: Between, tmp_path: Path
) -> None:
    d = deployment
    await before_the_mark(d)
    restore: dict[str, Any] = {}
    if d.kind == "rdb":
        restore["rdb"] = d.redis.save_rdb(tmp_path / "before.rdb")
    elif d.kind == "aof-cut":  # a crash lost everything after the mark, and cut a command
        restore["aof_bytes"] = d.redis.aof_file.stat().st_size + 7
    await after_the_mark(d)
    if between == "nothing":
        d.redis.restart(**restore)  # between two requests: no one sees it fail
    else:
        d.redis.stop()
        await while_down(d, between)  # a alone sees Redis fail
        d.redis.start(**restore)
    total, wrong = await d.check()
    print(
        f"\nredis restarted {d.kind}, {between} between: "
        f"{total.served} served, {total.stale} stale, {total.resurrected} resurrected, "
        f"{total.missing} missing"
    )
    assert (total.errors(), wrong) == ((0, 0, 0), [])


# -- Redis back in time without a restart -------------------------------------------------


@contextmanager
def going_back(d: Deployment, tmp_path: Path) -> Iterator[Callable[[], None]]:
    """Mark the point Redis will go back to; yields what takes it back there in place,
    the server's process (and ``run_id``) unchanged: ``reload`` loads a snapshot taken at
    the mark (``DEBUG RELOAD``); ``failover`` has a replica that stopped replicating at
    the mark hand its data back to the server (a failover to a lagging replica behind
    the server's address)."""
    if d.kind == "reload":
        snapshot = d.redis.save_rdb(tmp_path / "mark.rdb")
        yield lambda: d.redis.reload(snapshot)
        return
    with running_redis() as replica:
        replica.replicate(d.redis)
        replica.promote()  # lags from here on

        def fail_over() -> None:
            d.redis.replicate(replica)
            d.redis.promote()

        yield fail_over


@pytest.mark.parametrize("deployment", IN_PLACE, indirect=True)
async def test_every_context_equals_the_long_term_tier_after_redis_goes_back_in_place(
    deployment: Deployment, tmp_path: Path
) -> None:
    d = deployment
    await before_the_mark(d)
    with going_back(d, tmp_path) as go_back:
        await after_the_mark(d)
        run_id = d.redis_run_id()
        go_back()
        assert d.redis_run_id() == run_id  # the same server: no restart to see
    total, wrong = await d.check()
    print(
        f"\nredis went back in place ({d.kind}): {total.served} served, {total.stale} stale, "
        f"{total.resurrected} resurrected, {total.missing} missing"
    )
    assert (total.errors(), wrong) == ((0, 0, 0), [])


def test_a_tier_that_finds_the_data_older_tells_every_other_tier(tmp_path: Path) -> None:
    """Tier a wrote after the snapshot and finds the reloaded data older: it gives the
    tenant a new generation, which tier b (that saw nothing newer) is told of at its next
    call; each reports once, then both read on. Another tenant is judged on its own."""
    with running_redis() as redis_server:
        a, b = (RedisTier.from_url(redis_server.url, max_entries=STM_MAX) for _ in range(2))
        try:
            for tier in (a, b):
                tier.put(mem("kept"))
                tier.read("acme", "agent-1", now=T0)
            b.put(mem("other tenant", tenant="zeta"))
            snapshot = redis_server.save_rdb(tmp_path / "mark.rdb")
            a.put(mem("lost"))
            a.remove("acme", "agent-1", [mem("kept").id])
            redis_server.reload(snapshot)
            with pytest.raises(StoreUnavailable, match="another dataset"):
                a.read("acme", "agent-1", now=T0)
            with pytest.raises(StoreUnavailable, match="another dataset"):
                b.read("acme", "agent-1", now=T0)
            for tier in (a, b):
                assert tier.read("acme", "agent-1", now=T0).epoch is None
            assert [m.id for m in b.recent("zeta", "agent-1", now=T0)] == [
                mem("other tenant", tenant="zeta").id
            ]
        finally:
            a.close()
            b.close()


def test_a_tenant_cleared_after_the_snapshot_is_reported_when_it_comes_back(
    tmp_path: Path,
) -> None:
    with running_redis() as redis_server:
        tier = RedisTier.from_url(redis_server.url, max_entries=STM_MAX)
        try:
            tier.put(mem("erased"))
            snapshot = redis_server.save_rdb(tmp_path / "mark.rdb")
            assert tier.clear_tenant("acme") == 1
            redis_server.reload(snapshot)
            with pytest.raises(StoreUnavailable, match="another dataset"):
                tier.read("acme", "agent-1", now=T0)
        finally:
            tier.close()


# -- the tier alone: a fill read before a restart never lands after it --------------------


@pytest.mark.parametrize("aof", [True, False], ids=["from-aof", "empty"])
def test_a_fill_that_read_the_bucket_before_a_restart_is_refused_after_it(aof: bool) -> None:
    """From an AOF the bucket's state and version counter come back as they were read; an
    empty Redis starts its counter again at the value read from a bucket that had none."""
    with running_redis(aof=aof) as redis:
        tier = RedisTier.from_url(redis.url, max_entries=STM_MAX)
        try:
            if aof:
                assert tier.replace("acme", "agent-1", [mem("a")], epoch="e1")
            read = tier.read("acme", "agent-1", now=T0)
            if not aof:
                tier.put(mem("lost"))  # acknowledged, then lost with the restart
            redis.restart()
            if not aof:  # the tenant's generation went with the data: reported once
                with pytest.raises(StoreUnavailable, match="another dataset"):
                    tier.read("acme", "agent-1", now=T0)
            after = tier.read("acme", "agent-1", now=T0)
            assert after.epoch is None  # a restarted Redis holds only cold buckets
            old, new = [mem("old")], [mem("b")]
            assert not tier.replace("acme", "agent-1", old, epoch="e1", if_version=read.version)
            assert tier.replace("acme", "agent-1", new, epoch="e1", if_version=after.version)
            assert tier.read("acme", "agent-1", now=T0).epoch == "e1"
        finally:
            tier.close()


# -- through the REST app ----------------------------------------------------------------


async def test_rest_context_and_listing_after_a_restart_from_an_old_snapshot(
    tmp_path: Path,
) -> None:
    clock = ManualClock(start=T0)
    with running_redis() as redis:
        services = open_services(
            store_url=f"sqlite:///{tmp_path / 'rest.db'}",
            redis_url=redis.url,
            embedder=HashEmbedder(),
            stm_max_entries=STM_MAX,
            clock=clock,
        )
        try:
            key, _ = services.keys.create(tenant="acme")
            transport = httpx.ASGITransport(app=create_app(services))
            async with httpx.AsyncClient(
                transport=transport,
                base_url="http://memstack.test",
                headers={"Authorization": f"Bearer {key}"},
            ) as api:
                await rest_case(api, redis, clock, tmp_path)
        finally:
            services.close()


async def rest_case(
    api: httpx.AsyncClient, redis: RedisServer, clock: ManualClock, tmp_path: Path
) -> None:
    async def store(agent: str, key: str, value: str) -> str:
        clock.advance(STEP)
        body = {"agent_id": agent, "key": key, "value": value}
        created = await api.post("/api/memories", json=body)
        assert created.status_code == 201, created.text
        return str(created.json()["id"])

    ids = {
        f"{agent}{i}": await store(agent, f"k{i}", f"{agent} {i}")
        for agent in AGENTS
        for i in range(7)
    }
    for agent in AGENTS:
        assert (await api.get("/api/context", params={"agent_id": agent})).status_code == 200
    snapshot = redis.save_rdb(tmp_path / "before.rdb")
    clock.advance(STEP)
    updated = await api.put(f"/api/memories/{ids['ann6']}", json={"value": "ann 6, updated"})
    assert updated.status_code == 200, updated.text
    await store("ann", "k7", "ann 7")
    assert (await api.delete(f"/api/memories/{ids['dee6']}")).status_code == 200
    erased = await api.delete("/api/memories", params={"agent_id": "cy"})
    assert erased.json() == {"deleted": 7}
    for agent in AGENTS:
        await api.get("/api/context", params={"agent_id": agent})
    redis.restart(rdb=snapshot)  # between two requests
    listed = {
        agent: (await api.get("/api/memories", params={"agent_id": agent})).json()["memories"]
        for agent in AGENTS
    }
    held = {m["id"] for found in listed.values() for m in found}
    total, wrong = Figures(served=0, stale=0, resurrected=0, missing=0), []
    for agent in AGENTS:
        newest = sorted(listed[agent], key=lambda m: m["updated_at"], reverse=True)
        context = (await api.get("/api/context", params={"agent_id": agent})).json()
        served, truth = json_rows(context["memories"]), json_rows(newest[:STM_MAX])
        total += figures(served, truth, held)
        if served != truth:
            wrong.append(f"{agent}: {served}")
    print(
        f"\nREST, redis restarted from an old RDB snapshot: {total.served} served, "
        f"{total.stale} stale, {total.resurrected} resurrected, {total.missing} missing"
    )
    assert listed["cy"] == []
    assert (total.errors(), wrong) == ((0, 0, 0), [])


def json_rows(memories: list[dict[str, Any]]) -> list[Row]:
    return [(m["id"], (m["value"], m["updated_at"])) for m in memories]
