"""The typed client's users' conversation memory (issue 32) against a real server over
real HTTP: every method, recall ranked as the service ranks it in process, extraction
jobs, the opt-in, tenant isolation and errors as memstack errors."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from memstack import InvalidInput, NotFound
from memstack.client import AsyncMemoryClient, AuthError, MemoryClient, types
from memstack.embeddings import HashEmbedder
from memstack.longterm.calibration import CONTEXT_MIN_SCORE
from memstack.longterm.reconcile import RECONCILE_PROMPT
from memstack.longterm.render import render_recalled
from memstack.providers.base import Message
from memstack.providers.scripted import ScriptedProvider
from memstack.transports.user_schemas import recalled_out
from memstack.wiring import Services, open_services
from tests.server.conftest import LiveServer, serve_in_thread

QUERY = "When did Caroline move to Berlin?"
TURNS: list[types.TurnIn] = [
    {
        "id": "t1",
        "speaker": "Caroline",
        "text": "I moved to Berlin last spring.",
        "session_id": "s1",
        "time": "2026-05-08T09:00:00Z",
        "metadata": {"channel": "web", "tags": ["move"]},
    },
    {
        "id": "t2",
        "speaker": "Melanie",
        "text": "How do you like the city?",
        "session_id": "s1",
        "time": 1778230830,
    },
    {
        "id": "t3",
        "speaker": "Caroline",
        "text": "I love the lakes.",
        "session_id": "s1",
        "time": "2026-05-08T09:01:00Z",
    },
]
FACTS = ["Caroline lives in Berlin.", "Caroline swims in the lakes."]


@pytest.fixture
def acme(services: Services) -> str:
    return services.keys.create(tenant="acme", long_term=True)[0]


@pytest.fixture
def other(services: Services) -> str:
    return services.keys.create(tenant="other", long_term=True)[0]


def _without_scores(results: Sequence[Any]) -> list[dict[str, Any]]:
    return [{k: v for k, v in r.items() if k not in ("score", "scores")} for r in results]


async def test_recall_over_the_client_ranks_as_the_service_in_process(
    live: LiveServer, services: Services, acme: str
):
    with MemoryClient(live.url, api_key=acme) as client:
        client.add_turns("u1", TURNS)
        client.remember("u1", FACTS[0], kind="identity")
        got = client.recall("u1", QUERY, touch=False)["results"]
        caller = services.keys.authenticate(acme)
        assert caller is not None
        found = await services.users.recall(caller, "u1", QUERY, touch=False)
        expected = recalled_out(found).model_dump(mode="json")["results"]
        block = client.recalled_context("u1", QUERY)["block"]  # touches what it recalls
    assert len(got) == 4 and got[0]["id"] == "t1"
    assert _without_scores(got) == _without_scores(expected)  # same order, same fields
    for mine, theirs in zip(got, expected, strict=True):  # recency decays in between
        scores = dict(mine["scores"])  # a carried match's id is no number to approximate
        assert scores.pop("inherited_from") == theirs["scores"].pop("inherited_from")
        assert scores == pytest.approx(theirs["scores"], rel=1e-6)
    # The block of the same ranking, cut at the blocks' default threshold.
    assert block == render_recalled([m for m in found if m.scores.calibrated >= CONTEXT_MIN_SCORE])


def test_sync_client_stores_recalls_pages_and_forgets(live: LiveServer, acme: str):
    with MemoryClient(live.url, api_key=acme) as client:
        secret: types.TurnIn = {
            "speaker": "Caroline",
            "text": "AKIAIOSFODNN7Q3ZJ5WB",
            "session_id": "s1",
        }
        added = client.add_turns("u1", [*TURNS, secret])
        assert [t["outcome"] for t in added["turns"]] == ["stored"] * 3 + ["refused"]
        assert [t["id"] for t in added["turns"][:3]] == ["t1", "t2", "t3"]
        assert "secret" in (added["turns"][3]["reason"] or "") and added["job_id"] is None
        again = client.add_turns("u1", TURNS[:1])
        assert [(t["id"], t["outcome"]) for t in again["turns"]] == [("t1", "duplicate")]
        chat = client.add_turns("u1", [{"role": "user", "content": "Hello!"}], session_id="s2")
        assert [t["outcome"] for t in chat["turns"]] == ["stored"]

        first = client.recall("u1", QUERY)["results"][0]
        assert (first["id"], first["metadata"]) == ("t1", {"channel": "web", "tags": ["move"]})
        assert (first["speaker"], first["session_id"], first["turn_seq"]) == ("Caroline", "s1", 0)
        assert first["valid_from"] == "2026-05-08T09:00:00.000Z"
        in_s2 = client.recall("u1", "Hello", session_id="s2")["results"]
        assert in_s2[0]["text"] == "user: Hello!" and len(in_s2) > 1  # favoured, not alone
        assert in_s2[0]["scores"]["session"] > 0
        block = client.recalled_context("u1", QUERY, k=1)["block"]
        assert block.startswith("<recalled-memories>") and "Berlin" in block
        assert "lakes" not in block, block  # k=1: the best one only

        fact = client.remember("u1", FACTS[0], kind="identity", metadata={"src": "chat"})
        assert fact["outcome"] == "stored" and fact["id"] is not None
        assert client.remember("u1", FACTS[0])["id"] == fact["id"]  # a duplicate
        moved_text = "Caroline lives in Oslo."
        moved = client.remember("u1", moved_text, supersedes=[fact["id"]])
        old, new = client.user_history("u1", fact["id"])["versions"]  # the chain, oldest first
        assert (old["id"], new["id"], new["text"]) == (fact["id"], moved["id"], moved_text)
        assert (old["superseded_by"], old["metadata"]) == (moved["id"], {"src": "chat"})
        assert (old["valid_to"], new["valid_to"]) == (new["valid_from"], None)

        seen: list[str] = []
        cursor: str | None = None
        while True:
            page = client.user_memories("u1", limit=2, cursor=cursor)
            seen += [m["id"] for m in page["memories"]]
            if (cursor := page["next_cursor"]) is None:
                break
        assert len(seen) == len(set(seen)) == 5  # 4 turns and the current fact
        assert {"t1", "t2", "t3", moved["id"]} <= set(seen) and fact["id"] not in seen
        every = client.user_memories("u1", include_superseded=True, limit=100)["memories"]
        assert fact["id"] in [m["id"] for m in every]

        assert client.forget("u1", "t2") is None
        with pytest.raises(NotFound) as missing:
            client.forget("u1", "t2")
        assert missing.value.field == "memory_id"
        with pytest.raises(NotFound):
            client.user_history("u1", "t2")


def test_export_erase_and_import_give_the_user_back(live: LiveServer, acme: str):
    with MemoryClient(live.url, api_key=acme) as client:
        client.add_turns("u1", TURNS)
        fact = client.remember("u1", FACTS[0])
        client.remember("u1", FACTS[1], supersedes=[str(fact["id"])])
        before = client.recall("u1", QUERY, touch=False)["results"]
        exported = client.export_user("u1")["memories"]
        assert len(exported) == 5  # three turns, the closed fact and the one replacing it

        assert client.erase_user("u1")["deleted"] >= len(exported)
        assert client.user_memories("u1")["memories"] == []
        assert client.recall("u1", QUERY)["results"] == []

        assert client.import_user("u1", exported) == {"stored": 5, "skipped": 0}
        assert client.import_user("u1", exported) == {"stored": 0, "skipped": 5}
        after = client.recall("u1", QUERY, touch=False)["results"]
        assert [r["id"] for r in after] == [r["id"] for r in before]
        assert client.export_user("u1")["memories"] == exported
        replaced = client.import_user("u1", exported, replace=True)
        assert replaced["stored"] == 5


async def test_async_client_does_the_same(live: LiveServer, acme: str):
    async with AsyncMemoryClient(live.url, api_key=acme) as client:
        added = await client.add_turns("u1", TURNS)
        assert [t["outcome"] for t in added["turns"]] == ["stored"] * 3
        found = await client.recall("u1", QUERY, k=2)
        assert [r["id"] for r in found["results"]][:1] == ["t1"] and len(found["results"]) == 2
        block = (await client.recalled_context("u1", QUERY))["block"]
        assert "Caroline: I moved to Berlin last spring." in block
        fact = await client.remember("u1", FACTS[0])
        assert len((await client.user_history("u1", str(fact["id"])))["versions"]) == 1
        assert len((await client.user_memories("u1"))["memories"]) == 4
        exported = (await client.export_user("u1"))["memories"]
        await client.forget("u1", "t3")
        assert (await client.import_user("u1", exported))["stored"] == 1  # t3 came back
        with pytest.raises(NotFound) as missing:
            await client.get_job("u1", "job_nope")
        assert missing.value.field == "job_id"
        assert (await client.erase_user("u1"))["deleted"] == 4


def test_each_tenant_has_its_own_users(live: LiveServer, acme: str, other: str):
    with MemoryClient(live.url, api_key=acme) as client:
        client.add_turns("u1", TURNS)
    with MemoryClient(live.url, api_key=other) as client:  # the same user id, another tenant
        assert client.recall("u1", QUERY)["results"] == []
        assert client.recalled_context("u1", QUERY)["block"] == ""
        assert client.user_memories("u1")["memories"] == []
        assert client.export_user("u1")["memories"] == []
        with pytest.raises(NotFound):
            client.forget("u1", "t1")
        with pytest.raises(NotFound):
            client.user_history("u1", "t1")
        assert client.erase_user("u1")["deleted"] == 0
        mine = client.add_turns("u1", TURNS[:1])
        assert [t["outcome"] for t in mine["turns"]] == ["stored"]  # not acme's t1
    with MemoryClient(live.url, api_key=acme) as client:
        assert len(client.user_memories("u1")["memories"]) == 3


def test_the_opt_in_the_veto_and_bad_calls(live: LiveServer, services: Services, acme: str):
    off = services.keys.create(tenant="acme")[0]  # without the long-term right
    with MemoryClient(live.url, api_key=off) as client:
        for call in (
            lambda: client.add_turns("u1", TURNS),
            lambda: client.recall("u1", QUERY),
            lambda: client.user_memories("u1"),
            lambda: client.erase_user("u1"),
        ):
            with pytest.raises(AuthError) as refused:
                call()
            assert refused.value.status == 403
            assert "MEMSTACK_MEMORY_ENABLED=1" in str(refused.value)
        vetoed = client.add_turns("u1", TURNS, memory_enabled=False)
        assert [t["outcome"] for t in vetoed["turns"]] == ["skipped"] * 3
    with MemoryClient(live.url, api_key=acme) as client:
        assert client.remember("u1", FACTS[0], memory_enabled=False)["outcome"] == "skipped"
        client.add_turns("u1", TURNS)
        assert client.recall("u1", QUERY, memory_enabled=False) == {"results": []}
        assert client.recalled_context("u1", QUERY, memory_enabled=False) == {"block": ""}
        assert client.recall("u1", QUERY)["results"] != []
        bad: list[tuple[Any, str]] = [
            (lambda: client.recall("u1", QUERY, k=0), "k"),
            (
                lambda: client.add_turns("u1", [{"speaker": "A", "text": "hi"}]),
                "turns.0.session_id",
            ),
            (lambda: client.remember("u1", "x", kind="rumour"), "kind"),  # type: ignore[arg-type]
            (lambda: client.remember("u1", "x", supersedes="mem"), "supersedes"),
            (lambda: client.recall("", QUERY), "user_id"),
            (lambda: client.user_memories("u1", cursor="nope"), "cursor"),
        ]
        for call, field in bad:
            with pytest.raises(InvalidInput) as wrong:
                call()
            assert wrong.value.field == field, (field, wrong.value)


def _extractor(messages: Sequence[Message]) -> str:
    """Answers the extraction prompt with ``FACTS``, reconciliation with ``add``s."""
    if messages[0].content == RECONCILE_PROMPT:
        decisions = [{"candidate": i, "action": "add"} for i in range(len(FACTS))]
        return json.dumps({"decisions": decisions})
    return json.dumps({"memories": [{"text": f, "kind": "fact", "importance": 0.8} for f in FACTS]})


@pytest.fixture
def extracting(tmp_path: Path) -> Iterator[tuple[LiveServer, str]]:
    """A server with an extraction model (a scripted one), and a long-term key."""
    services = open_services(
        store_url=f"sqlite:///{tmp_path / 'jobs.db'}",
        redis_url=None,
        embedder=HashEmbedder(),
        extraction_provider=ScriptedProvider(responder=_extractor),
        extraction_model="extractor-1",
    )
    key = services.keys.create(tenant="acme", long_term=True)[0]
    running = serve_in_thread(services)
    yield running, key
    running.server.should_exit = True
    running.thread.join(timeout=10)
    services.close()


def test_get_job_follows_the_extraction_of_the_turns(extracting: tuple[LiveServer, str]):
    server, key = extracting
    with MemoryClient(server.url, api_key=key) as client:
        added = client.add_turns("u1", TURNS)
        job_id = added["job_id"]
        assert job_id is not None
        job = client.get_job("u1", job_id)
        deadline = time.monotonic() + 30
        while job["state"] in ("queued", "running") and time.monotonic() < deadline:
            time.sleep(0.05)
            job = client.get_job("u1", job_id)
        assert (job["id"], job["state"], job["error"], len(job["stored"])) == (
            job_id,
            "done",
            None,
            2,
        )
        facts = [m for m in client.user_memories("u1")["memories"] if m["kind"] == "fact"]
        assert sorted(m["id"] for m in facts) == sorted(job["stored"])
        assert {(m["provenance"], m["provenance_detail"]) for m in facts} == {
            ("extracted", "extractor-1")
        }
        with pytest.raises(NotFound):
            client.get_job("u2", job_id)  # another user's job
