"""``memstack bench locomo --via mem0``: the benchmark through mem0's own Python client
(``mem0.MemoryClient``, PyPI ``mem0ai``) against a memstack server's mem0 routes, beside
the in-process run: what a program written for mem0 gets once it points ``host=`` at
memstack.

Each session of a sample is one ``add(messages, user_id=..., run_id="session-N",
infer=False, timestamp=<the session's date>)``, each turn a message with its speaker as
``name``, under a fresh user id that is erased at the end; the ids the add answers, in
message order, are the turns' dialogue ids. Each scored question is one
``search(question, filters={"user_id": ...}, top_k=10, threshold=0)``, scored as in
process; a ranking counts as identical when its dialogue ids are the in-process ones, in
order.

What the mem0 calls add per call is set against memstack's own client on the same server
in the same run: each session is also posted with ``add_turns`` (as ``--url`` posts it)
and each question recalled with ``recall(k=10, touch=False)``, under a twin user. The two
go in turns, each first every other time, since the one that goes second finds the
server's cache of recent texts' vectors warm.

A ranking through mem0 can differ from the in-process one in order while holding the same
ten turns (counted: ``same_results``): mem0's ``search`` orders by the calibrated score
(the one ``threshold`` reads), the recall by its ranking score; and equal scores are
ranked by memory id, which the in-process run takes from the dialogue id and an ``add``
draws afresh.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Final, Protocol

from memstack.bench.locomo import K, LocomoReport, scored_questions
from memstack.bench.locomo_data import Sample
from memstack.bench.locomo_remote import NO_EVICTION, session_batches, turn_in
from memstack.bench.metrics import QuestionResult, Summary, aggregate, score_ranking
from memstack.bench.progress import progress_bar
from memstack.bench.report import percentiles, ratio
from memstack.client import AuthError, MemoryClient
from memstack.errors import ConfigError
from memstack.longterm.turns import Turn

__all__ = ["Mem0Report", "run_via_mem0", "run_with_mem0"]

_TIMEOUT_S: Final = 300.0
"""A request's wait: a session's turns embedded on a busy CPU-only server take a while."""
_PAGE: Final = 200
"""mem0's largest page of ``get_all``."""


class Mem0Client(Protocol):
    """The calls of ``mem0.MemoryClient`` the benchmark makes (mem0 ships no types)."""

    def add(self, messages: list[dict[str, Any]], **kwargs: Any) -> dict[str, Any]: ...
    def search(self, query: str, **kwargs: Any) -> dict[str, Any]: ...
    def get_all(self, **kwargs: Any) -> dict[str, Any]: ...
    def delete_all(self, **kwargs: Any) -> dict[str, Any]: ...


@dataclass(frozen=True, kw_only=True)
class Mem0Report:
    """The run through mem0's client, with memstack's client and the in-process run."""

    url: str
    memstack: Summary
    identical: int
    """Questions whose ranking through mem0 is the in-process one, in order."""
    same_set: int
    """Questions whose ten results through mem0 are the in-process ones, in any order
    (R@10 reads only which they are)."""
    compared: int
    search_ms: dict[str, float]
    """One mem0 ``search``, timed at the client."""
    recall_ms: dict[str, float]
    """One ``recall`` of memstack's client on the same server, in the same run."""
    local_recall_ms: dict[str, float]
    add_ms: dict[str, float]
    """One mem0 ``add`` (one session's turns)."""
    add_turns_ms: dict[str, float]
    """The same session posted with memstack's ``add_turns``."""
    turns: int
    requests: int

    @property
    def search_added_ms(self) -> float:
        """What a mem0 ``search`` costs beyond memstack's ``recall``, at the p50."""
        return round(self.search_ms["p50"] - self.recall_ms["p50"], 2)

    @property
    def add_added_ms(self) -> float:
        """What a mem0 ``add`` costs beyond memstack's ``add_turns``, at the p50."""
        return round(self.add_ms["p50"] - self.add_turns_ms["p50"], 2)

    def to_json(self) -> dict[str, object]:
        return {
            "url": self.url,
            "overall": self.memstack["overall"],
            "per_category": self.memstack["per_category"],
            "questions": self.memstack["questions"],
            "identical_rankings": {"identical": self.identical, "compared": self.compared},
            "same_results": {"same": self.same_set, "compared": self.compared},
            "search_ms": self.search_ms,
            "recall_ms": self.recall_ms,
            "inprocess_recall_ms": self.local_recall_ms,
            "search_added_ms": self.search_added_ms,
            "search_over_recall": ratio(self.search_ms["p50"], self.recall_ms["p50"]),
            "add_ms": self.add_ms,
            "add_turns_ms": self.add_turns_ms,
            "add_added_ms": self.add_added_ms,
            "add_over_add_turns": ratio(self.add_ms["p50"], self.add_turns_ms["p50"]),
            "turns": self.turns,
            "requests": self.requests,
        }


