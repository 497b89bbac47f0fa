"""A user's export restored (issue 32): every turn, fact and version comes back as it
was, recall ranks the restored user as the original, and a bad item writes nothing."""

from __future__ import annotations

from collections.abc import Mapping
from typing import cast

import pytest

from memstack import ManualClock
from memstack.embeddings import HashEmbedder
from memstack.errors import InvalidInput
from memstack.service.principal import Principal
from memstack.service.users import TurnIn, UserMemories
from memstack.storage import RecordStore
from tests.longterm.secret_corpus import ALL_SECRETS

A = Principal(tenant="acme", long_term=True)
B = Principal(tenant="globex", long_term=True)
SECRET = ALL_SECRETS[0][1]


@pytest.fixture
def users(records: RecordStore, clock: ManualClock) -> UserMemories:
    return UserMemories(records=records, embedder=HashEmbedder(), clock=clock)


async def filled(users: UserMemories) -> None:
    turns = [
        TurnIn(speaker="alice", text=text, session_id="s1", time=1_779_000_000.0 + i, id=f"t{i}")
        for i, text in enumerate(
            ["I moved to Lisbon in May.", "Where do you work now?", "At a violin workshop."]
        )
    ]
    await users.add_turns(A, "u1", turns)
    old = await users.remember(A, "u1", "The user lives in Porto.", metadata={"src": "chat"})
    assert old.id is not None
    await users.remember(A, "u1", "The user lives in Lisbon.", supersedes=[old.id])


async def test_an_export_restores_as_it_was_under_another_tenant(users: UserMemories):
    await filled(users)
    exported = await users.export(A, "u1")
    times = [cast(float, m["created_at"]) for m in exported]
    assert len(exported) == 5 and times == sorted(times)
    assert sum(1 for m in exported if m["valid_to"] is not None) == 1

    done = await users.restore(B, "u2", exported)
    assert (done.stored, done.skipped) == (5, 0)
    assert await users.export(B, "u2") == exported
    for query in ("where does the user live", "violin work"):
        original = await users.recall(A, "u1", query, touch=False)
        restored = await users.recall(B, "u2", query, touch=False)
        assert [m.id for m in restored] == [m.id for m in original]
        # the keyword index of a fresh namespace may sum its statistics in another order
        assert [m.score for m in restored] == pytest.approx([m.score for m in original])

    again = await users.restore(B, "u2", exported)
    assert (again.stored, again.skipped) == (0, 5)
    replaced = await users.restore(B, "u2", exported, replace=True)
    assert (replaced.stored, replaced.skipped) == (5, 0)


async def test_a_restore_survives_erasing_the_user(users: UserMemories):
    await filled(users)
    exported = await users.export(A, "u1")
    assert await users.erase(A, "u1") == 5
    assert (await users.restore(A, "u1", exported)).stored == 5
    assert await users.export(A, "u1") == exported


@pytest.mark.parametrize(
    "change,field",
    [
        ({"text": f"key {SECRET}"}, "memories[1].text"),
        ({"metadata": {"note": SECRET}}, "memories[1].metadata.note"),
        ({"context": SECRET}, "memories[1].context"),
        ({"text": ""}, "memories[1].text"),
        ({"kind": "gossip"}, "memories[1].kind"),
        ({"created_at": "yesterday"}, "memories[1].created_at"),
        ({"importance": 3}, "memories[1].importance"),
        ({"provenance": "rumour"}, "memories[1].provenance"),
    ],
)
async def test_a_bad_item_writes_nothing(
    users: UserMemories, change: dict[str, object], field: str
):
    await filled(users)
    exported = await users.export(A, "u1")
    bad: list[Mapping[str, object]] = [exported[0], {**exported[1], **change}]
    with pytest.raises(InvalidInput) as raised:
        await users.restore(B, "u2", bad)
    assert raised.value.field == field
    assert SECRET not in str(raised.value)
    assert await users.export(B, "u2") == []
