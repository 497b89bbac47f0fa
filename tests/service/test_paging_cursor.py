"""Listings page by cursor at any depth, on every backend (issue 30, "nothing cut short"):
a walk by ``next_cursor`` lists every memory exactly once in the listing's order, deeper
than the 10,000 ``offset`` reaches; every ``offset``/``limit`` the REST schema allows
answers 200 with the right slice; a bad cursor is refused naming ``cursor``; and
memories stored or updated while a listing is walked never make it list a memory twice
or skip one."""

from __future__ import annotations

import base64
import itertools
import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest

from memstack import ManualClock
from memstack.embeddings import HashEmbedder
from memstack.service.api_keys import ApiKeys
from memstack.service.knowledge import KnowledgeBase
from memstack.service.memories import MAX_LIST_LIMIT, MAX_LIST_OFFSET, MemoryService
from memstack.service.principal import Principal
from memstack.service.restore import MAX_RESTORE_MEMORIES, MemoryIn, VersionIn
from memstack.service.stm import InProcessTier
from memstack.service.types import Memory, Scope
from memstack.storage import RecordStore
from memstack.transports.app import create_app
from memstack.wiring import Services

ACME = Principal(tenant="acme")
T = 1_780_000_000.0
"""The clock's start (``conftest.clock``); seeded memories are older."""


@pytest.fixture
def service(records: RecordStore, clock: ManualClock) -> MemoryService:
    """The service of every backend, without a cap: every seeded memory stays."""
    return MemoryService(
        records=records,
        embedder=HashEmbedder(),
        short_term=InProcessTier(max_entries=20),
        clock=clock,
        ltm_max_entries=0,
    )


def memories(
    count: int,
    *,
    agent: str = "bot",
    scope: Scope = "agent",
    tied: int = 7,
    start: int = 0,
    history: bool = True,
) -> list[MemoryIn]:
    """``count`` memories, ``tied`` at a time created in the same second (their order
    is their ids'), every 20th with a closed version (``history``) before its current one,
    valid for the second after it was created."""
    out = []
    for i in range(start, start + count):
        created = T - 10 - i // tied
        current = VersionIn(value=f"value {i}", created_at=created, updated_at=created + 1)
        versions = [current]
        if history and i % 20 == 0:
            old = VersionIn(
                value=f"old value {i}",
                created_at=created,
                updated_at=created,
                valid_to=created + 1,
                superseded_by="-",
                closed_reason="superseded",
            )
            versions = [old, VersionIn(**{**current.__dict__, "valid_from": created + 1})]
        out.append(MemoryIn(agent_id=agent, scope=scope, key=f"k{i:05}", versions=versions))
    return out


async def seed(service: MemoryService, given: list[MemoryIn]) -> None:
    for at in range(0, len(given), MAX_RESTORE_MEMORIES):
        await service.restore(ACME, given[at : at + MAX_RESTORE_MEMORIES])


async def walk(service: MemoryService, limit: int = MAX_LIST_LIMIT, **filters: Any) -> list[Memory]:
    """Every page of a listing by cursor (at most 100 pages: a cursor that does not move
    on fails the test instead of hanging it)."""
    out: list[Memory] = []
    cursor = None
    for _ in range(100):
        page = await service.list(ACME, limit=limit, cursor=cursor, **filters)
        out += page.memories
        if (cursor := page.next_cursor) is None:
            return out
    raise AssertionError(f"still listing after 100 pages ({len(out)} memories)")


def in_listing_order(found: list[Memory]) -> bool:
    """Newest first, ties by id ascending, nothing twice (versions by their validity)."""
    keys = [(-m.created_at, m.id, -m.starts) for m in found]
    return all(a < b for a, b in itertools.pairwise(keys))


@pytest.fixture
def services(
    records: RecordStore, service: MemoryService, clock: ManualClock
) -> Iterator[Services]:
    yield Services(
        records=records,
        short_term=service.short_term,
        embedder=service.embedder,
        memories=service,
        knowledge=KnowledgeBase(records=records, embedder=service.embedder, clock=clock),
        keys=ApiKeys(records, clock=clock),
    )


@pytest.fixture
async def api(services: Services) -> AsyncIterator[httpx.AsyncClient]:
    key, _ = services.keys.create(tenant="acme")
    transport = httpx.ASGITransport(app=create_app(services))
    headers = {"Authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(
        transport=transport, base_url="http://memstack.test", headers=headers
    ) as client:
        yield client


