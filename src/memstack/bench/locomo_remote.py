"""``memstack bench locomo --url``: the same benchmark through the REST API, beside the
in-process run, so that what a client on another machine gets can be read off against
what the library gives.

Each sample's turns are posted with ``MemoryClient.add_turns``, one request a session,
each turn exactly as the in-process run stores it (``memory_turn``: speaker, text,
session, time, metadata and id), under a fresh user id that is erased at the end. Each
scored question is recalled with ``recall(k=10, touch=False)`` and scored as in process;
a ranking counts as identical when its dialogue ids are the in-process ones, in order.

The rankings can only match when the server evicts nothing: past
``MEMSTACK_MEMORY_MAX_ITEMS`` a user's oldest turns are closed, so after each ingest the
run counts the user's current memories and stops, naming the setting, when some are gone.

Ingest is set against the embedder alone: the texts the server embeds for those turns
(``turn_text``: the turn without its context, which only keyword search reads), in the
same batches, embedded in this process by the same model right after each request. Their
ratio is the share of a request's time the embedding accounts for; the rest is HTTP,
checks and the store write.
"""

from __future__ import annotations

import contextlib
import re
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Final

from memstack.bench.locomo import K, LocomoReport, memory_turn, scored_questions
from memstack.bench.locomo_data import Sample
from memstack.bench.metrics import QuestionResult, Summary, aggregate, score_ranking
from memstack.bench.progress import progress_bar
from memstack.bench.report import percentiles, ratio
from memstack.client import AuthError, MemoryClient
from memstack.client.types import TurnIn, TurnsAdded
from memstack.embeddings import Embedder
from memstack.errors import ConfigError
from memstack.longterm.turns import Turn, turn_text

__all__ = [
    "NO_EVICTION",
    "RemoteReport",
    "run_against",
    "run_remote",
    "session_batches",
    "turn_in",
]

NO_EVICTION: Final = "MEMSTACK_MEMORY_MAX_ITEMS=0"
_MAX_BATCH: Final = 1_000
"""Turns per request at most (the server's limit a call)."""
_PAGE: Final = 1_000
_TIMEOUT_S: Final = 300.0
"""A request's wait: a session's turns embedded on a busy CPU-only server take a while."""
_ID_UNSAFE: Final = re.compile(r"[^A-Za-z0-9_.:@-]")
"""What a user id may not hold (``check_user_id``)."""


@dataclass(frozen=True, kw_only=True)
class RemoteReport:
    """The run through the REST API, with the in-process figures it is set against."""

    url: str
    memstack: Summary
    identical: int
    """Questions whose REST ranking is the in-process one, in order."""
    compared: int
    recall_ms: dict[str, float]
    local_recall_ms: dict[str, float]
    ingest_per_s: float
    local_ingest_per_s: float
    embed_alone_per_s: float
    request_ms: dict[str, float]
    """One ``add_turns`` request (one session's turns), timed at the client."""
    embed_batch_ms: dict[str, float]
    """The same batch's texts embedded alone, in this process."""
    turns: int
    requests: int
    refused: int

    @property
    def overhead_ms(self) -> float:
        """What a recall over REST costs beyond one in process, at the p50."""
        return round(self.recall_ms["p50"] - self.local_recall_ms["p50"], 2)

    @property
    def overhead_ratio(self) -> float | None:
        return ratio(self.recall_ms["p50"], self.local_recall_ms["p50"])

    @property
    def ingest_over_embed(self) -> float | None:
        """REST ingest over the embedder alone on the same texts (the target: >= 0.9)."""
        return ratio(self.ingest_per_s, self.embed_alone_per_s)

    def to_json(self) -> dict[str, object]:
        return {
            "url": self.url,
            "overall": self.memstack["overall"],
            "per_category": self.memstack["per_category"],
            "questions": self.memstack["questions"],
            "identical_rankings": {"identical": self.identical, "compared": self.compared},
            "recall_ms": self.recall_ms,
            "inprocess_recall_ms": self.local_recall_ms,
            "overhead_ms": self.overhead_ms,
            "overhead_ratio": self.overhead_ratio,
            "ingest_per_s": round(self.ingest_per_s, 1),
            "inprocess_ingest_per_s": round(self.local_ingest_per_s, 1),
            "embed_alone_per_s": round(self.embed_alone_per_s, 1),
            "ingest_over_embed": self.ingest_over_embed,
            "request_ms": self.request_ms,
            "embed_batch_ms": self.embed_batch_ms,
            "turns": self.turns,
            "requests": self.requests,
            "refused": self.refused,
        }


