"""``memstack bench locomo``: recall quality of long-term memory on LoCoMo-schema data.

Each conversation is stored as a user would store it, through
``LongTermMemory.remember_turns``: every turn a memory ``<speaker>: <text>`` dated by its
session, with its neighbours as context. Each question of categories 1-4 with evidence is
recalled, and the ranking is scored against the evidence turns. A plain BM25 and a
pure-vector ranking over the turns (``[<session date>] <speaker>: <text>``) are scored
beside it.

Mechanisms (``MECHANISMS``) can be switched off one at a time for an ablation table:
``context`` stores the turns without context, the others zero their weight in
``ContextWeights``. The weights were chosen on the first half of the development split
(``TUNED_ON``); the report gives that half and the other half apart.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Final

from memstack.bench.bm25 import BM25
from memstack.bench.locomo_data import LoadStats, Question, Sample
from memstack.bench.locomo_data import Turn as LocomoTurn
from memstack.bench.metrics import QuestionResult, Summary, aggregate, score_ranking
from memstack.bench.report import percentiles
from memstack.clock import Clock
from memstack.embeddings import Embedder
from memstack.longterm import Collection, LongTermMemory
from memstack.longterm.scoring import ContextWeights
from memstack.longterm.turns import DEFAULT_RADIUS, Turn
from memstack.storage import RecordStore

__all__ = [
    "MECHANISMS",
    "TUNED_ON",
    "LocomoReport",
    "memory_turn",
    "run_locomo",
    "scored_questions",
    "switched",
]

K = 10
MECHANISMS: Final = ("context", "session", "speaker", "time")
TUNED_ON: Final = ("conv-26", "conv-30", "conv-41")
"""The conversations the recall weights were chosen on; the rest checks them."""


@dataclass(kw_only=True)
class LocomoReport:
    memstack: Summary
    baselines: dict[str, Summary]
    ingest_per_s: float
    recall_ms: dict[str, float]
    embed_ms: dict[str, float]
    """The same questions' query embedding alone, timed in the same loop: the floor of a
    recall (``recall_over_embed`` is the ratio of the two p50s)."""
    load: LoadStats
    store: str
    embedder: str
    halves: dict[str, Summary] = field(default_factory=dict)
    """``tuned`` (the ``TUNED_ON`` conversations) and ``other``, when both are there."""
    ablations: dict[str, Summary] = field(default_factory=dict)
    """Per mechanism switched off, the same run without it."""
    ablation_halves: dict[str, dict[str, Summary]] = field(default_factory=dict)
    """Per mechanism in ``ablations``, that run's ``halves``."""
    timings: dict[str, float] = field(default_factory=dict)
    rankings: dict[str, list[list[str]]] = field(default_factory=dict)
    """Per sample, each scored question's ranking (dialogue ids, best first), in order:
    what the run through the REST API (``locomo_remote``) must rank alike."""

    @property
    def recall_over_embed(self) -> float | None:
        embed = self.embed_ms.get("p50")
        return round(self.recall_ms["p50"] / embed, 3) if embed else None

    def to_json(self) -> dict[str, object]:
        return {
            "overall": self.memstack["overall"],
            "per_category": self.memstack["per_category"],
            "questions": self.memstack["questions"],
            "ingest_per_s": round(self.ingest_per_s, 1),
            "recall_ms": self.recall_ms,
            "embed_ms": self.embed_ms,
            "recall_over_embed": self.recall_over_embed,
            "baselines": {
                name: {"overall": b["overall"], "per_category": b["per_category"]}
                for name, b in self.baselines.items()
            },
            "store": self.store,
            "embedder": self.embedder,
            "halves": {
                name: {
                    "overall": h["overall"],
                    "per_category": h["per_category"],
                    "questions": h["questions"],
                }
                for name, h in self.halves.items()
            },
            "ablations": {
                name: {
                    "overall": a["overall"],
                    "per_category": a["per_category"],
                    "halves": {
                        half: {"overall": h["overall"], "per_category": h["per_category"]}
                        for half, h in self.ablation_halves.get(name, {}).items()
                    },
                }
                for name, a in self.ablations.items()
            },
            "data": {
                "samples": self.load.samples,
                "turns": self.load.turns,
                "questions": self.load.questions,
                "evidence_repaired": self.load.evidence_repaired,
                "evidence_dropped": self.load.evidence_dropped,
            },
        }


def memory_turn(turn: LocomoTurn) -> Turn:
    """A LoCoMo turn as a user stores it, in process or over REST (``locomo_remote``):
    its id is its dialogue id's, so equal scores (ranked by id) rank alike in both runs
    and a REST retry of the turn is a duplicate."""
    return Turn(
        speaker=turn.speaker,
        text=turn.text,
        time=turn.timestamp,
        session_id=f"session-{turn.session}",
        id=f"locomo-{turn.dia_id}",
        metadata={"dia_id": turn.dia_id},
    )


def scored_questions(sample: Sample) -> list[Question]:
    """Questions the retrieval metric counts: categories 1-4 with evidence."""
    return [q for q in sample.questions if q.category in (1, 2, 3, 4) and q.evidence]