async def test_a_walk_by_cursor_goes_deeper_than_any_offset_and_every_offset_answers(
    service: MemoryService, api: httpx.AsyncClient
) -> None:
    """One store per backend for both (seeding is the slow part): a walk by cursor lists
    every memory once, in order, beyond the deepest offset, of one bucket or of two
    merged, current versions or every version; then each offset and limit at the edges
    of what ``GET /api/memories`` takes, with and without a cursor, answers 200 with the
    walk's slice from there."""
    await seed(service, memories(10_560) + memories(60, agent="ops", scope="global", start=20_000))
    agents: list[dict[str, Any]] = [{}, {"agent_id": "bot"}]  # two buckets merged; one
    walked: list[list[str]] = []
    for filters, count in zip(agents, (10_620, 10_560), strict=True):
        found = await walk(service, **filters)
        total = (await service.list(ACME, limit=1, **filters)).total
        assert total == count and len(found) == count
        assert len({m.id for m in found}) == count and in_listing_order(found)
        walked.append([m.id for m in found])
    every = await walk(service, include_superseded=True)
    assert len(every) == 10_620 + 528 + 3  # each 20th memory has a closed version
    assert in_listing_order(every)
    assert len({(m.id, m.starts) for m in every}) == len(every)
    for query, ids in zip(agents, walked, strict=True):
        cursor_at = 123  # a page that starts after ids[123]
        cursor = (await service.list(ACME, limit=cursor_at + 1, **query)).next_cursor
        for limit in (1, MAX_LIST_LIMIT):
            for offset in (0, 1, MAX_LIST_OFFSET - 1, MAX_LIST_OFFSET):
                for after in (None, cursor):
                    params = {**query, "limit": limit, "offset": offset}
                    if after is not None:
                        params["cursor"] = after
                    answer = await api.get("/api/memories", params=params)
                    assert answer.status_code == 200, (params, answer.text)
                    page = answer.json()
                    start = offset + (0 if after is None else cursor_at + 1)
                    assert [m["id"] for m in page["memories"]] == ids[start : start + limit]
                    assert (page["next_cursor"] is None) == (start + limit >= len(ids))
                    assert (page["total"], page["limit"], page["offset"]) == (
                        len(ids),
                        limit,
                        offset,
                    )


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"offset": MAX_LIST_OFFSET + 1}, "offset"),
        ({"limit": MAX_LIST_LIMIT + 1}, "limit"),
        ({"limit": 0}, "limit"),
        ({"offset": -1}, "offset"),
    ],
)
async def test_past_the_schema_edges_is_refused_naming_the_field(
    api: httpx.AsyncClient, params: dict[str, int], field: str
) -> None:
    answer = await api.get("/api/memories", params=params)
    assert answer.status_code == 422 and answer.json()["error"]["field"] == field


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


@pytest.mark.parametrize(
    "cursor",
    [
        "garbage",
        "c1.",
        "c1.!!!not base64",
        "c1." + _b64(b"\xff\xfe"),
        "c1." + _b64(b'{"created_at": 1}'),
        "c1." + _b64(b'[1780000000.0, ""]'),
        "c1." + _b64(b'[true, "mem_1"]'),
        "c1." + _b64(b'[1e999, "mem_1"]'),
        "c1." + _b64(b'["1780000000", "mem_1"]'),
        "c1." + _b64(b'[1780000000.0, "mem_1", "more"]'),
        "c1." + _b64(json.dumps([T, "\ud800"]).encode()),
        "c1." + _b64(json.dumps([T, "x\u0000"]).encode()),
        "c1." + _b64(json.dumps([T, "x" * 1_100]).encode()),
        "c1." + "A" * 2_100,
    ],
)
async def test_a_bad_cursor_is_refused_naming_cursor_and_the_fix(
    api: httpx.AsyncClient, cursor: str
) -> None:
    answer = await api.get("/api/memories", params={"cursor": cursor})
    assert answer.status_code in (400, 422), answer.text
    error = answer.json()["error"]
    assert error["field"] == "cursor", error
    if answer.status_code == 422 and len(cursor) <= 2_048:
        assert "next_cursor" in error["message"]


async def test_a_walk_neither_repeats_nor_skips_while_memories_are_written(
    service: MemoryService, clock: ManualClock
) -> None:
    """Between the pages, memories are stored tied with the ones listed (same second,
    ids anywhere in their order) and newer, and listed ones are given new values (their
    place in the listing stays): each memory there before the walk is listed once, in
    order. With ``offset`` paging the new ones push memories onto the next page again."""
    # Every one created in one second (without history: the clock goes back to it).
    await seed(service, memories(1_200, tied=1_200, history=False))
    before = [m.id for m in await walk(service)]
    clock.set(T - 10)  # the second they were all created in
    found: list[Memory] = []
    cursor = None
    for page_number in range(100):
        page = await service.list(ACME, limit=100, cursor=cursor)
        found += page.memories
        for n in range(7):  # tied with the walk, and newer
            await service.store(ACME, agent_id="bot", key=f"new {page_number} {n}", value="v")
        clock.advance(0.001)
        await service.store(ACME, agent_id="bot", key=f"newer {page_number}", value="v")
        for listed in page.memories[:3]:  # a new value for memories already listed
            await service.store(ACME, agent_id="bot", key=listed.key, value=f"{listed.value}!")
        clock.set(T - 10)
        if (cursor := page.next_cursor) is None:
            break
    listed_before = [m.id for m in found if m.id in set(before)]
    assert listed_before == before
