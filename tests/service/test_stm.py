"""The short-term tier contract: InProcessTier and RedisTier (a real Redis) pass the same
tests; then what only Redis has: its key layout, no orphans, and a server that dies."""

from __future__ import annotations

import os
import random
import signal
import sys
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

import pytest
import redis

from memstack.errors import ConfigError, InvalidInput, StoreUnavailable
from memstack.service.stm import InProcessTier, ShortTermTier, newest_first
from memstack.service.stm_redis import STATE_TTL_S, KeyLayout, RedisTier
from memstack.service.types import GLOBAL_BUCKET, Memory, Scope, memory_id
from tests.servers import RedisCluster, free_port, running_redis

T0 = 1_700_000_000.0
TIERS = ["inprocess", "redis", "redis-cluster"]

TierFactory = Callable[..., ShortTermTier]


def mem(
    key: str,
    *,
    at: float = T0,
    tenant: str = "acme",
    agent: str = "agent-1",
    scope: Scope = "agent",
    value: str | None = None,
    expires_at: float | None = None,
    session_id: str | None = None,
) -> Memory:
    ident = memory_id(tenant=tenant, scope=scope, agent_id=agent, session_id=session_id, key=key)
    return Memory(
        id=ident,
        tenant=tenant,
        agent_id=agent,
        scope=scope,
        key=key,
        value=value if value is not None else f"value of {key}",
        session_id=session_id,
        expires_at=expires_at,
        created_at=T0 - 100,
        updated_at=at,
    )


def keys_of(memories: list[Memory]) -> list[str]:
    return [m.key for m in memories]


def recent_keys(tier: ShortTermTier, bucket: str = "agent-1", tenant: str = "acme") -> list[str]:
    return keys_of(tier.recent(tenant, bucket, now=T0))


# -- fixtures -------------------------------------------------------------------------


@pytest.fixture
def prefix() -> str:
    """A fresh key prefix per test, so tests sharing the session's Redis never meet."""
    return f"memstack:test:{uuid.uuid4().hex[:12]}"


def delete_prefix(url: str, prefix: str) -> None:
    with redis.Redis.from_url(url) as client:
        for key in list(client.scan_iter(match=f"{prefix}:*")):
            client.delete(key)


@pytest.fixture
def raw(redis_url: str) -> Iterator[redis.Redis]:
    """A plain client, to look at (or damage) what RedisTier wrote."""
    with redis.Redis.from_url(redis_url, decode_responses=True) as client:
        yield client


@pytest.fixture(params=TIERS)
def new_tier(request: pytest.FixtureRequest, prefix: str) -> Iterator[TierFactory]:
    """Make tiers of one kind (``max_entries=...``); each is closed after the test."""
    opened: list[ShortTermTier] = []

    def make(max_entries: int = 20) -> ShortTermTier:
        tier: ShortTermTier
        if request.param == "inprocess":
            tier = InProcessTier(max_entries=max_entries)
        elif request.param == "redis":
            url: str = request.getfixturevalue("redis_url")
            tier = RedisTier.from_url(url, max_entries=max_entries, prefix=prefix)
        else:
            cluster: RedisCluster = request.getfixturevalue("redis_cluster")
            tier = RedisTier.from_url(
                cluster.url, max_entries=max_entries, prefix=prefix, cluster=True
            )
        opened.append(tier)
        return tier

    yield make
    for tier in opened:
        tier.close()
    if request.param == "redis":
        delete_prefix(request.getfixturevalue("redis_url"), prefix)
    elif request.param == "redis-cluster":
        for node in request.getfixturevalue("redis_cluster").nodes:
            delete_prefix(node.url, prefix)


@pytest.fixture
def tier(new_tier: TierFactory) -> ShortTermTier:
    return new_tier()


@pytest.fixture
def redis_tier(redis_url: str, prefix: str) -> Iterator[RedisTier]:
    tier = RedisTier.from_url(redis_url, max_entries=3, prefix=prefix)
    yield tier
    tier.close()
    delete_prefix(redis_url, prefix)


# -- the contract: order, dedupe, trimming -------------------------------------------------


def test_is_a_short_term_tier_with_the_spec_default_cap(tier: ShortTermTier) -> None:
    assert isinstance(tier, ShortTermTier)
    assert tier.max_entries == 20
    tier.ping()