@dataclass(kw_only=True)
class _Tally:
    results: list[QuestionResult] = field(default_factory=list)
    identical: int = 0
    same_set: int = 0
    search_ms: list[float] = field(default_factory=list)
    recall_ms: list[float] = field(default_factory=list)
    add_ms: list[float] = field(default_factory=list)
    add_turns_ms: list[float] = field(default_factory=list)
    turns: int = 0
    calls: int = 0
    """Calls made so far: which of the two clients goes first alternates with it."""


def run_via_mem0(
    url: str, api_key: str, samples: Sequence[Sample], local: LocomoReport
) -> Mem0Report:
    """``run_with_mem0`` against the server at ``url`` with ``api_key``: mem0's client
    made as a mem0 program makes it but for ``host=``, with a progress bar."""
    total = sum(len(scored_questions(s)) for s in samples)
    with (
        _mem0_client(url, api_key) as mem0,
        MemoryClient(url, api_key=api_key, timeout=_TIMEOUT_S) as client,
        progress_bar(total, "through mem0's client") as bar,
    ):
        return run_with_mem0(samples, mem0=mem0, client=client, local=local, progress=bar.update)


def run_with_mem0(
    samples: Sequence[Sample],
    *,
    mem0: Mem0Client,
    client: MemoryClient,
    local: LocomoReport,
    progress: Callable[[int], None] = lambda n: None,
) -> Mem0Report:
    """The run through ``mem0``, set against ``client`` (memstack's, on the same server)
    and ``local`` (``run_locomo`` on the same samples)."""
    tally = _Tally()
    for sample in samples:
        _run_sample(mem0, client, sample, local.rankings.get(sample.sample_id, []), tally, progress)
    return Mem0Report(
        url=client.base_url,
        memstack=aggregate(tally.results),
        identical=tally.identical,
        same_set=tally.same_set,
        compared=len(tally.results),
        search_ms=percentiles(tally.search_ms, (50, 95)),
        recall_ms=percentiles(tally.recall_ms, (50, 95)),
        local_recall_ms=local.recall_ms,
        add_ms=percentiles(tally.add_ms, (50, 95)),
        add_turns_ms=percentiles(tally.add_turns_ms, (50, 95)),
        turns=tally.turns,
        requests=len(tally.add_ms),
    )


@contextlib.contextmanager
def _mem0_client(url: str, api_key: str) -> Iterator[Mem0Client]:
    """mem0's client as a mem0 program makes it but for ``host=``, with mem0's telemetry
    off: nothing of the run leaves for mem0's servers."""
    mem0_class = _import_mem0()
    import httpx

    with httpx.Client(timeout=_TIMEOUT_S) as http:
        try:
            made: Mem0Client = mem0_class(api_key=api_key, host=url, client=http)
        except ValueError as exc:  # mem0's client checks the key on creation
            raise ConfigError(f"mem0's client refused the server at {url}: {exc}") from exc
        yield made


def _import_mem0() -> Any:
    """``mem0.MemoryClient``, imported with the two settings mem0 reads on import:
    ``MEM0_TELEMETRY=False`` (else each call queues an event for PostHog) and a
    ``MEM0_DIR`` of its own (else the import writes ``~/.mem0/config.json``)."""
    saved = {name: os.environ.get(name) for name in ("MEM0_TELEMETRY", "MEM0_DIR")}
    os.environ["MEM0_TELEMETRY"] = "False"
    if saved["MEM0_DIR"] is None:
        os.environ["MEM0_DIR"] = tempfile.mkdtemp(prefix="memstack-mem0-")
        atexit.register(shutil.rmtree, os.environ["MEM0_DIR"], True)
    try:
        from mem0 import MemoryClient as Mem0MemoryClient
    except ImportError as exc:
        raise ConfigError(
            "--via mem0 runs mem0's own client: install it with `pip install mem0ai`."
        ) from exc
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    return Mem0MemoryClient


def _run_sample(
    mem0: Mem0Client,
    client: MemoryClient,
    sample: Sample,
    expected: list[list[str]],
    tally: _Tally,
    progress: Callable[[int], None],
) -> None:
    """One sample under a fresh user through mem0 and its twin through memstack's client:
    ingest, the eviction check, the questions, both erased."""
    fresh = uuid.uuid4().hex[:12]
    user_id, twin_id = f"locomo-mem0-{fresh}", f"locomo-twin-{fresh}"
    try:
        dia_ids = _ingest(mem0, client, user_id, twin_id, sample, tally)
        _check_kept(mem0, user_id, len(dia_ids))
        _ask(mem0, client, (user_id, twin_id), sample, dia_ids, expected, tally, progress)
    except AuthError as exc:
        raise ConfigError(
            f"{exc} The benchmark needs a key with long-term memory: "
            "`memstack keys create --long-term`."
        ) from exc
    finally:
        with contextlib.suppress(Exception):  # a key that may not erase stored nothing
            mem0.delete_all(user_id=user_id)
        with contextlib.suppress(AuthError):
            client.erase_user(twin_id)