@dataclass(kw_only=True)
class _Tally:
    results: list[QuestionResult] = field(default_factory=list)
    identical: int = 0
    recall_ms: list[float] = field(default_factory=list)
    request_ms: list[float] = field(default_factory=list)
    embed_ms: list[float] = field(default_factory=list)
    turns: int = 0
    refused: int = 0


def run_against(
    url: str, api_key: str, samples: Sequence[Sample], embedder: Embedder, local: LocomoReport
) -> RemoteReport:
    """``run_remote`` against the server at ``url`` with ``api_key``, with a progress bar."""
    total = sum(len(scored_questions(s)) for s in samples)
    with (
        MemoryClient(url, api_key=api_key, timeout=_TIMEOUT_S) as client,
        progress_bar(total, "over REST") as bar,
    ):
        return run_remote(
            samples, client=client, embedder=embedder, local=local, progress=bar.update
        )


def run_remote(
    samples: Sequence[Sample],
    *,
    client: MemoryClient,
    embedder: Embedder,
    local: LocomoReport,
    progress: Callable[[int], None] = lambda n: None,
) -> RemoteReport:
    """The run through ``client``'s server, set against ``local`` (``run_locomo`` on the
    same samples); ``embedder`` is the in-process run's, for the embedder-alone figure."""
    tally = _Tally()
    for sample in samples:
        expected = local.rankings.get(sample.sample_id, [])
        _run_sample(client, embedder, sample, expected, tally, progress)
    return RemoteReport(
        url=client.base_url,
        memstack=aggregate(tally.results),
        identical=tally.identical,
        compared=len(tally.results),
        recall_ms=percentiles(tally.recall_ms, (50, 95)),
        local_recall_ms=local.recall_ms,
        ingest_per_s=_per_s(tally.turns, tally.request_ms),
        local_ingest_per_s=local.ingest_per_s,
        embed_alone_per_s=_per_s(tally.turns, tally.embed_ms),
        request_ms=percentiles(tally.request_ms, (50, 95)),
        embed_batch_ms=percentiles(tally.embed_ms, (50, 95)),
        turns=tally.turns,
        requests=len(tally.request_ms),
        refused=tally.refused,
    )


def session_batches(sample: Sample) -> list[list[Turn]]:
    """The sample's turns as stored, one batch a session (split past the server's limit)."""
    sessions: dict[str, list[Turn]] = {}
    for turn in sample.turns:
        stored = memory_turn(turn)
        sessions.setdefault(stored.session_id, []).append(stored)
    return [
        turns[start : start + _MAX_BATCH]
        for turns in sessions.values()
        for start in range(0, len(turns), _MAX_BATCH)
    ]


def _run_sample(
    client: MemoryClient,
    embedder: Embedder,
    sample: Sample,
    expected: list[list[str]],
    tally: _Tally,
    progress: Callable[[int], None],
) -> None:
    """One sample under a fresh user: ingest, the eviction check, the questions, erased."""
    user_id = f"locomo-{_ID_UNSAFE.sub('-', sample.sample_id)[:64]}-{uuid.uuid4().hex[:12]}"
    try:
        stored = _ingest(client, embedder, user_id, sample, tally)
        _check_kept(client, user_id, stored)
        _ask(client, user_id, sample, expected, tally, progress)
    except AuthError as exc:
        raise _refused(exc) from exc
    finally:
        # A key that may not use long-term memory stored nothing, and may not erase.
        with contextlib.suppress(AuthError):
            client.erase_user(user_id)