def test_recent_is_newest_first_whatever_the_write_order(tier: ShortTermTier) -> None:
    for key, at in [("b", T0 + 2), ("d", T0 + 4), ("a", T0 + 1), ("c", T0 + 3)]:
        tier.put(mem(key, at=at))
    assert recent_keys(tier) == ["d", "c", "b", "a"]
    assert keys_of(tier.recent("acme", "agent-1", now=T0, limit=2)) == ["d", "c"]


def test_ties_in_updated_at_are_ordered_by_id_ascending_in_every_tier(
    new_tier: TierFactory,
) -> None:
    tied = [mem(f"k{i}") for i in range(8)]
    newer, older = mem("newer", at=T0 + 1), mem("older", at=T0 - 1)
    ascending = keys_of(sorted(tied, key=lambda m: m.id))
    assert ascending != keys_of(tied)  # ids are digests: not the keys' order
    everything = [newer, *tied, older]
    random.Random(28).shuffle(everything)
    tier, capped = new_tier(), new_tier(max_entries=5)
    for memory in everything:
        tier.put(memory)
        capped.put(replace(memory, agent_id="agent-2"))  # a bucket of its own, same ids
    assert recent_keys(tier) == ["newer", *ascending, "older"]
    assert keys_of(tier.recent("acme", "agent-1", now=T0, limit=4)) == ["newer", *ascending[:3]]
    assert recent_keys(capped, "agent-2") == ["newer", *ascending[:4]]  # largest tied ids evicted
    assert newest_first(everything) == tier.recent("acme", "agent-1", now=T0)


def test_a_memory_round_trips_every_field(tier: ShortTermTier) -> None:
    memory = replace(
        mem("ünïcode 🦊", scope="session", session_id="run-7", expires_at=T0 + 60.125),
        value='line one\nline "two" <b>',
        metadata={"tags": ["a", 1, 2.5, None, True], "nested": {"é": "ü"}},
        updated_at=T0 + 0.000123,
        provenance="tool_output",
        provenance_detail="crm ✓",
    )
    tier.put(memory)
    assert tier.recent("acme", "agent-1", now=T0) == [memory]


def test_putting_the_same_id_again_updates_it_and_moves_it_to_the_front(
    tier: ShortTermTier,
) -> None:
    for key, at in [("a", T0 + 1), ("b", T0 + 2), ("c", T0 + 3)]:
        tier.put(mem(key, at=at))
    tier.put(mem("a", at=T0 + 4, value="new value"))
    got = tier.recent("acme", "agent-1", now=T0)
    assert keys_of(got) == ["a", "c", "b"]
    assert got[0].value == "new value"


def test_each_bucket_keeps_only_its_newest_max_entries(new_tier: TierFactory) -> None:
    tier = new_tier(max_entries=3)
    for key, at in [("m2", 2), ("m5", 5), ("m1", 1), ("m4", 4), ("m3", 3)]:
        tier.put(mem(key, at=T0 + at))
    assert recent_keys(tier) == ["m5", "m4", "m3"]
    tier.put(mem("older than all", at=T0))  # dropped at once
    assert recent_keys(tier) == ["m5", "m4", "m3"]
    tier.put(mem("m3", at=T0 + 9))  # an update takes no extra room
    assert recent_keys(tier) == ["m3", "m5", "m4"]
    assert keys_of(tier.recent("acme", "agent-1", now=T0, limit=10)) == ["m3", "m5", "m4"]


# -- expiry ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expires_in", "returned"),
    [(-1.0, False), (0.0, False), (0.001, True), (3600.0, True), (None, True)],
)
def test_recent_hides_memories_expired_at_now(
    tier: ShortTermTier, expires_in: float | None, returned: bool
) -> None:
    now = T0 + 100
    expires_at = None if expires_in is None else now + expires_in
    tier.put(mem("x", expires_at=expires_at))
    assert recent_keys_at(tier, now) == (["x"] if returned else [])


def recent_keys_at(tier: ShortTermTier, now: float) -> list[str]:
    return keys_of(tier.recent("acme", "agent-1", now=now))


def test_recent_prunes_what_has_expired(tier: ShortTermTier) -> None:
    tier.put(mem("short", at=T0 + 2, expires_at=T0 + 10))
    tier.put(mem("long", at=T0 + 1, expires_at=T0 + 1000))
    tier.put(mem("forever", at=T0))
    assert recent_keys_at(tier, T0 + 10) == ["long", "forever"]
    # Pruned, not only hidden: asking about an earlier time does not bring it back.
    assert recent_keys_at(tier, T0) == ["long", "forever"]
    assert tier.remove("acme", "agent-1", [mem("short").id]) == 0


