"""``memstack serve --redis-cluster`` (and ``MEMSTACK_REDIS_CLUSTER=1``): a real server
whose short-term tier is a real Redis Cluster named by one node. Its memories land on the
master of their tenant's slot; with that master down it answers from the long-term tier
(never a 500); back up, it serves what the long-term tier holds."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
import redis
from click.testing import CliRunner

from memstack.cli import main
from tests.servers import RedisCluster, serve_env, serving_memstack


def _tenant_keys(cluster: RedisCluster, tenant: str) -> dict[int, int]:
    """How many keys of ``tenant``'s short-term tier each node holds, by port."""
    found = {}
    for node in cluster.nodes:
        with redis.Redis(host="127.0.0.1", port=node.port) as client:
            found[node.port] = len(list(client.scan_iter(match=f"memstack:stm:{{{tenant}}}:*")))
    return found


@pytest.mark.parametrize("how", ["flag", "env"])
def test_serve_keeps_its_short_term_tier_on_a_redis_cluster(
    redis_cluster: RedisCluster, tmp_path: Path, how: str
) -> None:
    db = tmp_path / "ltm.db"
    tenant = next(  # not on the node the URL names: only a cluster client reaches it
        t
        for n in range(100)
        if redis_cluster.node_of(f"memstack:stm:{{{(t := f'cluster-{how}-{n}')}}}:x")
        != redis_cluster.nodes[0]
    )
    created = CliRunner().invoke(
        main, ["keys", "create", "--tenant", tenant, "--json", "--db", str(db)]
    )
    assert created.exit_code == 0, created.output
    auth = {"Authorization": f"Bearer {json.loads(created.stdout)['key']}"}
    flags = ["--db", str(db), "--redis-url", redis_cluster.url]
    env = serve_env()
    if how == "flag":
        flags.append("--redis-cluster")
    else:
        env["MEMSTACK_REDIS_CLUSTER"] = "1"
    with (
        serving_memstack(flags, env=env, log=tmp_path / "serve.log") as served,
        httpx.Client(base_url=served.url, headers=auth, timeout=30) as client,
    ):
        for i in range(3):
            body = {"agent_id": "bot", "key": f"k{i}", "value": f"Fact number {i}."}
            assert client.post("/api/memories", json=body).status_code == 201
        context = client.get("/api/context", params={"agent_id": "bot"})
        assert context.status_code == 200, context.text
        assert len(context.json()["memories"]) == 3
        master = redis_cluster.node_of(f"memstack:stm:{{{tenant}}}:x")
        held = _tenant_keys(redis_cluster, tenant)
        assert held[master.port] > 0 and sum(held.values()) == held[master.port], held

        master.stop()
        try:
            body = {"agent_id": "bot", "key": "k3", "value": "Fact number 3."}
            stored = client.post("/api/memories", json=body)
            assert stored.status_code == 201, stored.text  # the long-term tier took it
            down = client.get("/api/context", params={"agent_id": "bot"})
            assert down.status_code == 200, down.text
            assert len(down.json()["memories"]) == 4
        finally:
            master.start()
            redis_cluster.wait_ok()
        back = client.get("/api/context", params={"agent_id": "bot"})
        assert back.status_code == 200, back.text
        values = sorted(m["value"] for m in back.json()["memories"])
        assert values == [f"Fact number {i}." for i in range(4)], served.tail()