def _ingest(
    client: MemoryClient, embedder: Embedder, user_id: str, sample: Sample, tally: _Tally
) -> int:
    """The sample's turns posted one session a request, timed, each request followed by
    its texts embedded alone (side by side, a change in the machine's load touches both
    figures alike); how many turns were stored."""
    stored = 0
    for batch in session_batches(sample):
        sent = [turn_in(turn) for turn in batch]
        started = time.perf_counter()
        answer = client.add_turns(user_id, sent)
        tally.request_ms.append(_ms_since(started))
        tally.embed_ms.append(_embed_alone(embedder, batch))
        kept = _outcomes(answer, user_id)
        stored += kept
        tally.turns += len(batch)
        tally.refused += len(batch) - kept
    return stored


def turn_in(turn: Turn) -> TurnIn:
    """A stored turn as memstack's client posts it, its id and metadata as in process."""
    assert turn.id is not None
    return {
        "speaker": turn.speaker,
        "text": turn.text,
        "session_id": turn.session_id,
        "time": turn.time,
        "id": turn.id,
        "metadata": dict(turn.metadata),
    }


def _outcomes(answer: TurnsAdded, user_id: str) -> int:
    """How many turns were stored; a turn the secret filter refused is refused in process
    too, but any other outcome means the user was not fresh or memory was vetoed."""
    for outcome in answer["turns"]:
        if outcome["outcome"] not in ("stored", "refused"):
            raise ConfigError(
                f"the server answered {outcome['outcome']!r} for turn {outcome['id']!r} of "
                f"the fresh user {user_id!r}; the benchmark needs every turn stored."
            )
    return sum(o["outcome"] == "stored" for o in answer["turns"])


def _check_kept(client: MemoryClient, user_id: str, stored: int) -> None:
    """Stop when the server closed some of the turns it stored: it evicts past its cap."""
    kept = _current(client, user_id)
    if kept < stored:
        raise ConfigError(
            f"the server kept {kept} of the {stored} turns it stored for one conversation: it "
            "evicts a user's oldest memories past its MEMSTACK_MEMORY_MAX_ITEMS cap, so its "
            f"rankings cannot match the in-process run's. Start it with {NO_EVICTION} "
            "(no eviction) for this benchmark."
        )


def _current(client: MemoryClient, user_id: str) -> int:
    """How many current memories the user holds (closed versions left out)."""
    count, cursor = 0, None
    while True:
        page = client.user_memories(user_id, limit=_PAGE, cursor=cursor)
        count += len(page["memories"])
        cursor = page["next_cursor"]
        if cursor is None:
            return count


def _ask(
    client: MemoryClient,
    user_id: str,
    sample: Sample,
    expected: list[list[str]],
    tally: _Tally,
    progress: Callable[[int], None],
) -> None:
    """Each scored question recalled over REST, timed, scored and set against process."""
    for n, question in enumerate(scored_questions(sample)):
        started = time.perf_counter()
        found = client.recall(user_id, question.question, k=K, touch=False)
        tally.recall_ms.append(_ms_since(started))
        ranking = [str(r["metadata"].get("dia_id")) for r in found["results"]]
        tally.results.append(score_ranking(ranking, question.evidence, question.category))
        tally.identical += n < len(expected) and expected[n] == ranking
        progress(1)


def _embed_alone(embedder: Embedder, batch: list[Turn]) -> float:
    """Milliseconds to embed a request's texts alone, as the server embeds them."""
    texts = [turn_text(turn) for turn in batch]
    started = time.perf_counter()
    embedder.embed_batch(texts)
    return _ms_since(started)


def _refused(exc: AuthError) -> ConfigError:
    if exc.status == 403:
        return ConfigError(
            f"{exc} The benchmark needs a key with long-term memory: create one with "
            "`memstack keys create --long-term`, or start the server with "
            "MEMSTACK_MEMORY_ENABLED=1."
        )
    return ConfigError(f"{exc} Pass the server's key with --api-key.")


def _per_s(turns: int, ms: list[float]) -> float:
    total = sum(ms) / 1000
    return turns / total if total else 0.0


def _ms_since(started: float) -> float:
    return (time.perf_counter() - started) * 1000
