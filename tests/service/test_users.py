"""UserMemories (issue 32): tenant isolation, idempotent turns, the secret filter on every
field, recall ranked exactly as in process, history, forget and erase; on every backend
(``records`` of tests/service/conftest.py: in memory, a real SQLite file, PostgreSQL)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from memstack import ManualClock
from memstack.embeddings import HashEmbedder
from memstack.errors import InvalidInput, NotFound
from memstack.longterm import Collection, LongTermMemory
from memstack.longterm.turns import Turn
from memstack.service.principal import Principal
from memstack.service.users import TurnIn, UserMemories
from memstack.storage import Namespace, RecordStore
from tests.longterm.secret_corpus import ALL_SECRETS

A = Principal(tenant="acme", long_term=True)
B = Principal(tenant="globex", long_term=True)
DAY = 86_400.0
T0 = 1_779_000_000.0

CONVERSATION = [
    ("alice", "I adopted a dog named Biscuit last spring.", "s1"),
    ("bob", "What breed is Biscuit?", "s1"),
    ("alice", "A beagle, and she loves long walks by the river.", "s1"),
    ("bob", "How long have you been married?", "s2"),
    ("alice", "Five years already, we met in Lisbon.", "s2"),
    ("bob", "Do you still play the violin?", "s2"),
    ("alice", "Every Sunday with a quartet downtown.", "s3"),
    ("bob", "Which pieces are you rehearsing?", "s3"),
    ("alice", "Dvorak's American quartet, the second movement.", "s3"),
]
QUERIES = ["dog breed", "married how long", "violin quartet Sunday", "Lisbon", "river walks"]


def turns_in(prefix: str = "t") -> list[TurnIn]:
    return [
        TurnIn(speaker=speaker, text=text, session_id=session, time=T0 + i * DAY, id=f"{prefix}{i}")
        for i, (speaker, text, session) in enumerate(CONVERSATION)
    ]


@pytest.fixture
def users(records: RecordStore, clock: ManualClock) -> UserMemories:
    return UserMemories(records=records, embedder=HashEmbedder(), clock=clock)


async def test_the_same_user_id_under_two_tenants_shares_nothing(users: UserMemories):
    await users.add_turns(A, "u1", turns_in())
    await users.add_turns(
        B, "u1", [TurnIn(speaker="carol", text="I live in Oslo.", session_id="x")]
    )
    fact = await users.remember(A, "u1", "The user is allergic to peanuts.")
    assert fact.outcome == "stored" and fact.id is not None

    b_texts = [m.text for m in await users.recall(B, "u1", "dog Biscuit peanuts", k=20)]
    assert b_texts == ["carol: I live in Oslo."]
    assert len((await users.memories(B, "u1")).items) == 1
    assert len(await users.export(B, "u1")) == 1
    with pytest.raises(NotFound):
        await users.history(B, "u1", fact.id)
    assert await users.forget(B, "u1", fact.id) is False
    assert [v.id for v in await users.history(A, "u1", fact.id)] == [fact.id]

    assert await users.erase(A, "u1") == len(CONVERSATION) + 1
    assert (await users.memories(A, "u1")).items == []
    assert [m.text for m in await users.recall(B, "u1", "Oslo")] == ["carol: I live in Oslo."]


def test_a_tenants_user_lives_under_its_own_root(users: UserMemories):
    name = users.memory(A, "u1").namespace
    assert name == Namespace("users", "acme", "u1", "chat").encode()
    assert name != users.memory(B, "u1").namespace
    assert name != Collection(user_id="u1").name  # never the library's ltm/ collection


async def test_a_turn_sent_again_with_its_id_is_a_duplicate(
    users: UserMemories, records: RecordStore
):
    first = await users.add_turns(A, "u1", turns_in()[:2])
    assert [t.outcome for t in first.turns] == ["stored", "stored"]
    namespace = users.memory(A, "u1").namespace

    def stored() -> list[tuple[str, float, object]]:
        return [(r.text, r.created_at, r.metadata) for r in records.get(namespace, ["t0", "t1"])]

    before = stored()
    changed = replace(turns_in()[0], text="something else entirely")
    again = await users.add_turns(A, "u1", [changed, *turns_in()[1:3], turns_in()[2]])
    assert [(t.id, t.outcome) for t in again.turns] == [
        ("t0", "duplicate"),
        ("t1", "duplicate"),
        ("t2", "stored"),
        ("t2", "duplicate"),
    ]
    assert stored() == before  # left as stored (only their context grew a neighbour)
    assert records.count(namespace) == 3


async def test_turns_without_ids_get_fresh_ones(users: UserMemories):
    sent = [TurnIn(speaker="alice", text=f"fact number {i}", session_id="s") for i in range(3)]
    done = await users.add_turns(A, "u1", sent)
    ids = [t.id for t in done.turns]
    assert len(set(ids)) == 3 and all(t.outcome == "stored" for t in done.turns)
    assert sorted(ids) == sorted(i.id for i in (await users.memories(A, "u1")).items)


async def test_fresh_ids_sort_in_the_order_the_turns_were_stored(
    users: UserMemories, clock: ManualClock
):
    # Ties in recall are ranked by id: ids that sort as stored make equal scores rank in
    # the order the turns were said, the same on every server and in every run.
    ids: list[str] = []
    for call in range(3):
        sent = [
            TurnIn(speaker="alice", text=f"call {call} fact {i}", session_id="s") for i in range(20)
        ]
        ids += [t.id for t in (await users.add_turns(A, "u1", sent)).turns]
        clock.advance(0.001)
    assert ids == sorted(ids) and len(set(ids)) == 60


SECRET = next(text for label, text in ALL_SECRETS if "openai" in label.lower())
FIELDS = {
    "speaker": lambda t: replace(t, speaker=f"alice {SECRET}"),
    "text": lambda t: replace(t, text=f"my key is {SECRET}"),
    "session_id": lambda t: replace(t, session_id=SECRET),
    "id": lambda t: replace(t, id=SECRET),
    "metadata.note": lambda t: replace(t, metadata={"note": f"key {SECRET}"}),
    "metadata.deep[0]": lambda t: replace(t, metadata={"deep": [SECRET]}),
    "metadata": lambda t: replace(t, metadata={SECRET: "a key as a key"}),
}


@pytest.mark.parametrize("field", FIELDS)
async def test_the_secret_filter_refuses_a_turn_by_any_field(
    users: UserMemories, records: RecordStore, field: str
):
    clean, dirty = turns_in()[:2]
    done = await users.add_turns(A, "u1", [clean, FIELDS[field](dirty)])
    kept, refused = done.turns
    assert kept.outcome == "stored"
    assert refused.outcome == "refused" and refused.reason is not None
    assert f"turns[1].{field}" in refused.reason and SECRET not in refused.reason
    assert SECRET not in refused.id
    namespace = users.memory(A, "u1").namespace
    stored = records.list(namespace, limit=100)
    assert [r.id for r in stored] == ["t0"]
    assert all(SECRET not in repr(r) for r in stored)  # not even in a neighbour's context


@pytest.mark.parametrize("label,secret", ALL_SECRETS[:12])
async def test_no_credential_of_the_corpus_is_stored(
    users: UserMemories, records: RecordStore, label: str, secret: str
):
    done = await users.add_turns(
        A, "u1", [TurnIn(speaker="alice", text=f"here: {secret}", session_id="s")]
    )
    assert done.turns[0].outcome == "refused", label
    fact = await users.remember(A, "u1", "The user uses a key.", metadata={"k": secret})
    assert fact.outcome == "refused" and fact.id is None
    assert records.count(users.memory(A, "u1").namespace) == 0


async def test_a_bad_turn_refuses_the_whole_call_naming_the_field(users: UserMemories):
    bad = replace(turns_in()[1], text="   ")
    with pytest.raises(InvalidInput) as raised:
        await users.add_turns(A, "u1", [turns_in()[0], bad])
    assert raised.value.field == "turns[1].text"
    with pytest.raises(InvalidInput) as raised:
        await users.add_turns(A, "u/../x y", turns_in()[:1])
    assert raised.value.field == "user_id"
    with pytest.raises(InvalidInput) as raised:
        await users.add_turns(A, "u1", [])
    assert raised.value.field == "turns"
    assert (await users.memories(A, "u1")).items == []


async def test_recall_ranks_exactly_as_a_long_term_memory_in_process(
    users: UserMemories, records: RecordStore, clock: ManualClock
):
    in_process = LongTermMemory(
        collection=Collection(user_id="u1"), store=records, embedder=HashEmbedder(), clock=clock
    )
    await in_process.remember_turns(
        [
            Turn(speaker=t.speaker, text=t.text, session_id=t.session_id, time=t.time or 0, id=t.id)
            for t in turns_in()
        ]
    )
    await users.add_turns(A, "u1", turns_in())
    for fact in ("The user prefers tea to coffee.", "The user works as a luthier."):
        await in_process.remember(fact)
        await users.remember(A, "u1", fact)
    for query in QUERIES:
        for k in (3, 10):
            served = await users.recall(A, "u1", query, k=k, touch=False)
            local = await in_process.recall(query, k, touch=False)
            assert [(m.text, m.score, m.scores) for m in served] == [
                (m.text, m.score, m.scores) for m in local
            ]
            turn_ids = [m.id for m in served if m.kind == "event"]
            assert turn_ids == [m.id for m in local if m.kind == "event"]
            assert turn_ids  # the turns keep the ids they were sent with


async def test_the_current_session_gets_the_context_bonus_not_a_filter(users: UserMemories):
    await users.add_turns(A, "u1", turns_in())
    plain = await users.recall(A, "u1", "Biscuit the beagle", k=20, touch=False)
    in_s3 = await users.recall(A, "u1", "Biscuit the beagle", k=20, touch=False, session_id="s3")
    assert {m.id for m in in_s3} == {m.id for m in plain}  # nothing is left out
    assert plain[0].metadata["session_id"] == "s1"  # the query matches s1's turns best
    plain_s3 = [m.scores.session for m in plain if m.metadata["session_id"] == "s3"]
    favoured = [m.scores.session for m in in_s3 if m.metadata["session_id"] == "s3"]
    best = max(m.scores.session for m in plain)
    assert favoured == [best] * 3 and all(b < best for b in plain_s3)
    rank = {m.id: i for i, m in enumerate(in_s3)}
    plain_rank = {m.id: i for i, m in enumerate(plain)}
    assert all(rank[m.id] <= plain_rank[m.id] for m in in_s3 if m.metadata["session_id"] == "s3")


async def test_context_is_the_recalled_block(users: UserMemories):
    await users.add_turns(A, "u1", turns_in())
    block = await users.context(A, "u1", "dog breed", k=3, min_score=0)  # 0: all k, no cut
    assert block.startswith("<recalled-memories>") and block.endswith("</recalled-memories>")
    assert "alice: A beagle" in block
    assert await users.context(A, "nobody", "dog breed") == ""


async def test_history_forget_and_erase(users: UserMemories, records: RecordStore):
    old = await users.remember(A, "u1", "The user lives in Lisbon.")
    assert old.id is not None
    new = await users.remember(A, "u1", "The user lives in Berlin.", supersedes=[old.id])
    assert new.id is not None
    versions = await users.history(A, "u1", new.id)
    assert [(v.text, v.superseded_by) for v in versions] == [
        ("The user lives in Lisbon.", new.id),
        ("The user lives in Berlin.", None),
    ]
    current = (await users.memories(A, "u1")).items
    every = (await users.memories(A, "u1", include_superseded=True)).items
    assert [m.id for m in current] == [new.id] and len(every) == 2
    same = await users.remember(A, "u1", "The user lives in Berlin.")
    assert (same.outcome, same.id) == ("duplicate", new.id)

    assert await users.forget(A, "u1", new.id) is True
    assert await users.forget(A, "u1", new.id) is False
    with pytest.raises(NotFound):
        await users.history(A, "u1", new.id)
    await users.add_turns(A, "u1", turns_in())
    assert await users.erase(A, "u1") == 1 + len(CONVERSATION)  # the closed Lisbon version too
    assert records.count(users.memory(A, "u1").namespace) == 0
    assert await users.erase(A, "u1") == 0


async def test_memories_page_through_every_memory_once(users: UserMemories):
    await users.add_turns(A, "u1", turns_in())
    seen: list[str] = []
    page = await users.memories(A, "u1", limit=4)
    while True:
        seen += [m.id for m in page.items]
        if page.next_cursor is None:
            break
        page = await users.memories(A, "u1", limit=4, cursor=page.next_cursor)
    assert sorted(seen) == sorted(f"t{i}" for i in range(len(CONVERSATION)))
    assert seen[0] == f"t{len(CONVERSATION) - 1}"  # newest first
    with pytest.raises(InvalidInput) as raised:
        await users.memories(A, "u1", cursor="not a cursor")
    assert raised.value.field == "cursor"


async def test_a_user_id_with_a_slash_is_refused_naming_the_fix(users: UserMemories):
    with pytest.raises(InvalidInput, match="use ':'") as raised:
        await users.recall(A, "org/alice", "dog")
    assert raised.value.field == "user_id"
    with pytest.raises(InvalidInput, match="use ':'"):
        await users.add_turns(A, "org/alice", turns_in())
    assert (await users.users(A)).users == []


async def test_users_lists_the_tenants_users_only(users: UserMemories):
    await users.add_turns(A, "u1", turns_in())
    await users.remember(A, "org:bob", "The user is allergic to peanuts.")
    await users.add_turns(B, "u9", turns_in())
    assert (await users.users(A)).users == ["org:bob", "u1"]
    first = await users.users(A, limit=1)
    assert first.users == ["org:bob"] and first.next_cursor is not None
    rest = await users.users(A, limit=1, cursor=first.next_cursor)
    assert rest.users == ["u1"] and rest.next_cursor is None
    with pytest.raises(InvalidInput) as raised:
        await users.users(A, limit=0)
    assert raised.value.field == "limit"