def test_putting_a_memory_again_without_ttl_clears_its_expiry(tier: ShortTermTier) -> None:
    tier.put(mem("x", at=T0, expires_at=T0 + 10))
    tier.put(mem("x", at=T0 + 1))
    assert recent_keys_at(tier, T0 + 50) == ["x"]


# -- isolation ---------------------------------------------------------------------------

# (tenant, agent) pairs whose naive "tenant:bucket" or "tenant/bucket" keys would collide.
PLACES = [
    ("a:b", "c"),
    ("a", "b:c"),
    ("a", "b%3Ac"),
    ("a/b", "c"),
    ("a", "b/c"),
    ("a", "b:c:recent"),
    ("a", "buckets"),
    ("a@x.y", "c"),
    ("{a}", "c"),
    ("a", "*"),
]


def test_tenants_and_buckets_never_see_each_other(tier: ShortTermTier) -> None:
    for i, (tenant, agent) in enumerate(PLACES):
        tier.put(mem(f"key-{i}", tenant=tenant, agent=agent, at=T0 + i))
        tier.put(mem(f"global-{i}", tenant=tenant, agent=agent, scope="global", at=T0 + i))
    for i, (tenant, agent) in enumerate(PLACES):
        assert recent_keys(tier, agent, tenant) == [f"key-{i}"]
        assert recent_keys(tier, GLOBAL_BUCKET, tenant) == [
            f"global-{j}" for j in reversed(range(len(PLACES))) if PLACES[j][0] == tenant
        ]


def test_writes_to_one_bucket_leave_the_others_alone(tier: ShortTermTier) -> None:
    for tenant, agent in PLACES:
        tier.put(mem("k", tenant=tenant, agent=agent))
    target_tenant, target_agent = PLACES[0]
    tier.replace(target_tenant, target_agent, [])
    assert tier.remove("a", "b:c", [mem("k", tenant="a", agent="b:c").id]) == 1
    for tenant, agent in PLACES[2:]:
        assert recent_keys(tier, agent, tenant) == ["k"]


# -- replace, remove, clear_tenant ----------------------------------------------------------


def test_replace_makes_the_bucket_hold_exactly_the_newest_given(new_tier: TierFactory) -> None:
    tier = new_tier(max_entries=3)
    for key in ["old-1", "old-2"]:
        tier.put(mem(key))
    tier.put(mem("other", agent="agent-2"))
    fresh = [mem(f"new-{i}", at=T0 + i) for i in range(5)]
    tier.replace("acme", "agent-1", fresh)
    assert recent_keys(tier) == ["new-4", "new-3", "new-2"]
    assert recent_keys(tier, "agent-2") == ["other"]
    tier.put(mem("new-0", at=T0 + 9))
    assert recent_keys(tier) == ["new-0", "new-4", "new-3"]


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ([], []),
        ([mem("a", at=T0 + 1), mem("a", at=T0 + 5, value="last")], [("a", "last")]),
        ([mem("a", at=T0 + 5), mem("b", at=T0 + 1), mem("a", at=T0)], [("b", None), ("a", None)]),
    ],
    ids=["empty", "repeated-id-last-wins", "last-wins-even-if-older"],
)
def test_replace_edge_cases(
    tier: ShortTermTier, given: list[Memory], expected: list[tuple[str, str | None]]
) -> None:
    tier.put(mem("before"))
    tier.replace("acme", "agent-1", given)
    got = tier.recent("acme", "agent-1", now=T0 - 1000)
    assert keys_of(got) == [key for key, _ in expected]
    for memory, (_, value) in zip(got, expected, strict=True):
        if value is not None:
            assert memory.value == value


@pytest.mark.parametrize(
    ("remove", "removed", "left"),
    [
        (["a"], 1, ["c", "b"]),
        (["a", "c"], 2, ["b"]),
        (["a", "a"], 1, ["c", "b"]),
        (["missing", "b"], 1, ["c", "a"]),
        ([], 0, ["c", "b", "a"]),
        (["a", "b", "c"], 3, []),
    ],
)
def test_remove_deletes_ids_and_counts_what_was_there(
    tier: ShortTermTier, remove: list[str], removed: int, left: list[str]
) -> None:
    for key, at in [("a", 1), ("b", 2), ("c", 3)]:
        tier.put(mem(key, at=T0 + at))
    tier.put(mem("a", agent="agent-2"))
    assert tier.remove("acme", "agent-1", [mem(key).id for key in remove]) == removed
    assert recent_keys(tier) == left
    assert recent_keys(tier, "agent-2") == ["a"]