def _ingest(
    mem0: Mem0Client,
    client: MemoryClient,
    user_id: str,
    twin_id: str,
    sample: Sample,
    tally: _Tally,
) -> dict[str, str]:
    """Each session one mem0 ``add`` and one ``add_turns`` of the twin, in turns; the
    dialogue id of each memory id the adds answered."""
    dia_ids: dict[str, str] = {}
    for batch in session_batches(sample):
        answer = _in_turns(
            tally,
            (partial(mem0.add, _messages(batch), **_entity(user_id, batch)), tally.add_ms),
            (partial(client.add_turns, twin_id, [turn_in(t) for t in batch]), tally.add_turns_ms),
        )
        results = answer.get("results", [])
        added = sum(r.get("event") == "ADD" for r in results)
        if len(results) != len(batch) or added < len(batch):
            raise ConfigError(
                f"mem0's add kept {added} of the {len(batch)} messages of a session of the "
                f"fresh user {user_id!r}; the benchmark needs every turn kept. A server "
                "evicts a user's oldest memories past its MEMSTACK_MEMORY_MAX_ITEMS cap: "
                f"start it with {NO_EVICTION} (no eviction) for this benchmark."
            )
        for turn, result in zip(batch, results, strict=True):
            dia_ids[str(result["id"])] = str(turn.metadata["dia_id"])
        tally.turns += len(batch)
    return dia_ids


def _messages(batch: list[Turn]) -> list[dict[str, Any]]:
    return [{"role": "user", "content": turn.text, "name": turn.speaker} for turn in batch]


def _entity(user_id: str, batch: list[Turn]) -> dict[str, Any]:
    return {
        "user_id": user_id,
        "run_id": batch[0].session_id,
        "infer": False,
        "timestamp": int(batch[0].time),
    }


def _check_kept(mem0: Mem0Client, user_id: str, stored: int) -> None:
    """Stop when the server closed some of the turns it stored: it evicts past its cap."""
    kept = int(mem0.get_all(filters={"user_id": user_id}, page_size=_PAGE)["count"])
    if kept < stored:
        raise ConfigError(
            f"the server kept {kept} of the {stored} turns it stored for one conversation: "
            "it evicts a user's oldest memories past its MEMSTACK_MEMORY_MAX_ITEMS cap, so "
            f"its rankings cannot match the in-process run's. Start it with {NO_EVICTION} "
            "(no eviction) for this benchmark."
        )


def _ask(
    mem0: Mem0Client,
    client: MemoryClient,
    users: tuple[str, str],
    sample: Sample,
    dia_ids: dict[str, str],
    expected: list[list[str]],
    tally: _Tally,
    progress: Callable[[int], None],
) -> None:
    """Each scored question searched through mem0 and recalled through memstack's client,
    in turns; mem0's ranking scored and set against the in-process one."""
    user_id, twin_id = users
    for n, question in enumerate(scored_questions(sample)):
        search = partial(
            mem0.search, question.question, filters={"user_id": user_id}, top_k=K, threshold=0
        )
        recall = partial(client.recall, twin_id, question.question, k=K, touch=False)
        found = _in_turns(tally, (search, tally.search_ms), (recall, tally.recall_ms))
        ranking = [dia_ids.get(str(r["id"]), "?") for r in found.get("results", [])]
        tally.results.append(score_ranking(ranking, question.evidence, question.category))
        if n < len(expected):
            tally.identical += expected[n] == ranking
            tally.same_set += sorted(expected[n]) == sorted(ranking)
        progress(1)


def _in_turns(
    tally: _Tally,
    mem0_call: tuple[Callable[[], dict[str, Any]], list[float]],
    memstack_call: tuple[Callable[[], object], list[float]],
) -> dict[str, Any]:
    """Both calls, each timed into its list, mem0's first every other time; mem0's
    answer."""
    answer: dict[str, Any] = {}
    order = [0, 1] if tally.calls % 2 == 0 else [1, 0]
    tally.calls += 1
    for which in order:
        call, times = (mem0_call, memstack_call)[which]
        started = time.perf_counter()
        got = call()
        times.append((time.perf_counter() - started) * 1000)
        if which == 0:
            answer = dict(got) if isinstance(got, dict) else {}
    return answer
