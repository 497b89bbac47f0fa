"""MemoryService over every long-term backend, with the in-process short-term tier."""

import pytest

from memstack import InvalidInput, ManualClock, NotFound
from memstack.embeddings import HashEmbedder
from memstack.service.memories import MemoryService
from memstack.service.principal import Forbidden, Principal
from memstack.service.stm import InProcessTier
from memstack.storage import Filter, RecordStore

ACME = Principal(tenant="acme")
OTHER = Principal(tenant="other")
HOUR = 3600.0


async def test_store_get_and_upsert(service: MemoryService, clock: ManualClock):
    first = await service.store(ACME, agent_id="bot", key="coding-style", value="Use type hints.")
    assert (first.scope, first.agent_id, first.key) == ("agent", "bot", "coding-style")
    clock.advance(60)
    second = await service.store(
        ACME, agent_id="bot", key="coding-style", value="Prefer dataclasses."
    )
    assert second.id == first.id
    assert second.created_at == first.created_at and second.updated_at == first.updated_at + 60
    page = await service.list(ACME, agent_id="bot")
    assert page.total == 1 and page.memories[0].value == "Prefer dataclasses."
    assert (await service.get(ACME, first.id)).value == "Prefer dataclasses."


async def test_identity_includes_scope_and_session(service: MemoryService):
    a = await service.store(ACME, agent_id="bot", key="k", value="agent value")
    s1 = await service.store(
        ACME, agent_id="bot", key="k", value="run 1", scope="session", session_id="run-1"
    )
    s2 = await service.store(
        ACME, agent_id="bot", key="k", value="run 2", scope="session", session_id="run-2"
    )
    g = await service.store(ACME, agent_id="bot", key="k", value="shared", scope="global")
    assert len({a.id, s1.id, s2.id, g.id}) == 4
    g2 = await service.store(ACME, agent_id="other-bot", key="k", value="shared v2", scope="global")
    # Spec 004: the upsert identity is (agent_id, scope, key), global scope too.
    assert g2.id != g.id and g2.agent_id == "other-bot"
    assert (await service.get(ACME, g.id)).value == "shared"


async def test_context_and_render(service: MemoryService):
    await service.store(
        ACME, agent_id="bot", key="user-preference", value="Prefers concise responses."
    )
    await service.store(
        ACME, agent_id="bot", key="project-context", value="Python 3.12 & <FastAPI>", scope="global"
    )
    await service.store(
        ACME,
        agent_id="bot",
        key="ticket",
        value="Working on #123",
        scope="session",
        session_id="run-7",
    )
    await service.store(
        ACME,
        agent_id="bot",
        key="ticket",
        value="Working on #999",
        scope="session",
        session_id="run-8",
    )
    await service.store(ACME, agent_id="elsewhere", key="private", value="Not for bot")
    block = await service.render_memories(ACME, agent_id="bot", session_id="run-7")
    assert block.splitlines()[0] == "<memories>" and block.splitlines()[-1] == "</memories>"
    assert '<memory key="ticket" scope="session">\nWorking on #123\n</memory>' in block
    assert (
        '<memory key="user-preference" scope="agent">\nPrefers concise responses.\n</memory>'
        in block
    )
    assert "Python 3.12 &amp; &lt;FastAPI&gt;" in block
    assert "#999" not in block and "Not for bot" not in block
    assert await service.render_memories(OTHER, agent_id="bot") == ""


async def test_render_respects_the_budget(service: MemoryService):
    for i in range(10):
        await service.store(ACME, agent_id="bot", key=f"k{i}", value="x" * 200)
    block = await service.render_memories(ACME, agent_id="bot", budget_chars=1000)
    assert 0 < len(block) <= 1000
    # Three parts of ~242 characters fit in 1000 beside the line naming the 7 left out.
    assert block.count("<memory ") == 3
    assert "\n[7 more memories left out to fit the budget]\n</memories>" in block


async def test_ttl_hides_and_prunes(service: MemoryService, clock: ManualClock):
    temp = await service.store(
        ACME, agent_id="bot", key="temp", value="Working on ticket", ttl=HOUR
    )
    await service.store(ACME, agent_id="bot", key="keep", value="Stays")
    assert {m.key for m in await service.context(ACME, agent_id="bot")} == {"temp", "keep"}
    clock.advance(2 * HOUR)
    assert {m.key for m in await service.context(ACME, agent_id="bot")} == {"keep"}
    assert [m.key for m in (await service.list(ACME, agent_id="bot")).memories] == ["keep"]
    assert await service.search(ACME, "ticket", agent_id="bot", mode="text") == []
    with pytest.raises(NotFound):
        await service.get(ACME, temp.id)
    everything = Filter(include_expired=True)
    namespace = service.long_term.namespace("acme", "bot")
    assert service.long_term.records.count(namespace, everything) == 1  # pruned by context()
    await service.store(ACME, agent_id="bot", key="temp2", value="short-lived", ttl=1)
    clock.advance(5)
    assert await service.prune_expired() == 2  # the memory and its id-index entry
    assert service.long_term.records.count(namespace, everything) == 1