def test_clear_tenant_removes_every_bucket_of_that_tenant_only(tier: ShortTermTier) -> None:
    for tenant in ["acme", "acme2", "acme:x", "other"]:
        tier.put(mem("k1", tenant=tenant))
        tier.put(mem("k2", tenant=tenant, agent="agent-2"))
        tier.put(mem("g", tenant=tenant, scope="global"))
    assert tier.clear_tenant("acme") == 3
    assert tier.clear_tenant("acme") == 0
    for bucket in ["agent-1", "agent-2", GLOBAL_BUCKET]:
        assert recent_keys(tier, bucket, "acme") == []
    for tenant in ["acme2", "acme:x", "other"]:
        assert recent_keys(tier, "agent-1", tenant) == ["k1"]
        assert recent_keys(tier, GLOBAL_BUCKET, tenant) == ["g"]
    tier.put(mem("after"))
    assert recent_keys(tier) == ["after"]


# -- threads -------------------------------------------------------------------------------


def run_threads(count: int, target: Callable[[int], None]) -> None:
    errors: list[BaseException] = []

    def guarded(i: int) -> None:
        try:
            target(i)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=guarded, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []


@pytest.mark.parametrize(("threads", "each"), [(4, 5), (4, 25)])
def test_concurrent_puts_lose_nothing_up_to_the_cap_and_keep_it(
    tier: ShortTermTier, threads: int, each: int
) -> None:
    def put_many(i: int) -> None:
        for j in range(each):
            tier.put(mem(f"t{i}-{j}", at=T0 + j * threads + i))

    run_threads(threads, put_many)
    everything = [(j * threads + i, f"t{i}-{j}") for i in range(threads) for j in range(each)]
    newest = [key for _, key in sorted(everything, reverse=True)][: tier.max_entries]
    assert recent_keys(tier) == newest


def test_readers_never_see_a_half_replaced_bucket(tier: ShortTermTier) -> None:
    generations = [[mem(f"k{i}", at=T0 + i, value=f"gen-{g}") for i in range(10)] for g in (0, 1)]
    tier.replace("acme", "agent-1", generations[0])
    seen: set[tuple[str, ...]] = set()

    def work(i: int) -> None:
        for n in range(40):
            if i == 0:
                tier.replace("acme", "agent-1", generations[n % 2])
            else:
                got = tier.recent("acme", "agent-1", now=T0)
                seen.add(tuple(m.value for m in got))

    run_threads(3, work)
    assert seen <= {tuple(["gen-0"] * 10), tuple(["gen-1"] * 10)}


# -- bad arguments and lifecycle ----------------------------------------------------------------


@pytest.mark.parametrize("kind", TIERS)
@pytest.mark.parametrize("bad", [0, -1, True, 1.5, "20", None])
def test_max_entries_must_be_a_positive_int(kind: str, bad: Any, redis_url: str) -> None:
    with pytest.raises(InvalidInput, match="max_entries") as info:
        if kind == "inprocess":
            InProcessTier(max_entries=bad)
        else:
            RedisTier.from_url(redis_url, max_entries=bad)
    assert info.value.field == "max_entries"


@pytest.mark.parametrize("bad", [0, -3, True, 2.0])
def test_limit_must_be_a_positive_int(tier: ShortTermTier, bad: Any) -> None:
    with pytest.raises(InvalidInput, match="limit"):
        tier.recent("acme", "agent-1", now=T0, limit=bad)


CALLS: dict[str, Callable[[ShortTermTier], object]] = {
    "put": lambda t: t.put(mem("x")),
    "recent": lambda t: t.recent("acme", "agent-1", now=T0),
    "remove": lambda t: t.remove("acme", "agent-1", [mem("x").id]),
    "replace": lambda t: t.replace("acme", "agent-1", [mem("y")]),
    "clear_tenant": lambda t: t.clear_tenant("acme"),
    "ping": lambda t: t.ping(),
}


@pytest.mark.parametrize("call", CALLS)
def test_a_closed_tier_refuses_every_call(new_tier: TierFactory, call: str) -> None:
    tier = new_tier()
    tier.put(mem("x"))
    tier.close()
    tier.close()  # twice is fine
    with pytest.raises(StoreUnavailable, match="closed"):
        CALLS[call](tier)


# -- Redis only: layout, no orphans ----------------------------------------------------------


