"""Synthetic memories whose vectors come from real embeddings of their parts.

A memory is ``"<subject> <verb> <topic> <detail> (note <i>)"`` over a fixed
vocabulary. Each phrase of the vocabulary is embedded once with the benchmark's
embedder; a memory's vector is the normalized weighted sum of its four phrase
vectors plus a little gaussian noise. Rows come from numpy in blocks of
``BLOCK`` (one seeded generator per block), so row ``i`` is the same however the
rows are requested, and a million rows take seconds, not the hours real
embedding would. Queries are plain text, embedded for real by whoever searches.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

from memstack.embeddings import Embedder

__all__ = [
    "BLOCK",
    "DETAILS",
    "SUBJECTS",
    "TOPICS",
    "VERBS",
    "Phrases",
    "SynthRows",
    "embed_phrases",
    "synth_fidelity",
    "synth_queries",
    "synth_rows",
    "synth_sentences",
    "synth_texts",
]

SUBJECTS: Final = (
    "The user",
    "Alice",
    "Bob",
    "My sister",
    "The team",
    "Our client",
    "The manager",
    "Grandpa",
    "The new intern",
    "Priya",
    "Marco",
    "The landlord",
    "My neighbour",
    "The design lead",
    "Our CTO",
    "Yuki",
    "The support team",
    "Dad",
    "Fatima",
    "The product owner",
)
VERBS: Final = (
    "prefers",
    "dislikes",
    "bought",
    "visited",
    "is learning",
    "wrote about",
    "talked about",
    "recommended",
    "plans to try",
    "keeps forgetting",
    "gave up on",
    "is allergic to",
    "asked about",
    "complained about",
    "is saving for",
    "borrowed",
    "sold",
    "argued against",
    "fixed",
    "cancelled",
)
TOPICS: Final = (
    "green tea",
    "espresso",
    "hiking boots",
    "Rust",
    "PostgreSQL",
    "jazz records",
    "Kyoto",
    "the Oslo office",
    "sourdough bread",
    "marathon training",
    "a vegetable garden",
    "chess openings",
    "vintage cameras",
    "the quarterly report",
    "a trip to Lisbon",
    "Python type hints",
    "watercolour painting",
    "a new bicycle",
    "the piano",
    "climbing shoes",
    "oat milk",
    "board games",
    "a science fiction novel",
    "the database migration",
    "Spanish lessons",
    "peanut butter",
    "the electric car",
    "a standing desk",
    "yoga classes",
    "the wedding venue",
    "Kubernetes",
    "the dentist appointment",
    "a golden retriever puppy",
    "solar panels",
    "the budget spreadsheet",
    "noise-cancelling headphones",
    "the kitchen renovation",
    "a podcast about history",
    "Thai curry",
    "the mortgage",
    "a mechanical keyboard",
    "the summer festival",
    "tax returns",
    "a sailing course",
    "the home network",
    "French cheese",
    "the onboarding checklist",
    "a pottery workshop",
    "the flight to Toronto",
    "gluten-free pasta",
)
DETAILS: Final = (
    "last week",
    "every morning",
    "since 2019",
    "with friends",
    "for work",
    "on weekends",
    "after the conference",
    "before the move",
    "twice a month",
    "during the holidays",
    "yesterday",
    "at the office party",
    "on the train",
    "for the kids",
    "after a long argument",
    "in secret",
    "against the doctor's advice",
    "when it rained",
    "before the deadline",
    "on a tight budget",
    "with the neighbours",
    "late at night",
    "for the first time",
    "again",
)

BLOCK: Final = 1000
_WEIGHTS: Final = np.array([0.5, 0.25, 1.0, 0.3], dtype=np.float32)
"""Subject, verb, topic, detail: about the least-squares fit of MiniLM sentence vectors
to their phrase vectors (``synth_fidelity`` measures how close the result comes to the
real sentence embedding)."""
_NOISE: Final = 0.15
"""Expected norm of the noise added to the (norm about 1.3) weighted sum."""
_QUERY_FORMS: Final = (
    "what does {s} think about {t}?",
    "who {v} {t}?",
    "{t} {d}",
    "did {s} mention {t}",
    "{s} {v} something {d}",
    "anything about {t} or {t2}?",
)


@dataclass(frozen=True, kw_only=True)
class Phrases:
    """The unit vectors of every vocabulary phrase, one matrix per part."""

    subjects: npt.NDArray[np.float32]
    verbs: npt.NDArray[np.float32]
    topics: npt.NDArray[np.float32]
    details: npt.NDArray[np.float32]

    @property
    def dim(self) -> int:
        return int(self.topics.shape[1])


@dataclass(frozen=True, kw_only=True)
class SynthRows:
    """Rows ``start`` to ``start + len(parts)``: which phrases, and the unit vectors."""

    start: int
    parts: npt.NDArray[np.int32]
    """``(n, 4)``: subject, verb, topic and detail index of each row."""
    vectors: npt.NDArray[np.float32]

    def texts(self) -> list[str]:
        return synth_texts(self.parts, self.start)


def embed_phrases(embedder: Embedder) -> Phrases:
    """Embed each vocabulary phrase once, in one batch."""
    groups = (SUBJECTS, VERBS, TOPICS, DETAILS)
    vectors = np.asarray(
        embedder.embed_batch([p for group in groups for p in group]), dtype=np.float32
    )
    cuts = np.cumsum([len(g) for g in groups])[:-1]
    subjects, verbs, topics, details = np.split(vectors, cuts)
    return Phrases(subjects=subjects, verbs=verbs, topics=topics, details=details)


def synth_rows(phrases: Phrases, start: int, stop: int, *, seed: int = 7) -> SynthRows:
    """Rows ``start`` (inclusive) to ``stop``; the same rows for the same seed, always."""
    if stop <= start:
        empty = np.zeros((0, phrases.dim), dtype=np.float32)
        return SynthRows(start=start, parts=np.zeros((0, 4), dtype=np.int32), vectors=empty)
    blocks = range(start // BLOCK, (stop - 1) // BLOCK + 1)
    made = [_block(phrases, b, seed) for b in blocks]
    lo = start - blocks[0] * BLOCK
    hi = lo + stop - start
    parts = np.concatenate([p for p, _ in made])[lo:hi]
    vectors = np.concatenate([v for _, v in made])[lo:hi]
    return SynthRows(start=start, parts=parts, vectors=vectors)


def _block(
    phrases: Phrases, block: int, seed: int
) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.float32]]:
    rng = np.random.default_rng([seed, block])
    sizes = (len(SUBJECTS), len(VERBS), len(TOPICS), len(DETAILS))
    parts = np.stack([rng.integers(0, n, BLOCK) for n in sizes], axis=1).astype(np.int32)
    summed = (
        _WEIGHTS[0] * phrases.subjects[parts[:, 0]]
        + _WEIGHTS[1] * phrases.verbs[parts[:, 1]]
        + _WEIGHTS[2] * phrases.topics[parts[:, 2]]
        + _WEIGHTS[3] * phrases.details[parts[:, 3]]
    )
    sigma = _NOISE / np.sqrt(phrases.dim)
    summed += rng.normal(0.0, sigma, summed.shape).astype(np.float32)
    summed /= np.linalg.norm(summed, axis=1, keepdims=True)
    return parts, summed.astype(np.float32, copy=False)


def synth_texts(parts: npt.NDArray[np.int32], start: int = 0) -> list[str]:
    """The sentences of rows ``start``, ``start + 1``, ... given their phrase indices."""
    return [
        f"{SUBJECTS[s]} {VERBS[v]} {TOPICS[t]} {DETAILS[d]} (note {start + row})"
        for row, (s, v, t, d) in enumerate(parts.tolist())
    ]


def synth_sentences(n: int, *, seed: int = 7) -> list[str]:
    """``n`` memory sentences without vectors (for benchmarks that embed for real)."""
    rng = np.random.default_rng(seed)
    sizes = (len(SUBJECTS), len(VERBS), len(TOPICS), len(DETAILS))
    parts = np.stack([rng.integers(0, k, n) for k in sizes], axis=1).astype(np.int32)
    return synth_texts(parts)


def synth_queries(n: int, *, seed: int = 99) -> list[str]:
    """``n`` questions over the same vocabulary, in a few phrasings."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        form = rng.choice(_QUERY_FORMS)
        out.append(
            form.format(
                s=rng.choice(SUBJECTS).lower(),
                v=rng.choice(VERBS),
                t=rng.choice(TOPICS),
                t2=rng.choice(TOPICS),
                d=rng.choice(DETAILS),
            )
        )
    return out


def synth_fidelity(embedder: Embedder, phrases: Phrases, *, n: int = 200, seed: int = 7) -> float:
    """Mean cosine between the synthesized vectors of the first ``n`` rows and the real
    embeddings of their sentences: how far the synthesis is from the model."""
    rows = synth_rows(phrases, 0, n, seed=seed)
    real = np.asarray(embedder.embed_batch(rows.texts()), dtype=np.float32)
    return round(float(np.mean(np.sum(real * rows.vectors, axis=1))), 3)