@pytest.mark.parametrize(
    ("ttl", "ok"),
    [
        ("2030-01-15T12:00:00Z", True),
        ("2030-01-15T12:00:00", True),
        ("2099-01-15T12:00:00Z", False),
        (30, True),
        ("2001-01-01T00:00:00Z", True),  # accepted, already expired
        (0, False),
        (-5, False),
        ("tomorrow", False),
        (True, False),
        (float("nan"), False),
    ],
)
async def test_ttl_forms(service: MemoryService, ttl, ok):
    if ok:
        memory = await service.store(ACME, agent_id="bot", key="k", value="v", ttl=ttl)
        assert memory.expires_at is not None
    else:
        with pytest.raises(InvalidInput) as excinfo:
            await service.store(ACME, agent_id="bot", key="k", value="v", ttl=ttl)
        assert excinfo.value.field == "ttl"
        assert (await service.list(ACME)).total == 0


async def test_update_every_tier_and_ttl_removal(service: MemoryService, clock: ManualClock):
    memory = await service.store(ACME, agent_id="bot", key="k", value="old words", ttl=HOUR)
    updated = await service.update(ACME, memory.id, value="new words", metadata={"tag": "x"})
    assert updated.expires_at == memory.expires_at  # kept
    cleared = await service.update(ACME, memory.id, ttl=None)
    assert cleared.expires_at is None
    assert [m.value for m in await service.context(ACME, agent_id="bot")] == ["new words"]
    (hit,) = await service.search(ACME, "new words", agent_id="bot", mode="text")
    assert hit.memory.value == "new words" and hit.memory.metadata == {"tag": "x"}
    clock.advance(2 * HOUR)
    assert (await service.get(ACME, memory.id)).value == "new words"


async def test_delete_removes_from_every_tier(service: MemoryService):
    memory = await service.store(ACME, agent_id="bot", key="k", value="gone soon")
    await service.delete(ACME, memory.id)
    assert await service.context(ACME, agent_id="bot") == []
    assert (await service.list(ACME)).total == 0
    assert await service.search(ACME, "gone soon") == []
    with pytest.raises(NotFound):
        await service.delete(ACME, memory.id)


async def test_ltm_cap_evicts_the_oldest_everywhere(records: RecordStore, clock: ManualClock):
    service = MemoryService(
        records=records,
        embedder=HashEmbedder(),
        short_term=InProcessTier(max_entries=5),
        ltm_max_entries=3,
        clock=clock,
    )
    ids = []
    for i in range(5):
        ids.append((await service.store(ACME, agent_id="bot", key=f"k{i}", value=f"value {i}")).id)
        clock.advance(1)
    page = await service.list(ACME, agent_id="bot")
    assert [m.key for m in page.memories] == ["k4", "k3", "k2"]
    assert {m.key for m in await service.context(ACME, agent_id="bot")} == {"k2", "k3", "k4"}
    for gone in ids[:2]:
        with pytest.raises(NotFound):
            await service.get(ACME, gone)


async def test_stm_cap_and_ltm_fallback(records: RecordStore, clock: ManualClock):
    tier = InProcessTier(max_entries=2)
    service = MemoryService(records=records, embedder=HashEmbedder(), short_term=tier, clock=clock)
    for i in range(4):
        await service.store(ACME, agent_id="bot", key=f"k{i}", value=f"v{i}")
        clock.advance(1)
    assert [m.key for m in await service.context(ACME, agent_id="bot")] == ["k3", "k2"]
    tier.clear_tenant("acme")  # an empty short-term tier falls back to long-term
    assert [m.key for m in await service.context(ACME, agent_id="bot")] == ["k3", "k2"]


async def test_warmup_fills_the_short_term_tier(records: RecordStore, clock: ManualClock):
    writer = MemoryService(
        records=records, embedder=HashEmbedder(), short_term=InProcessTier(), clock=clock
    )
    await writer.store(ACME, agent_id="bot", key="a", value="alpha")
    await writer.store(OTHER, agent_id="bot", key="b", value="beta", scope="global")
    fresh_tier = InProcessTier()
    restarted = MemoryService(
        records=records, embedder=HashEmbedder(), short_term=fresh_tier, clock=clock
    )
    assert await restarted.warmup() == 2
    assert [m.key for m in fresh_tier.recent("acme", "bot", now=clock.now())] == ["a"]
    assert [m.key for m in fresh_tier.recent("other", "~global", now=clock.now())] == ["b"]


async def test_search_modes_and_filters(service: MemoryService):
    await service.store(
        ACME, agent_id="bot", key="coding-style", value="Use type hints everywhere."
    )
    await service.store(ACME, agent_id="bot", key="deploy", value="Blue-green deployments only.")
    await service.store(ACME, agent_id="ops", key="deploy", value="Deploy on Tuesdays.")
    await service.store(OTHER, agent_id="bot", key="coding-style", value="Tabs, never spaces.")
    for mode in ("hybrid", "text", "semantic"):
        hits = await service.search(ACME, "coding style", agent_id="bot", mode=mode)
        assert hits[0].memory.key == "coding-style", mode
        assert all(h.memory.tenant == "acme" for h in hits)
    deploys = await service.search(ACME, "deploy", key="deploy", mode="text")
    assert {h.memory.agent_id for h in deploys} == {"bot", "ops"}
    only_ops = await service.search(ACME, "deploy", agent_id="ops", mode="text")
    assert [h.memory.value for h in only_ops] == ["Deploy on Tuesdays."]