def test_a_forgotten_tenant_leaves_no_key(
    redis_tier: RedisTier, raw: redis.Redis, prefix: str
) -> None:
    redis_tier.put(mem("a"))
    redis_tier.put(mem("b", tenant="other"))
    assert redis_tier.forget_tenant("acme") == 1
    left = list(raw.scan_iter(match=f"{prefix}:*"))
    assert left and all(key.startswith(redis_tier.keys.tenant("other")) for key in left)


def test_keys_are_built_from_encoded_parts() -> None:
    keys = KeyLayout(prefix="p").bucket("a:b", "c/d e")
    assert keys.all() == [
        "p:{a%3Ab}:c%2Fd%20e:recent",
        "p:{a%3Ab}:c%2Fd%20e:memories",
        "p:{a%3Ab}:c%2Fd%20e:expiry",
        "p:{a%3Ab}:buckets",
        "p:{a%3Ab}:c%2Fd%20e:state",
        "p:{a%3Ab}:generation",
    ]


def test_no_two_places_share_a_key() -> None:
    layout = KeyLayout()
    names = [layout.bucket(t, b).recent for t, b in PLACES] + [layout.index(t) for t, _ in PLACES]
    assert len(set(names)) == len({(t, b) for t, b in PLACES}) + len({t for t, _ in PLACES})


def stored(raw: redis.Redis, tier: RedisTier, bucket: str = "agent-1") -> dict[str, set[str]]:
    keys = tier.keys.bucket("acme", bucket)
    return {
        "recent": {str(m) for m in raw.zrange(keys.recent, 0, -1)},
        "memories": {str(f) for f in raw.hkeys(keys.memories)},
        "expiry": {str(m) for m in raw.zrange(keys.expiry, 0, -1)},
        "buckets": {str(b) for b in raw.smembers(keys.index)},
    }


def test_trimming_leaves_no_orphan_hash_fields_or_expiries(
    redis_tier: RedisTier, raw: redis.Redis
) -> None:
    for i in range(6):
        redis_tier.put(mem(f"m{i}", at=T0 + i, expires_at=T0 + 1000))
    newest = {mem(f"m{i}").id for i in (3, 4, 5)}
    assert stored(raw, redis_tier) == {
        "recent": newest,
        "memories": newest,
        "expiry": newest,
        "buckets": {"agent-1"},
    }


@pytest.mark.parametrize(
    "empty_it",
    [
        lambda t: t.remove("acme", "agent-1", [mem("a").id, mem("b").id]),
        lambda t: t.recent("acme", "agent-1", now=T0 + 10),
        lambda t: t.replace("acme", "agent-1", []),
        lambda t: t.clear_tenant("acme"),
    ],
    ids=["remove", "prune", "replace", "clear_tenant"],
)
def test_an_emptied_bucket_leaves_only_its_expiring_state_behind(
    redis_tier: RedisTier, raw: redis.Redis, prefix: str, empty_it: Callable[[RedisTier], object]
) -> None:
    redis_tier.put(mem("a", expires_at=T0 + 5))
    redis_tier.put(mem("b", at=T0 + 1, expires_at=T0 + 5))
    assert list(raw.scan_iter(match=f"{prefix}:*"))
    empty_it(redis_tier)
    state = redis_tier.keys.bucket("acme", "agent-1").state
    generation = redis_tier.keys.generation("acme")
    left = sorted(raw.scan_iter(match=f"{prefix}:*"))
    assert generation in left  # the tenant's generation outlives its buckets for a while
    assert 0 < raw.ttl(generation) <= STATE_TTL_S
    left.remove(generation)
    assert left in ([], sorted([state, redis_tier.keys.index("acme")]))
    if left:  # the version outlives the entries for a while, so fills stay safe
        assert 0 < raw.ttl(state) <= STATE_TTL_S


def test_works_with_a_client_that_decodes_responses(redis_url: str, prefix: str) -> None:
    with redis.Redis.from_url(redis_url, decode_responses=True) as client:
        tier = RedisTier(client, prefix=prefix)
        tier.put(mem("a"))
        tier.put(mem("b", agent="agent-2"))
        assert recent_keys(tier) == ["a"]
        assert tier.clear_tenant("acme") == 2
        tier.close()
        assert client.ping()  # the caller's client stays open


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda r, k: r.hset(k.memories, mem("a").id, "{not json"), "damaged entry"),
        (lambda r, k: r.hdel(k.memories, mem("a").id), "damaged entry"),
        (lambda r, k: r.set(k.recent, "x"), "WRONGTYPE"),
    ],
    ids=["bad-json", "missing-field", "wrong-type"],
)
def test_damaged_data_raises_store_unavailable(
    redis_tier: RedisTier, raw: redis.Redis, damage: Callable[..., object], message: str
) -> None:
    redis_tier.put(mem("a"))
    damage(raw, redis_tier.keys.bucket("acme", "agent-1"))
    with pytest.raises(StoreUnavailable, match=message):
        redis_tier.recent("acme", "agent-1", now=T0)


