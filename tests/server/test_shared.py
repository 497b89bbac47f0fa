"""Two servers on one PostgreSQL and one Redis see each other's writes, over real HTTP."""

from collections.abc import Iterator

import psycopg
import pytest

from memstack.client import MemoryClient
from memstack.embeddings import HashEmbedder
from memstack.wiring import Services, open_services
from tests.server.conftest import serve_in_thread


@pytest.fixture
def two_deployments(postgres_url: str, redis_url: str) -> Iterator[tuple[Services, Services]]:
    """Two independent service stacks on the default schema and key prefix, as two
    server processes of one deployment would have them."""
    first = open_services(store_url=postgres_url, redis_url=redis_url, embedder=HashEmbedder())
    second = open_services(store_url=postgres_url, redis_url=redis_url, embedder=HashEmbedder())
    yield first, second
    first.short_term.clear_tenant("shared-acme")
    first.close()
    second.close()
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("DROP SCHEMA IF EXISTS memstack CASCADE")


def test_two_servers_share_postgres_and_redis(two_deployments):
    first, second = two_deployments
    a, b = serve_in_thread(first), serve_in_thread(second)
    try:
        key, _ = first.keys.create(tenant="shared-acme")
        with MemoryClient(a.url, api_key=key) as via_a, MemoryClient(b.url, api_key=key) as via_b:
            created = via_a.store("bot", "deploy", "Blue-green on Tuesdays.")
            assert via_b.get(created["id"])["value"] == "Blue-green on Tuesdays."
            assert [m["key"] for m in via_b.context("bot")["memories"]] == ["deploy"]
            via_b.update(created["id"], value="Blue-green on Wednesdays.")
            assert via_a.context("bot")["memories"][0]["value"] == "Blue-green on Wednesdays."
            hits = via_a.search("Wednesdays", mode="text")["results"]
            assert hits[0]["memory"]["id"] == created["id"]
            assert via_a.health()["short_term"] == "up"
    finally:
        for live in (a, b):
            live.server.should_exit = True
            live.thread.join(timeout=10)
