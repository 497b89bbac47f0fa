"""Extraction jobs of UserMemories (issue 32): queued by a write of turns, run after it
with a scripted extraction model (a real ``ChatModel``), recorded in the store so any
process answers, done with what they stored or failed with the error."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Sequence

import pytest

from memstack import ManualClock
from memstack.embeddings import HashEmbedder
from memstack.errors import NotFound, ProviderError
from memstack.longterm.reconcile import RECONCILE_PROMPT
from memstack.providers.base import Message, StreamEvent, TextDelta
from memstack.providers.scripted import ScriptedProvider
from memstack.service.principal import Principal
from memstack.service.user_jobs import JOB_DEADLINE_S
from memstack.service.users import TurnIn, UserMemories
from memstack.storage import RecordStore
from memstack.tools import ProviderTool

A = Principal(tenant="acme", long_term=True)
B = Principal(tenant="globex", long_term=True)
FACTS = ["The user has a beagle named Biscuit.", "The user plays the violin on Sundays."]
TURNS = [
    TurnIn(speaker="alice", text="I have a beagle called Biscuit.", session_id="s1", id="t0"),
    TurnIn(speaker="assistant", text="Lovely! Any hobbies?", session_id="s1", id="t1"),
    TurnIn(speaker="alice", text="I play the violin every Sunday.", session_id="s1", id="t2"),
]


def extractor(messages: Sequence[Message]) -> str:
    """Answers the extraction prompt with ``FACTS`` and reconciliation with ``add``s."""
    if messages[0].content == RECONCILE_PROMPT:
        decisions = [{"candidate": i, "action": "add"} for i in range(len(FACTS))]
        return json.dumps({"decisions": decisions})
    return json.dumps({"memories": [{"text": f, "kind": "fact", "importance": 0.8} for f in FACTS]})


def failing(messages: Sequence[Message]) -> str:
    raise ProviderError("scripted: rate limited, retry in 20 s", provider="scripted", status=429)


def served(records: RecordStore, clock: ManualClock, model: ScriptedProvider) -> UserMemories:
    return UserMemories(
        records=records,
        embedder=HashEmbedder(),
        extraction_provider=model,
        extraction_model="extractor-1",
        clock=clock,
    )


async def test_a_job_mines_the_stored_turns_and_records_what_it_stored(
    records: RecordStore, clock: ManualClock
):
    model = ScriptedProvider(responder=extractor)
    users = served(records, clock, model)
    done = await users.add_turns(A, "u1", TURNS)
    assert [t.outcome for t in done.turns] == ["stored"] * 3 and done.job_id is not None
    await users.wait_for_jobs()

    other_worker = served(records, clock, ScriptedProvider())  # reads the record only
    job = await other_worker.job(A, "u1", done.job_id)
    assert (job.id, job.state, job.error, len(job.stored)) == (done.job_id, "done", None, 2)
    facts = {m.id: m for m in (await users.memories(A, "u1")).items if m.kind == "fact"}
    assert sorted(facts) == sorted(job.stored)
    assert sorted(m.text for m in facts.values()) == sorted(FACTS)
    assert {(m.provenance, m.provenance_detail) for m in facts.values()} == {
        ("extracted", "extractor-1")
    }
    prompt = model.calls[0].messages[-1].content
    assert "User: alice: I have a beagle called Biscuit." in prompt
    assert "Assistant: Lovely! Any hobbies?" in prompt


async def test_a_failing_model_fails_the_job_not_the_write(
    records: RecordStore, clock: ManualClock
):
    users = served(records, clock, ScriptedProvider(responder=failing))
    done = await users.add_turns(A, "u1", TURNS)
    assert [t.outcome for t in done.turns] == ["stored"] * 3 and done.job_id is not None
    await users.wait_for_jobs()
    job = await users.job(A, "u1", done.job_id)
    assert job.state == "failed" and job.stored == []
    assert job.error is not None and "ProviderError" in job.error and "rate limited" in job.error
    assert len((await users.memories(A, "u1")).items) == 3  # the turns stay


async def test_a_job_is_only_its_users(records: RecordStore, clock: ManualClock):
    users = served(records, clock, ScriptedProvider(responder=extractor))
    done = await users.add_turns(A, "u1", TURNS)
    await users.wait_for_jobs()
    assert done.job_id is not None
    for caller, user in ((B, "u1"), (A, "u2")):
        with pytest.raises(NotFound) as raised:
            await users.job(caller, user, done.job_id)
        assert raised.value.field == "job_id"
    with pytest.raises(NotFound):
        await users.job(A, "u1", "no-such-job")
    assert await users.erase(A, "u1") == 3 + len(FACTS) + 1  # turns, facts and the job
    with pytest.raises(NotFound):
        await users.job(A, "u1", done.job_id)


async def test_no_job_without_a_model_or_without_a_stored_turn(
    records: RecordStore, clock: ManualClock
):
    plain = UserMemories(records=records, embedder=HashEmbedder(), clock=clock)
    assert (await plain.add_turns(A, "u1", TURNS)).job_id is None
    model = ScriptedProvider(responder=extractor)
    users = served(records, clock, model)
    again = await users.add_turns(A, "u1", TURNS)  # every turn a duplicate
    vetoed = await users.add_turns(A, "u2", TURNS, memory_enabled=False)
    assert (again.job_id, vetoed.job_id) == (None, None)
    await users.wait_for_jobs()
    assert model.calls == []


class _Stalled(ScriptedProvider):
    """A model that never answers until cancelled: a job caught mid-flight."""

    async def stream(
        self,
        messages: Sequence[Message],
        *,
        model: str,
        tools: Sequence[ProviderTool] = (),
        json_output: bool = False,
        max_tokens: int | None = None,
    ) -> AsyncIterator[StreamEvent]:
        await asyncio.Event().wait()
        yield TextDelta(content="never")


async def test_a_job_stopped_with_its_server_reads_as_interrupted(
    records: RecordStore, clock: ManualClock
):
    users = served(records, clock, _Stalled())
    done = await users.add_turns(A, "u1", TURNS)
    assert done.job_id is not None
    await asyncio.sleep(0.05)
    while (await users.job(A, "u1", done.job_id)).state == "queued":
        await asyncio.sleep(0.01)
    await users.stop_jobs()
    job = await served(records, clock, ScriptedProvider()).job(A, "u1", done.job_id)
    assert job.state == "failed" and job.error is not None and "interrupted" in job.error


async def test_a_job_whose_worker_died_reads_as_interrupted_after_its_deadline(
    records: RecordStore, clock: ManualClock
):
    dead = served(records, clock, ScriptedProvider())
    job = await asyncio.to_thread(dead.jobs.create, "acme", "u1")  # queued, never run
    reader = served(records, clock, ScriptedProvider())
    assert (await reader.job(A, "u1", job.id)).state == "queued"
    clock.advance(JOB_DEADLINE_S + 120)
    late = await reader.job(A, "u1", job.id)
    assert late.state == "failed" and late.error is not None and "interrupted" in late.error