# -- Redis only: a server that is gone, bad URLs, no client library -------------------------


@pytest.mark.parametrize("call", CALLS)
def test_every_call_raises_store_unavailable_once_redis_is_gone(call: str) -> None:
    with running_redis() as server:
        tier = RedisTier.from_url(server.url)
        try:
            tier.put(mem("x"))
            server.stop()
            with pytest.raises(StoreUnavailable, match=f"127.0.0.1:{server.port}"):
                CALLS[call](tier)
        finally:
            tier.close()


def test_a_hung_redis_fails_after_the_timeout_instead_of_hanging() -> None:
    with running_redis() as server:
        tier = RedisTier.from_url(server.url, timeout=1.0)
        try:
            tier.put(mem("x"))
            os.kill(server.pid, signal.SIGSTOP)  # accepts connections, never answers
            try:
                with pytest.raises(StoreUnavailable, match="TimeoutError"):
                    tier.recent("acme", "agent-1", now=T0)
            finally:
                os.kill(server.pid, signal.SIGCONT)
        finally:
            tier.close()


@pytest.mark.parametrize(
    ("url", "error", "message"),
    [
        ("http://127.0.0.1:6379", ConfigError, "invalid Redis URL"),
        ("redis://127.0.0.1:99999/0", ConfigError, "Port out of range"),
        ("redis://[::1", ConfigError, "invalid Redis URL"),
        ("redis://127.0.0.1:{free}/0", StoreUnavailable, "127.0.0.1:{free}.*Check that Redis"),
    ],
)
def test_from_url_with_a_bad_url_or_port(url: str, error: type[Exception], message: str) -> None:
    free = free_port()
    with pytest.raises(error, match=message.format(free=free)):
        tier = RedisTier.from_url(url.format(free=free))
        try:
            tier.ping()
        finally:
            tier.close()


def test_error_messages_never_show_the_password() -> None:
    tier = RedisTier.from_url(f"redis://user:s3cret@127.0.0.1:{free_port()}/0")
    try:
        with pytest.raises(StoreUnavailable) as info:
            tier.ping()
    finally:
        tier.close()
    assert "s3cret" not in str(info.value)
    with pytest.raises(ConfigError) as bad:
        RedisTier.from_url("redis://user:s3cret@127.0.0.1:99999")
    assert "s3cret" not in str(bad.value)


def test_without_the_redis_library_the_error_names_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "redis", None)
    with pytest.raises(ConfigError, match=r'pip install "memstack\[redis\]"'):
        RedisTier.from_url("redis://127.0.0.1:6379/0")


def _odd_ids() -> list[Memory]:
    """Memories under ids of every UTF-8 length, shuffled, in three runs of equal
    ``updated_at``."""
    rng = random.Random(5)
    alphabet = ["a", "Z", "0", "~", "é", "ÿ", "Ā", "中", "\uffff", "😀", "\U0010fffd"]
    ids = sorted({"".join(rng.choices(alphabet, k=rng.randint(1, 4))) for _ in range(300)})
    rng.shuffle(ids)
    return [replace(mem("k"), id=i, updated_at=T0 + (n % 3)) for n, i in enumerate(ids)]


def test_ties_on_updated_at_go_by_id_in_utf8_byte_order_ascending() -> None:
    """As a Redis sorted set orders equal scores: by the members' bytes, ascending."""
    memories = _odd_ids()
    expected = sorted(memories, key=lambda m: (-m.updated_at, m.id.encode()))
    assert [m.id for m in newest_first(memories)] == [m.id for m in expected]


def test_both_tiers_order_odd_ids_as_newest_first_does(new_tier: TierFactory) -> None:
    memories = _odd_ids()
    tier = new_tier(max_entries=len(memories) - 50)
    for memory in memories:
        tier.put(memory)
    kept = newest_first(memories)[: tier.max_entries]
    assert [m.id for m in tier.recent("acme", "agent-1", now=T0)] == [m.id for m in kept]
    assert [m.id for m in tier.recent("acme", "agent-1", now=T0, limit=99)] == [
        m.id for m in kept[:99]
    ]
