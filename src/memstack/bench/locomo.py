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
from memstack.bench.metrics import QuestionResult, Summary, aggregate, score_ranking
from memstack.bench.report import percentiles
from memstack.clock import Clock
from memstack.embeddings import Embedder
from memstack.longterm import Collection, LongTermMemory
from memstack.longterm.scoring import ContextWeights
from memstack.longterm.turns import DEFAULT_RADIUS, Turn
from memstack.storage import RecordStore

__all__ = ["MECHANISMS", "TUNED_ON", "LocomoReport", "run_locomo"]

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
    timings: dict[str, float] = field(default_factory=dict)

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
                name: {"overall": h["overall"], "questions": h["questions"]}
                for name, h in self.halves.items()
            },
            "ablations": {
                name: {"overall": a["overall"], "per_category": a["per_category"]}
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
    off = set(off)
    unknown = sorted(off - set(MECHANISMS))
    if unknown:
        raise ValueError(f"unknown mechanisms {unknown}; choose from {', '.join(MECHANISMS)}")
    weights = replace(ContextWeights(), **{name: 0.0 for name in off if name != "context"})
    radius = 0 if "context" in off else DEFAULT_RADIUS
    ours: list[QuestionResult] = []
    by_sample: dict[str, list[QuestionResult]] = {}
    bm25: list[QuestionResult] = []
    vector: list[QuestionResult] = []
    ingest_seconds = 0.0
    stored = 0
    latencies: list[float] = []
    embedding: list[float] = []
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
        started = time.perf_counter()
        outcomes = await memory.remember_turns(
            [
                Turn(
                    speaker=turn.speaker,
                    text=turn.text,
                    time=turn.timestamp,
                    session_id=f"session-{turn.session}",
                    metadata={"dia_id": turn.dia_id},
                )
                for turn in sample.turns
            ],
            context_radius=radius,
        )
        ingest_seconds += time.perf_counter() - started
        stored += sum(o.status == "stored" for o in outcomes)
        id_to_dia = _dia_ids(store, memory)
        lexical = BM25([t.memory_text for t in sample.turns])
        for question in scored_questions(sample):
            started = time.perf_counter()
            recalled = await memory.recall(question.question, K, touch=False)
            latencies.append((time.perf_counter() - started) * 1000)
            result = score_ranking(
                [str(r.metadata.get("dia_id")) for r in recalled],
                question.evidence,
                question.category,
            )
            ours.append(result)
            by_sample.setdefault(sample.sample_id, []).append(result)
            top = lexical.top(question.question, K)
            bm25.append(
                score_ranking(
                    [sample.turns[i].dia_id for i in top], question.evidence, question.category
                )
            )
            started = time.perf_counter()
            query = embedder.embed_batch([question.question])[0]
            embedding.append((time.perf_counter() - started) * 1000)
            hits = store.vector_search(memory.namespace, query, k=K)
            vector.append(
                score_ranking(
                    [id_to_dia[h.record.id] for h in hits], question.evidence, question.category
                )
            )
            progress(1)
        await memory.clear()
    return LocomoReport(
        memstack=aggregate(ours),
        baselines={"bm25": aggregate(bm25), "vector": aggregate(vector)},
        ingest_per_s=stored / ingest_seconds if ingest_seconds else 0.0,
        recall_ms=percentiles(latencies, (50, 95)),
        embed_ms=percentiles(embedding, (50, 95)),
        load=stats,
        store=store_name,
        embedder=embedder.model_id,
        halves=_halves(by_sample),
    )


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
