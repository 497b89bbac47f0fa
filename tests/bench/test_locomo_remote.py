"""``memstack bench locomo --url``: the benchmark through a real server's REST API, over
real HTTP, beside the in-process run: the same metrics, every ranking identical, the
fresh user erased; a server that evicts, or a key without long-term memory, stops it
with a message naming the fix."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from memstack.bench.locomo import LocomoReport
from memstack.bench.locomo_data import LoadStats
from memstack.bench.locomo_remote import RemoteReport
from memstack.bench.locomo_report import remote_text
from memstack.bench.metrics import aggregate, score_ranking
from memstack.cli import main
from memstack.embeddings import HashEmbedder
from memstack.wiring import Services, open_services
from tests.server.conftest import LiveServer, serve_in_thread

_SESSIONS = (
    ("1:56 pm on 8 May, 2023", "puppy Biscuit", "cello lessons", "night shift nurse"),
    ("10:00 am on 9 June, 2023", "teacher in Vienna", "shoes chewed", "marathon training"),
    ("4:30 pm on 2 July, 2023", "garden tomatoes", "trip to Lisbon", "new bicycle"),
)


_FILLER = ("Tell me more next time.", "Ha, sounds like you.", "The weather was odd.")


def _sample(n: int) -> dict[str, object]:
    """A conversation of three sessions, eight turns each (five of small talk), a question
    per category and one whose evidence is every turn of small talk."""
    a, b = f"Ana{n}", f"Ben{n}"
    conversation: dict[str, object] = {"speaker_a": a, "speaker_b": b}
    for s, (date, *topics) in enumerate(_SESSIONS, 1):
        conversation[f"session_{s}_date_time"] = date
        talk = [f"{_FILLER[(i + s) % 3]} ({i})" for i in range(5)]
        conversation[f"session_{s}"] = [
            {"speaker": a, "dia_id": f"D{s}:1", "text": f"I talked about {topics[0]} today."},
            {"speaker": b, "dia_id": f"D{s}:2", "text": f"Nice! Mine is {topics[1]}."},
            {"speaker": a, "dia_id": f"D{s}:3", "text": f"Also {topics[2]} for me, {b}."},
            *(
                {"speaker": (a, b)[i % 2], "dia_id": f"D{s}:{4 + i}", "text": text}
                for i, text in enumerate(talk)
            ),
        ]
    small_talk = [f"D{s}:{4 + i}" for s in range(1, 4) for i in range(5)]
    qa = [
        {"question": "What is the puppy called?", "evidence": ["D1:1"], "category": 4},
        {"question": "Where did the teacher go?", "evidence": ["D2:1", "D1:2"], "category": 1},
        {"question": "When was the trip to Lisbon?", "evidence": ["D3:2"], "category": 2},
        {"question": "Who trains for a marathon?", "evidence": ["D2:3"], "category": 3},
        # more evidence than a ranking of ten holds: R@10 below 1 for sure
        {"question": "What small talk was there?", "evidence": small_talk, "category": 3},
    ]
    return {"sample_id": f"conv-{n}", "conversation": conversation, "qa": qa}


@pytest.fixture
def data_file(tmp_path: Path) -> Path:
    path = tmp_path / "tiny-locomo.json"
    path.write_text(json.dumps([_sample(1), _sample(2)]), encoding="utf-8")
    return path


def _serve(tmp_path: Path, max_items: int) -> Iterator[tuple[Services, LiveServer]]:
    services = open_services(
        store_url=f"sqlite:///{tmp_path / 'server.db'}",
        redis_url=None,
        embedder=HashEmbedder(),
        memory_max_items=max_items,
    )
    live = serve_in_thread(services)
    yield services, live
    live.server.should_exit = True
    live.thread.join(timeout=10)
    services.close()


@pytest.fixture
def no_eviction(tmp_path: Path) -> Iterator[tuple[Services, LiveServer]]:
    yield from _serve(tmp_path, 0)


@pytest.fixture
def evicting(tmp_path: Path) -> Iterator[tuple[Services, LiveServer]]:
    yield from _serve(tmp_path, 5)


def _bench(data: Path, *extra: str) -> Result:
    args = ["bench", "locomo", "--data", str(data), "--store", "sqlite", "--embedder", "hash"]
    return CliRunner().invoke(main, [*args, *extra])


def test_rest_ranks_every_question_as_in_process(
    data_file: Path, tmp_path: Path, no_eviction: tuple[Services, LiveServer]
):
    services, live = no_eviction
    key = services.keys.create(tenant="acme", long_term=True)[0]
    out = tmp_path / "report.json"
    result = _bench(data_file, "--url", live.url, "--api-key", key, "--out", str(out))
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    remote = report["remote"]
    assert report["questions"] == remote["questions"] == 10
    assert remote["identical_rankings"] == {"identical": 10, "compared": 10}
    assert remote["overall"] == report["overall"]
    assert remote["per_category"] == report["per_category"]
    assert 0 < report["overall"]["R@10"] < 1
    assert "identical rankings: 10/10" in result.output
    assert remote["turns"] == 48 and remote["requests"] == 6 and remote["refused"] == 0
    assert remote["ingest_per_s"] > 0 and remote["embed_alone_per_s"] > 0
    # each figure is rounded as written, so the ratio of the written ones may differ by
    # one in the last place from the ratio written
    assert remote["ingest_over_embed"] == pytest.approx(
        remote["ingest_per_s"] / remote["embed_alone_per_s"], abs=0.0051
    )
    assert remote["overhead_ms"] == round(
        remote["recall_ms"]["p50"] - report["recall_ms"]["p50"], 2
    )
    assert "REST ingest / embedder alone" in result.output
    # each sample's fresh user is erased at the end
    left = services.records.namespaces("users/")
    assert sum(services.records.count(ns) for ns in left) == 0


def test_a_server_that_evicts_stops_the_run_naming_the_setting(
    data_file: Path, evicting: tuple[Services, LiveServer]
):
    services, live = evicting
    key = services.keys.create(tenant="acme", long_term=True)[0]
    result = _bench(data_file, "--url", live.url, "--api-key", key)
    assert result.exit_code == 1, result.output
    assert "kept 5 of the 24 turns" in result.output
    assert "MEMSTACK_MEMORY_MAX_ITEMS=0" in result.output
    left = services.records.namespaces("users/")
    assert sum(services.records.count(ns) for ns in left) == 0


def test_a_key_without_long_term_memory_is_told_the_fix(
    data_file: Path, no_eviction: tuple[Services, LiveServer]
):
    services, live = no_eviction
    key = services.keys.create(tenant="acme")[0]
    result = _bench(data_file, "--url", live.url, "--api-key", key)
    assert result.exit_code == 1, result.output
    assert "(403)" in result.output
    assert "The benchmark needs a key with long-term memory" in result.output
    assert "memstack keys create --long-term" in result.output


@pytest.mark.parametrize("key", [[], ["--api-key", ""]])
def test_url_needs_a_key(data_file: Path, key: list[str]):
    result = _bench(data_file, "--url", "http://127.0.0.1:9", *key)
    assert result.exit_code == 2
    assert "--url and --api-key go together" in result.output


def test_the_help_names_the_server_settings():
    result = CliRunner().invoke(main, ["bench", "locomo", "--help"])
    assert result.exit_code == 0
    text = " ".join(result.output.split())
    assert "MEMSTACK_MEMORY_MAX_ITEMS=0" in text and "--long-term" in text


@pytest.mark.parametrize(("ingest", "warned"), [(95.0, False), (250.0, True)])
def test_a_server_faster_than_its_model_is_flagged_as_cached(ingest: float, warned: bool):
    summary = aggregate([score_ranking(["D1:1"], ["D1:1"], 4)])
    local = LocomoReport(
        memstack=summary,
        baselines={},
        ingest_per_s=90.0,
        recall_ms={"p50": 7.0, "p95": 9.0},
        embed_ms={"p50": 6.0, "p95": 7.0},
        load=LoadStats(),
        store="sqlite",
        embedder="local",
    )
    remote = RemoteReport(
        url="http://127.0.0.1:8765",
        memstack=summary,
        identical=1,
        compared=1,
        recall_ms={"p50": 9.0, "p95": 11.0},
        local_recall_ms=local.recall_ms,
        ingest_per_s=ingest,
        local_ingest_per_s=90.0,
        embed_alone_per_s=100.0,
        request_ms={"p50": 200.0, "p95": 250.0},
        embed_batch_ms={"p50": 190.0, "p95": 240.0},
        turns=20,
        requests=1,
        refused=0,
    )
    text = remote_text(remote, local)
    assert "overhead per recall +2.00 ms at the p50 (1.29x)" in text
    assert f"REST ingest / embedder alone = {ingest / 100}" in text
    assert ("vectors cached" in text) is warned
