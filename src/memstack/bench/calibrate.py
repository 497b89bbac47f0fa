"""``memstack bench calibrate``: the calibrated relevance fitted on the first half of a
LoCoMo-schema file and checked on the second.

Each conversation is stored as ``bench locomo`` stores it (every turn a memory, through
``remember_turns``), and each scored question recalls its 10 best memories; a memory is
evidence when its dialogue id is among the question's. The constants of
``longterm.calibration.Calibration`` are fitted on the first half (``TUNED_ON``; a file
without those conversations: its first half in file order) with balanced class weights,
then both halves show, at each threshold, the precision and recall of "this memory holds
evidence", how many questions keep some evidence and their best-ranked evidence, and how
many questions about another conversation of the same half (the next one) keep anything
at all, which nothing should. The default threshold of the prompt blocks
(``CONTEXT_MIN_SCORE``) is picked on the first half from the last figure
(``calibrate_fit.pick_threshold``).

At ``PLAIN_THRESHOLD`` (0.3, what a mem0 user passes) the command prints and writes the
share of questions whose best-ranked evidence survives and the share of questions about
another conversation left with nothing, on both halves, for the scale shipped and the
scales it was chosen over: the same fit without class weights (the chance of evidence at
the base rate of the recalled memories) and the cosine similarity.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click

from memstack.bench.calibrate_fit import (
    IRRELEVANT_AT_MOST,
    PLAIN_THRESHOLD,
    THRESHOLDS,
    Seen,
    at_threshold,
    base_rate,
    fit,
    log_loss,
    pick_threshold,
    reliability,
    survival,
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

__all__ = [
    "CalibrateReport",
    "K",
    "calibrate_file",
    "halves",
    "plain_threshold_lines",
    "questions_asked",
    "run_calibrate",
]

K = 10


@dataclass(kw_only=True)
class CalibrateReport:
    embedder: str
    store: str
    halves: dict[str, list[str]]
    """The conversations of each half: ``tuned`` (fitted on) and ``other``."""
    seen: list[Seen] = field(repr=False)
    fitted: Calibration
    """Fitted on the first half with balanced class weights, as ``CALIBRATION`` was."""
    unweighted: Calibration
    """Fitted on the first half without class weights: a chance at the base rate."""
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
            "unweighted": _constants(self.unweighted),
            "class_weights": "balanced",
            "base_rate": {"tuned": base_rate(tuned), "other": base_rate(other)},
            "log_loss_other": {
                "shipped": log_loss([s for s in other if not s.foreign], self.shipped),
                "fitted": log_loss([s for s in other if not s.foreign], self.fitted),
            },
            "plain_threshold": self.plain_threshold(),
            "context_min_score": self.context_min_score,
            "picked_min_score": pick_threshold(tuned, self.shipped),
            "irrelevant_at_most": IRRELEVANT_AT_MOST,
            "thresholds": rows,
            "reliability_other": reliability(other, self.shipped, base_rate(tuned)),
        }

    def plain_threshold(self) -> dict[str, Any]:
        """At ``PLAIN_THRESHOLD``, per scale and half, what ``calibrate_fit.survival``
        gives: the scale shipped, the unweighted fit and the cosine similarity."""
        scales: dict[str, Callable[[Seen], float]] = {
            "shipped": lambda s: self.shipped.of(s.relevance, s.coverage),
            "unweighted": lambda s: self.unweighted.of(s.relevance, s.coverage),
            "cosine": lambda s: s.similarity,
        }
        return {
            "min_score": PLAIN_THRESHOLD,
            "scales": {
                name: {
                    half: survival(self.half(half), value, PLAIN_THRESHOLD)
                    for half in ("tuned", "other")
                }
                for name, value in scales.items()
            },
        }


def plain_threshold_lines(payload: dict[str, Any]) -> list[str]:
    """The figures at ``PLAIN_THRESHOLD`` of a run's JSON, a line per scale and half."""
    at = payload["plain_threshold"]
    lines = [
        f"At min_score {at['min_score']}: share of questions whose best-ranked evidence "
        "among the 10 recalled survives (of those with evidence recalled), and share of "
        "questions about another conversation left with nothing."
    ]
    for name, by_half in at["scales"].items():
        for half, row in by_half.items():
            lines.append(
                f"  {name:10} {half:5}  top evidence survives {row['top_evidence']:.3f}  "
                f"other conversation empty {row['foreign_empty']:.3f}"
            )
    return lines


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
    progress bar on stderr and the figures at ``PLAIN_THRESHOLD`` on stdout."""
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
        payload = asyncio.run(run).to_json()
    click.echo("\n".join(plain_threshold_lines(payload)))
    return payload


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
    fitting = [s for s in seen if s.half == "tuned" and not s.foreign]
    return CalibrateReport(
        embedder=embedder.model_id,
        store=store_name,
        halves={"tuned": [s.sample_id for s in tuned], "other": [s.sample_id for s in other]},
        seen=seen,
        fitted=fit(fitting),
        unweighted=fit(fitting, balanced=False),
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
        for rank, item in enumerate(await memory.recall(question.question, K, touch=False)):
            seen.append(
                Seen(
                    half=half,
                    question=first + n,
                    foreign=foreign,
                    rank=rank,
                    relevance=item.scores.relevance,
                    similarity=item.scores.similarity,
                    coverage=coverage(words, item.text),
                    evidence=not foreign and item.metadata.get("dia_id") in question.evidence,
                )
            )
        progress(1)
    return len(questions)
