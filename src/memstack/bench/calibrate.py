"""``memstack bench calibrate``: the calibrated relevance fitted on the first half of a
LoCoMo-schema file and checked on the second.

Each conversation is stored as ``bench locomo`` stores it (every turn a memory, through
``remember_turns``), and each scored question recalls its 10 best memories; a memory is
evidence when its dialogue id is among the question's. The constants of
``longterm.calibration.Calibration`` are fitted on the first half (``TUNED_ON``; a file
without those conversations: its first half in file order), then both halves show, at
each threshold, the precision and recall of "this memory holds evidence", how many
questions keep some evidence, and how many questions about another conversation of the
same half (the next one) keep anything at all, which nothing should. The default
threshold of the prompt blocks (``CONTEXT_MIN_SCORE``) is picked on the first half from
the last figure (``calibrate_fit.pick_threshold``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memstack.bench.calibrate_fit import (
    IRRELEVANT_AT_MOST,
    THRESHOLDS,
    Seen,
    at_threshold,
    fit,
    log_loss,
    pick_threshold,
    reliability,
)
from memstack.bench.locomo import TUNED_ON, memory_turn, scored_questions
from memstack.bench.locomo_data import Sample, load_locomo
from memstack.bench.progress import progress_bar
from memstack.bench.setup import open_bench_embedder, open_bench_store
from memstack.clock import Clock, SystemClock
from memstack.embeddings import Embedder
from memstack.longterm import Collection, LongTermMemory
from memstack.longterm.calibration import CALIBRATION, CONTEXT_MIN_SCORE, Calibration, coverage
from memstack.storage import RecordStore
from memstack.storage._text import query_words

__all__ = ["CalibrateReport", "K", "calibrate_file", "halves", "questions_asked", "run_calibrate"]

K = 10


@dataclass(kw_only=True)
class CalibrateReport:
    embedder: str
    store: str
    halves: dict[str, list[str]]
    """The conversations of each half: ``tuned`` (fitted on) and ``other``."""
    seen: list[Seen] = field(repr=False)
    fitted: Calibration
    shipped: Calibration = CALIBRATION
    context_min_score: float = CONTEXT_MIN_SCORE

    def half(self, name: str) -> list[Seen]:
        return [s for s in self.seen if s.half == name]

    def to_json(self) -> dict[str, Any]:
        tuned, other = self.half("tuned"), self.half("other")
        rows = [
            {"half": name, **at_threshold(seen, self.shipped, t)}
            for name, seen in (("tuned", tuned), ("other", other))
            for t in sorted({*THRESHOLDS, self.context_min_score})
        ]
        return {
            "benchmark": "calibrate",
            "embedder": self.embedder,
            "store": self.store,
            "k": K,
            "halves": self.halves,
            "questions": {
                name: len({s.question for s in seen if not s.foreign})
                for name, seen in (("tuned", tuned), ("other", other))
            },
            "shipped": _constants(self.shipped),
            "fitted": _constants(self.fitted),
            "log_loss_other": {
                "shipped": log_loss([s for s in other if not s.foreign], self.shipped),
                "fitted": log_loss([s for s in other if not s.foreign], self.fitted),
            },
            "context_min_score": self.context_min_score,
            "picked_min_score": pick_threshold(tuned, self.shipped),
            "irrelevant_at_most": IRRELEVANT_AT_MOST,
            "thresholds": rows,
            "reliability_other": reliability(other, self.shipped),
        }


def _constants(calibration: Calibration) -> dict[str, float]:
    return {
        "intercept": calibration.intercept,
        "relevance": calibration.relevance,
        "coverage": calibration.coverage,
    }


def halves(samples: Sequence[Sample]) -> tuple[list[Sample], list[Sample]]:
    """The conversations fitted on and those checked on: ``TUNED_ON`` and the rest, or
    for a file without any of those, its first half and its second (in file order)."""
    tuned = [s for s in samples if s.sample_id in TUNED_ON]
    if not tuned:
        tuned = list(samples[: (len(samples) + 1) // 2])
    other = [s for s in samples if s not in tuned]
    if not other:
        raise ValueError("bench calibrate needs at least two conversations: one per half")
    return tuned, other


def questions_asked(samples: Sequence[Sample]) -> int:
    """How many recalls a run makes: each scored question, of its own conversation and,
    where the half has another conversation, of that one."""
    tuned, other = halves(samples)
    return sum(
        len(scored_questions(s)) * (2 if len(half) > 1 else 1)
        for half in (tuned, other)
        for s in half
    )


def calibrate_file(data: Path, *, store_kind: str, embedder_kind: str) -> dict[str, Any]:
    """The run of ``memstack bench calibrate`` on the file ``data``, as its JSON, with a
    progress bar on stderr."""
    samples, _ = load_locomo(data)
    embedder = open_bench_embedder(embedder_kind)
    total = questions_asked(samples)
    with open_bench_store(store_kind) as store, progress_bar(total, "recalling") as bar:
        run = run_calibrate(
            samples,
            store=store,
            store_name=store_kind,
            embedder=embedder,
            clock=SystemClock(),
            progress=bar.update,
        )
        return asyncio.run(run).to_json()


async def run_calibrate(
    samples: Sequence[Sample],
    *,
    store: RecordStore,
    store_name: str,
    embedder: Embedder,
    clock: Clock,
    progress: Callable[[int], None] = lambda n: None,
) -> CalibrateReport:
    """Recall every scored question, fit on the first half, report both."""
    tuned, other = halves(samples)
    seen: list[Seen] = []
    asked = 0
    for name, half in (("tuned", tuned), ("other", other)):
        for i, sample in enumerate(half):
            asker = half[(i + 1) % len(half)] if len(half) > 1 else None
            memory = LongTermMemory(
                collection=Collection(user_id=sample.sample_id, namespace="calibrate"),
                store=store,
                embedder=embedder,
                max_items=0,
                clock=clock,
            )
            await memory.clear()
            await memory.remember_turns([memory_turn(turn) for turn in sample.turns])
            asked += await _ask(memory, sample, name, asked, seen, progress)
            if asker is not None:
                asked += await _ask(memory, asker, name, asked, seen, progress, foreign=True)
            await memory.clear()
    return CalibrateReport(
        embedder=embedder.model_id,
        store=store_name,
        halves={"tuned": [s.sample_id for s in tuned], "other": [s.sample_id for s in other]},
        seen=seen,
        fitted=fit([s for s in seen if s.half == "tuned" and not s.foreign]),
    )


async def _ask(
    memory: LongTermMemory,
    asker: Sample,
    half: str,
    first: int,
    seen: list[Seen],
    progress: Callable[[int], None],
    *,
    foreign: bool = False,
) -> int:
    """``asker``'s questions recalled from ``memory``, numbered from ``first``; what each
    recalls goes to ``seen``. How many were asked."""
    questions = scored_questions(asker)
    for n, question in enumerate(questions):
        words = query_words(question.question)
        for item in await memory.recall(question.question, K, touch=False):
            seen.append(
                Seen(
                    half=half,
                    question=first + n,
                    foreign=foreign,
                    relevance=item.scores.relevance,
                    coverage=coverage(words, item.text),
                    evidence=not foreign and item.metadata.get("dia_id") in question.evidence,
                )
            )
        progress(1)
    return len(questions)
