"""What a load saturates: each part's CPU as cores used against the cores it can use."""

import subprocess
import sys

import psycopg
import redis

from memstack.bench.saturation import (
    Spent,
    postgres_probe,
    process_probe,
    read_probes,
    redis_probe,
    saturation,
    spent_between,
)


def test_the_part_with_the_highest_utilization_leads_and_the_machine_sums_them():
    parts = [
        Spent(name="server", capacity=2.0, cpu_s=6.0),  # 0.6 cores of 2: 0.3
        Spent(name="Redis", capacity=1.0, cpu_s=4.0),  # 0.4 cores of 1: 0.4
        Spent(name="PostgreSQL", capacity=2.0, cpu_s=None),
    ]
    found = saturation(parts, seconds=10.0, cores=2, embedder_cores=1.5)
    listed = found["parts"]
    assert isinstance(listed, list)
    rows = {row["part"]: row for row in listed}
    assert rows["server"]["cores_used"] == 0.6 and rows["server"]["utilization"] == 0.3
    assert rows["Redis"]["utilization"] == 0.4
    assert rows["PostgreSQL"]["cores_used"] is None  # not read: listed, never counted
    assert rows["embedder (of the server)"]["estimated"] is True
    assert found["saturates_first"] == "Redis"  # the estimate (0.75) is never the leader
    assert found["machine_cores_used"] == 1.0 and found["machine_utilization"] == 0.5


def test_a_postgres_on_this_machine_is_read_by_its_process_tree(postgres_url: str):
    probe = postgres_probe("PostgreSQL", postgres_url, 2.0)
    assert probe is not None
    before = read_probes([probe])
    with psycopg.connect(postgres_url) as conn:
        conn.execute("SELECT count(*) FROM generate_series(1, 3000000)").fetchone()
    parts = spent_between([probe], before, read_probes([probe]))
    assert parts[0].cpu_s is not None and parts[0].cpu_s > 0


def test_a_part_that_cannot_be_read_is_listed_as_not_read():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()  # gone, and waited for
    probes = [process_probe("gone", child.pid, 1.0), redis_probe("redis://127.0.0.1:9/0")]
    assert read_probes(probes) == {"gone": None, "Redis": None}


def test_a_postgres_that_cannot_be_reached_has_no_probe():
    assert postgres_probe("PostgreSQL", "postgresql://127.0.0.1:9/none", 2.0) is None


def test_redis_is_read_by_info_cpu(redis_url: str):
    probe = redis_probe(redis_url)
    before = read_probes([probe])
    with redis.Redis.from_url(redis_url) as client:
        for n in range(3000):
            client.set(f"saturation-test:{n}", "x" * 100)
        client.delete(*(f"saturation-test:{n}" for n in range(3000)))
    parts = spent_between([probe], before, read_probes([probe]))
    assert parts[0].cpu_s is not None and parts[0].cpu_s > 0 and parts[0].capacity == 1.0
