import json
from itertools import pairwise
from pathlib import Path

import pytest
from click.testing import CliRunner

from memstack.bench.updates_data import Conversation, conversations
from memstack.bench.updates_reconciler import ScriptedReconciler
from memstack.cli import main
from memstack.longterm.extraction import EXTRACTION_PROMPT
from memstack.longterm.reconcile import (
    Similar,
    build_reconcile_messages,
    parse_decisions,
    shown_ids,
)
from memstack.longterm.types import Candidate
from memstack.providers.base import Message
from memstack.secrets import find_secret


@pytest.fixture(scope="module")
def data() -> list[Conversation]:
    return conversations(seed=0, n=60)


def test_at_least_60_conversations_each_with_a_changed_fact(data: list[Conversation]):
    assert len(data) == 60 == len({c.id for c in data})
    for conversation in data:
        assert 1 <= len(conversation.people) <= 2
        slots = {s.slot for s in conversation.statements if s.slot}
        assert 2 <= len(slots) <= 4
        assert any(s.previous for s in conversation.statements), conversation.id
        assert any(s.slot is None for s in conversation.statements), "no distractor"
    assert len({p for c in data for p in c.people}) >= 20  # varied names


def test_statements_are_ordered_unique_and_chain_by_slot(data: list[Conversation]):
    for conversation in data:
        statements = conversation.statements
        assert [s.id for s in statements] == [f"s{n + 1}" for n in range(len(statements))]
        assert len({s.text for s in statements}) == len(statements)
        assert [s.time for s in statements] == sorted(s.time for s in statements)
        by_id = {s.id: s for s in statements}
        for slot in {s.slot for s in statements if s.slot}:
            chain = [s for s in statements if s.slot == slot]
            assert 2 <= len(chain) <= 4  # stated, then changed 1 to 3 times
            assert chain[0].previous is None
            for before, after in pairwise(chain):
                assert after.previous == before.id
                assert after.time > before.time and after.value != before.value
                assert by_id[after.previous].slot == slot
        for session in conversation.sessions:
            assert len({s.time for s in session}) == 1
            assert len(session) <= 8  # extraction proposes at most 8 memories a call


def test_every_gold_is_the_statement_valid_at_the_question_time(data: list[Conversation]):
    kinds = set()
    for conversation in data:
        by_id = {s.id: s for s in conversation.statements}
        slots = {s.slot for s in conversation.statements if s.slot}
        assert {q.slot for q in conversation.questions if q.kind == "current"} == slots
        for question in conversation.questions:
            kinds.add(question.kind)
            gold = by_id[question.gold]
            assert gold.slot == question.slot
            chain = [s for s in conversation.statements if s.slot == question.slot]
            person = question.slot.split("/")[0]
            assert person in question.text
            if question.kind == "current":
                assert question.as_of is None and gold is chain[-1]
                continue
            assert question.as_of is not None
            valid = [s for s in chain if s.time <= question.as_of]
            assert valid and valid[-1] is gold and gold is not chain[-1]
            later = chain[chain.index(gold) + 1]
            assert gold.time < question.as_of < later.time
            assert any(word in question.text for word in (" in ", " on "))
    assert kinds == {"current", "past"}


def test_generation_is_deterministic_by_seed(data: list[Conversation]):
    assert conversations(seed=0, n=60) == data
    assert conversations(seed=0, n=5) == data[:5]
    other = conversations(seed=1, n=5)
    assert [c.statements for c in other] != [c.statements for c in data[:5]]


def test_no_statement_or_question_looks_like_a_secret(data: list[Conversation]):
    texts = [s.text for c in data for s in c.statements] + [
        q.text for c in data for q in c.questions
    ]
    assert [t for t in texts if find_secret({"text": t}) is not None] == []


def test_the_wording_varies(data: list[Conversation]):
    changes = [s.text for c in data for s in c.statements if s.previous]
    assert any(t.startswith("Turns out") for t in changes)
    assert any(" moved from " in t for t in changes)
    assert not any(" a iPhone" in t or " a Xperia" in t for c in data for t in changes)


def test_the_scripted_reconciler_updates_the_previous_value_shown_under_its_candidate(
    data: list[Conversation],
):
    conversation = next(c for c in data if any(s.previous for s in c.sessions[1]))
    changed = next(s for s in conversation.sessions[1] if s.previous)
    before = conversation.statement(changed.previous or "")
    other = next(s for s in conversation.statements if s.slot and s.slot != changed.slot)
    candidates = [Candidate(text=changed.text), Candidate(text=other.text), Candidate(text="x")]
    similar = [
        [Similar(id="m-other", text=other.text), Similar(id="m-before", text=before.text)],
        [Similar(id="m-same", text=other.text)],
        [],
    ]
    reconciler = ScriptedReconciler(conversation)
    reply = reconciler.respond(build_reconcile_messages(candidates, similar))
    decisions = parse_decisions(reply, 3, shown_ids(similar))
    assert [(d.action, d.target) for d in decisions] == [
        ("update", "m-before"),
        ("none", None),
        ("add", None),
    ]
    extraction = reconciler.respond(
        [
            Message(role="system", content=EXTRACTION_PROMPT),
            Message(
                role="user", content=f"Conversation:\n\nUser: {changed.text}\n\nAssistant: Noted."
            ),
        ]
    )
    assert json.loads(extraction) == {
        "memories": [{"text": changed.text, "kind": "fact", "importance": 0.5}]
    }


def _updates(out: Path, *args: str) -> list[str]:
    return ["bench", "updates", "--embedder", "hash", "--out", str(out), *args]


def test_bench_updates_command_writes_json_and_explicit_beats_plain(tmp_path: Path):
    out = tmp_path / "updates.json"
    result = CliRunner().invoke(main, _updates(out, "--conversations", "6", "--seed", "0"))
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    assert report["conversations"] == 6 and report["seed"] == 0
    assert report["embedder"].startswith("hash")
    assert set(report["modes"]) == {"plain", "explicit", "reconcile"}
    questions = sum(len(c.questions) for c in conversations(seed=0, n=6))
    for mode in report["modes"].values():
        assert {"current", "past", "overall", "hit3", "recall_ms_p50", "questions"} <= set(mode)
        assert mode["questions"] == questions
        assert 0 <= mode["current"] <= 1 and 0 <= mode["past"] <= 1
        assert mode["overall"] <= mode["hit3"]
        assert mode["recall_ms_p50"] > 0
    modes = report["modes"]
    assert modes["explicit"]["current"] > modes["plain"]["current"]
    assert modes["explicit"]["updates"] == modes["explicit"]["changes"] > 0
    assert modes["plain"]["updates"] == 0
    assert "explicit" in result.stdout and "hit@3" in result.stdout


def test_bench_updates_runs_only_the_modes_asked_and_refuses_unknown_ones(tmp_path: Path):
    out = tmp_path / "updates.json"
    result = CliRunner().invoke(main, _updates(out, "--conversations", "2", "--modes", "plain"))
    assert result.exit_code == 0, result.output
    assert set(json.loads(out.read_text())["modes"]) == {"plain"}
    bad = CliRunner().invoke(main, _updates(out, "--modes", "plain,magic"))
    assert bad.exit_code == 2
    assert "unknown magic" in bad.output
