"""``memstack bench updates``: does recall answer with the current value of a changed fact,
and with the value valid at a past moment when asked ``as_of`` it?

Each scripted conversation (``updates_data``) is stored in a fresh collection in three
modes:

- ``plain``: every statement ``remember``-ed at its time, nothing superseded (memstack
  before changed facts existed);
- ``explicit``: a statement that changes an attribute is remembered with
  ``supersedes=[<the memory of the previous statement of that attribute>]``: the API
  path, with the caller knowing what changed;
- ``reconcile``: each session goes through ``remember_conversation``, extraction then
  reconciliation, with a scripted model (``ScriptedReconciler``) that makes the right
  decisions: the memory system's handling of correct decisions is measured, not an LLM.

A question scores when the top recalled memory is its gold statement (``hit3``: among
the top three). Current questions are a plain recall; past questions pass ``as_of``, in
``plain`` mode too: there nothing is ever closed, so every older value competes (only
what was stated after ``as_of`` is left out, its validity starting at its ``created_at``).
Questions are asked a day after the last session (``ASKED_AFTER``), by the clock recency
is measured against; memories are stored at their statements' times.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Final

from memstack.bench.report import percentiles
from memstack.bench.updates_data import DAY, Conversation, Question, Statement
from memstack.bench.updates_reconciler import ScriptedReconciler
from memstack.clock import ManualClock
from memstack.embeddings import Embedder
from memstack.longterm import LongTermMemory, create_default_long_term_memory
from memstack.providers.base import Message
from memstack.providers.scripted import ScriptedProvider
from memstack.storage import RecordStore

__all__ = ["MODES", "ModeScore", "UpdatesReport", "run_updates"]

MODES: Final = ("plain", "explicit", "reconcile")
K: Final = 3
ASKED_AFTER: Final = DAY
"""Questions are asked this long after a conversation's last session (the clock recency
is measured against)."""


@dataclass(kw_only=True)
class ModeScore:
    """What one mode got right, question by question."""

    top1: dict[str, list[bool]] = field(default_factory=lambda: {"current": [], "past": []})
    hit3: list[bool] = field(default_factory=list)
    recall_ms: list[float] = field(default_factory=list)
    unstored: int = 0
    """Statements that did not become a memory of their own (deduplicated or refused)."""
    changes: int = 0
    """Statements that change an attribute (the updates there were to make)."""
    updates: int = 0
    """Statements stored as superseding another: with ``supersedes`` (``explicit``) or by
    an ``update`` decision (``reconcile``)."""

    def add(self, question: Question, ranked: Sequence[str | None], ms: float) -> None:
        self.top1[question.kind].append(bool(ranked) and ranked[0] == question.gold)
        self.hit3.append(question.gold in ranked[:K])
        self.recall_ms.append(ms)

    def to_json(self) -> dict[str, object]:
        everything = self.top1["current"] + self.top1["past"]
        return {
            "current": _share(self.top1["current"]),
            "past": _share(self.top1["past"]),
            "overall": _share(everything),
            "hit3": _share(self.hit3),
            "recall_ms_p50": percentiles(self.recall_ms, (50,))["p50"],
            "questions": len(everything),
            "unstored": self.unstored,
            "changes": self.changes,
            "updates": self.updates,
        }


@dataclass(kw_only=True)
class UpdatesReport:
    modes: dict[str, ModeScore]
    conversations: int
    seed: int
    embedder: str

    def to_json(self) -> dict[str, object]:
        return {
            "modes": {name: score.to_json() for name, score in self.modes.items()},
            "conversations": self.conversations,
            "seed": self.seed,
            "embedder": self.embedder,
        }


def _share(hits: Sequence[bool]) -> float:
    return round(sum(hits) / len(hits), 3) if hits else 0.0


async def run_updates(
    conversations: Sequence[Conversation],
    *,
    store: RecordStore,
    embedder: Embedder,
    modes: Sequence[str] = MODES,
    seed: int = 0,
    progress: Callable[[int], None] = lambda n: None,
) -> UpdatesReport:
    """Every conversation in every mode, each in a collection of its own (cleared after);
    ``progress(1)`` after each question."""
    unknown = sorted(set(modes) - set(MODES))
    if unknown:
        raise ValueError(f"unknown modes {unknown}; choose from {', '.join(MODES)}")
    scores = {mode: ModeScore() for mode in modes}
    for conversation in conversations:
        for mode in modes:
            await _run_one(conversation, mode, store, embedder, scores[mode], progress)
    return UpdatesReport(
        modes=scores, conversations=len(conversations), seed=seed, embedder=embedder.model_id
    )


async def _run_one(
    conversation: Conversation,
    mode: str,
    store: RecordStore,
    embedder: Embedder,
    score: ModeScore,
    progress: Callable[[int], None],
) -> None:
    clock = ManualClock(conversation.statements[0].time)
    reconciler = ScriptedReconciler(conversation)
    memory = create_default_long_term_memory(
        user_id=conversation.id,
        namespace=f"updates-{mode}",
        enabled=True,
        env={},
        store=store,
        embedder=embedder,
        clock=clock,
        extraction_provider=ScriptedProvider(responder=reconciler.respond),
        extraction_model="scripted-reconciler",
    )
    assert memory is not None  # enabled, with a store and an embedder given
    await memory.clear()
    try:
        if mode == "reconcile":
            stored = await _reconciled(memory, conversation, clock)
            score.updates += reconciler.decisions["update"]
        else:
            stored, updates = await _remembered(
                memory, conversation, clock, explicit=mode == "explicit"
            )
            score.updates += updates
        score.unstored += len(conversation.statements) - stored
        score.changes += sum(s.previous is not None for s in conversation.statements)
        clock.set(conversation.statements[-1].time + ASKED_AFTER)
        statements = conversation.by_text()
        for question in conversation.questions:
            started = time.perf_counter()
            recalled = await memory.recall(question.text, K, touch=False, as_of=question.as_of)
            ms = (time.perf_counter() - started) * 1000
            ranked = [_id(statements.get(r.text)) for r in recalled]
            score.add(question, ranked, ms)
            progress(1)
    finally:
        await memory.clear()


def _id(statement: Statement | None) -> str | None:
    return statement.id if statement is not None else None


async def _remembered(
    memory: LongTermMemory, conversation: Conversation, clock: ManualClock, *, explicit: bool
) -> tuple[int, int]:
    """Each statement remembered at its time; with ``explicit``, superseding the memory of
    the previous statement of its attribute. How many were stored, and how many of them
    superseded another."""
    memory_of: dict[str, str] = {}  # statement id -> the id of its memory
    stored = updates = 0
    for statement in conversation.statements:
        clock.set(statement.time)
        previous = memory_of.get(statement.previous or "")
        supersedes = [previous] if explicit and previous else []
        outcome = await memory.remember(
            statement.text, created_at=statement.time, supersedes=supersedes
        )
        if outcome.status == "stored" and outcome.id is not None:
            memory_of[statement.id] = outcome.id
            stored += 1
            updates += bool(supersedes)
    return stored, updates


async def _reconciled(
    memory: LongTermMemory, conversation: Conversation, clock: ManualClock
) -> int:
    """Each session, as user turns, through extraction and reconciliation at its time."""
    stored = 0
    for session in conversation.sessions:
        clock.set(session[0].time)
        messages: list[Message] = []
        for statement in session:
            messages.append(Message(role="user", content=statement.text))
            messages.append(Message(role="assistant", content="Noted."))
        outcomes = await memory.remember_conversation(messages, reconcile=True)
        stored += sum(o.status == "stored" for o in outcomes)
    return stored