async def run_locomo(
    samples: Sequence[Sample],
    stats: LoadStats,
    *,
    store: RecordStore,
    store_name: str,
    embedder: Embedder,
    clock: Clock,
    progress: Callable[[int], None] = lambda n: None,
    off: Iterable[str] = (),
) -> LocomoReport:
    """One run with the mechanisms in ``off`` switched off (see ``MECHANISMS``)."""
    weights, radius = _switched_off(set(off))
    tally = _Tally()
    for sample in samples:
        memory = LongTermMemory(
            collection=Collection(user_id=sample.sample_id, namespace="locomo"),
            store=store,
            embedder=embedder,
            max_items=0,
            clock=clock,
            context_weights=weights,
        )
        await memory.clear()
        await _ingest(memory, sample, radius, tally)
        await _ask(memory, sample, store, embedder, tally, progress)
        await memory.clear()
    return LocomoReport(
        memstack=aggregate(tally.ours),
        baselines={"bm25": aggregate(tally.bm25), "vector": aggregate(tally.vector)},
        ingest_per_s=tally.stored / tally.ingest_s if tally.ingest_s else 0.0,
        recall_ms=percentiles(tally.recall_ms, (50, 95)),
        embed_ms=percentiles(tally.embed_ms, (50, 95)),
        load=stats,
        store=store_name,
        embedder=embedder.model_id,
        halves=_halves(tally.by_sample),
        rankings=tally.rankings,
    )


@dataclass(kw_only=True)
class _Tally:
    """What one run gathers, sample after sample."""

    ours: list[QuestionResult] = field(default_factory=list)
    by_sample: dict[str, list[QuestionResult]] = field(default_factory=dict)
    bm25: list[QuestionResult] = field(default_factory=list)
    vector: list[QuestionResult] = field(default_factory=list)
    ingest_s: float = 0.0
    stored: int = 0
    recall_ms: list[float] = field(default_factory=list)
    embed_ms: list[float] = field(default_factory=list)
    rankings: dict[str, list[list[str]]] = field(default_factory=dict)


def switched(name: str) -> str:
    """The ablation row of a mechanism: the run "without" it."""
    return f"without {name}"


def _switched_off(off: set[str]) -> tuple[ContextWeights, int]:
    """The recall weights and context radius with the mechanisms in ``off`` switched off."""
    unknown = sorted(off - set(MECHANISMS))
    if unknown:
        raise ValueError(f"unknown mechanisms {unknown}; choose from {', '.join(MECHANISMS)}")
    weights = replace(ContextWeights(), **{name: 0.0 for name in off if name != "context"})
    return weights, 0 if "context" in off else DEFAULT_RADIUS


async def _ingest(memory: LongTermMemory, sample: Sample, radius: int, tally: _Tally) -> None:
    """The sample's turns stored as a user would, through ``remember_turns``, timed."""
    started = time.perf_counter()
    turns = [memory_turn(turn) for turn in sample.turns]
    outcomes = await memory.remember_turns(turns, context_radius=radius)
    tally.ingest_s += time.perf_counter() - started
    tally.stored += sum(o.status == "stored" for o in outcomes)


async def _ask(
    memory: LongTermMemory,
    sample: Sample,
    store: RecordStore,
    embedder: Embedder,
    tally: _Tally,
    progress: Callable[[int], None],
) -> None:
    """Each scored question recalled, then ranked by BM25 and by pure vector search."""
    id_to_dia = _dia_ids(store, memory)
    lexical = BM25([t.memory_text for t in sample.turns])
    for question in scored_questions(sample):
        started = time.perf_counter()
        recalled = await memory.recall(question.question, K, touch=False)
        tally.recall_ms.append(_ms_since(started))
        ranking = [str(r.metadata.get("dia_id")) for r in recalled]
        tally.rankings.setdefault(sample.sample_id, []).append(ranking)
        result = _score(ranking, question)
        tally.ours.append(result)
        tally.by_sample.setdefault(sample.sample_id, []).append(result)
        top = lexical.top(question.question, K)
        tally.bm25.append(_score([sample.turns[i].dia_id for i in top], question))
        started = time.perf_counter()
        query = embedder.embed_batch([question.question])[0]
        tally.embed_ms.append(_ms_since(started))
        hits = store.vector_search(memory.namespace, query, k=K)
        tally.vector.append(_score([id_to_dia[h.record.id] for h in hits], question))
        progress(1)


def _score(ranking: list[str], question: Question) -> QuestionResult:
    return score_ranking(ranking, question.evidence, question.category)


def _ms_since(started: float) -> float:
    return (time.perf_counter() - started) * 1000


def _halves(by_sample: dict[str, list[QuestionResult]]) -> dict[str, Summary]:
    tuned = [r for s in TUNED_ON if s in by_sample for r in by_sample[s]]
    other = [r for s, rs in by_sample.items() if s not in TUNED_ON for r in rs]
    return {"tuned": aggregate(tuned), "other": aggregate(other)} if tuned and other else {}


def _dia_ids(store: RecordStore, memory: LongTermMemory) -> dict[str, str]:
    out: dict[str, str] = {}
    offset = 0
    while True:
        page = store.list(memory.namespace, limit=1000, offset=offset)
        out.update({r.id: str(r.metadata.get("dia_id")) for r in page})
        if len(page) < 1000:
            return out
        offset += 1000