async def test_search_scores_every_bucket_on_one_scale(service: MemoryService):
    # a weak keyword match in the agent's bucket must not tie a strong one in the global
    # bucket: keyword scores are divided by the best over all buckets, not per bucket
    await service.store(ACME, agent_id="bot", key="a", value="green paint on the fence")
    await service.store(
        ACME, agent_id="bot", key="b", value="green tea ceremony in Kyoto", scope="global"
    )
    hits = await service.search(ACME, "green tea ceremony Kyoto", agent_id="bot", mode="text")
    by_key = {h.memory.key: h.keyword for h in hits}
    assert by_key["b"] == 1.0
    assert 0 < by_key["a"] < 0.5


async def test_list_paging_and_filters(service: MemoryService, clock: ManualClock):
    for i in range(7):
        await service.store(ACME, agent_id="bot", key=f"k{i}", value=f"v{i}")
        clock.advance(1)
    await service.store(ACME, agent_id="bot", key="g", value="global one", scope="global")
    first = await service.list(ACME, agent_id="bot", limit=3)
    second = await service.list(ACME, agent_id="bot", limit=3, offset=3)
    assert first.total == second.total == 8
    assert [m.key for m in first.memories] == ["g", "k6", "k5"]
    assert [m.key for m in second.memories] == ["k4", "k3", "k2"]
    assert [m.key for m in (await service.list(ACME, scope="global")).memories] == ["g"]
    assert (await service.list(ACME, agent_id="bot", scope="agent")).total == 7


async def test_tenants_are_isolated(service: MemoryService):
    mine = await service.store(ACME, agent_id="bot", key="k", value="acme secret sauce")
    with pytest.raises(NotFound):
        await service.get(OTHER, mine.id)
    with pytest.raises(NotFound):
        await service.update(OTHER, mine.id, value="hijacked")
    with pytest.raises(NotFound):
        await service.delete(OTHER, mine.id)
    assert (await service.list(OTHER, agent_id="bot")).total == 0
    assert await service.search(OTHER, "secret sauce") == []
    assert (await service.get(ACME, mine.id)).value == "acme secret sauce"


async def test_agent_restricted_keys(service: MemoryService):
    limited = Principal(tenant="acme", agents=frozenset({"bot"}))
    await service.store(ACME, agent_id="ops", key="k", value="ops only")
    shared = await service.store(ACME, agent_id="ops", key="g", value="for all", scope="global")
    with pytest.raises(Forbidden):
        await service.store(limited, agent_id="ops", key="k", value="x")
    with pytest.raises(Forbidden):
        await service.list(limited, agent_id="ops")
    assert [m.key for m in (await service.list(limited)).memories] == ["g"]
    assert (await service.get(limited, shared.id)).value == "for all"


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"agent_id": "", "key": "k", "value": "v"}, "agent_id"),
        ({"agent_id": "bad id!", "key": "k", "value": "v"}, "agent_id"),
        ({"agent_id": "bot", "key": "", "value": "v"}, "key"),
        ({"agent_id": "bot", "key": "k" * 300, "value": "v"}, "key"),
        ({"agent_id": "bot", "key": "a\nb", "value": "v"}, "key"),
        ({"agent_id": "bot", "key": "k", "value": ""}, "value"),
        ({"agent_id": "bot", "key": "k", "value": "v" * 40_000}, "value"),
        ({"agent_id": "bot", "key": "k", "value": "v", "scope": "team"}, "scope"),
        (
            {"agent_id": "bot", "key": "k", "value": "v", "scope": "session", "session_id": ""},
            "session_id",
        ),
        ({"agent_id": "bot", "key": "k", "value": "v", "session_id": "s1"}, "session_id"),
        ({"agent_id": "bot", "key": "k", "value": "v", "metadata": {"x": {1}}}, "metadata['x']"),
        (
            {
                "agent_id": "bot",
                "key": "k",
                "value": "token: ghp_abcdefghijklmnopqrstuvwxyz0123456789",
            },
            "value",
        ),
        ({"agent_id": "bot", "key": "db", "value": "postgres://admin:hunter2@db:5432/x"}, "value"),
    ],
)
async def test_bad_input_names_the_field_and_changes_nothing(service: MemoryService, kwargs, field):
    kept = await service.store(ACME, agent_id="bot", key="k", value="original")
    with pytest.raises(InvalidInput) as excinfo:
        await service.store(ACME, **kwargs)
    assert excinfo.value.field == field
    assert (await service.get(ACME, kept.id)).value == "original"
    assert (await service.list(ACME)).total == 1
