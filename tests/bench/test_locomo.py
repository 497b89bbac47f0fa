import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from memstack.bench.locomo_data import load_locomo, normalize_evidence
from memstack.bench.metrics import aggregate, score_ranking
from memstack.cli import main
from memstack.errors import InvalidInput


def _conversation() -> list[dict[str, object]]:
    return [
        {
            "sample_id": "conv-x",
            "conversation": {
                "speaker_a": "Ana",
                "speaker_b": "Ben",
                "session_1_date_time": "1:56 pm on 8 May, 2023",
                "session_1": [
                    {
                        "speaker": "Ana",
                        "dia_id": "D1:1",
                        "text": "I adopted a puppy named Biscuit!",
                    },
                    {
                        "speaker": "Ben",
                        "dia_id": "D1:2",
                        "text": "Lovely. I started learning the cello.",
                    },
                    {
                        "speaker": "Ana",
                        "dia_id": "D1:3",
                        "text": "I work as a nurse at the city hospital.",
                    },
                ],
                "session_2_date_time": "10:00 am on 9 June, 2023",
                "session_2": [
                    {
                        "speaker": "Ben",
                        "dia_id": "D2:1",
                        "text": "My cello teacher moved to Vienna.",
                        "img_url": ["x"],
                        "blip_caption": "a photo of a cello",
                    },
                    {"speaker": "Ana", "dia_id": "D2:2", "text": "Biscuit chewed my shoes again."},
                ],
                "session_3_date_time": "no such session",
            },
            "qa": [
                {
                    "question": "What is the name of Ana's puppy?",
                    "answer": "Biscuit",
                    "evidence": ["D1:1"],
                    "category": 4,
                },
                {
                    "question": "Where did Ben's cello teacher move?",
                    "answer": "Vienna",
                    "evidence": ["D2:1; D1:2"],
                    "category": 1,
                },
                {
                    "question": "What is Ana's job?",
                    "answer": 7,
                    "evidence": ["D:1:3", "D9:9", "D"],
                    "category": 2,
                },
                {
                    "question": "Trick question",
                    "adversarial_answer": "none",
                    "evidence": ["D1:1"],
                    "category": 5,
                },
                {"question": "No evidence", "answer": "x", "evidence": [], "category": 3},
            ],
        }
    ]


@pytest.fixture
def data_file(tmp_path: Path) -> Path:
    path = tmp_path / "tiny-locomo.json"
    path.write_text(json.dumps(_conversation()), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("raw", "ids", "repaired", "bad"),
    [
        (["D1:3"], ["D1:3"], 0, []),
        (["D8:6; D9:17"], ["D8:6", "D9:17"], 1, []),
        (["D1:2 D1:3"], ["D1:2", "D1:3"], 1, []),
        (["D:11:26"], ["D11:26"], 1, []),
        (["D30:05"], ["D30:5"], 1, []),
        (["D"], [], 0, ["D"]),
        ("D2:4", ["D2:4"], 0, []),
    ],
)
def test_evidence_repair(raw, ids, repaired, bad):
    assert normalize_evidence(raw) == (ids, repaired, bad)


def test_loader_tolerates_the_known_defects(data_file: Path):
    samples, stats = load_locomo(data_file)
    (sample,) = samples
    assert [t.dia_id for t in sample.turns] == ["D1:1", "D1:2", "D1:3", "D2:1", "D2:2"]
    assert (
        sample.turns[0].memory_text
        == "[1:56 pm on 8 May, 2023] Ana: I adopted a puppy named Biscuit!"
    )
    assert sample.turns[3].caption == "a photo of a cello"
    assert sample.questions[1].evidence == ("D2:1", "D1:2")
    assert sample.questions[2].evidence == ("D1:3",)
    assert sample.questions[2].answer == "7"
    assert stats.evidence_dropped == ["conv-x:D", "conv-x:D9:9"]
    assert sample.turns[0].timestamp < sample.turns[3].timestamp


@pytest.mark.parametrize("content", ["{not json", '{"a": 1}', '[{"no": "conversation"}]'])
def test_loader_names_what_is_wrong(tmp_path: Path, content: str):
    path = tmp_path / "bad.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(InvalidInput):
        load_locomo(path)


def test_metrics():
    perfect = score_ranking(["a", "b"], ["a", "b"], 1)
    assert perfect.metrics == {"R@5": 1.0, "Hit@5": 1.0, "R@10": 1.0, "Hit@10": 1.0, "MRR": 1.0}
    late = score_ranking(["x", "y", "z", "w", "v", "u", "a"], ["a", "b"], 2)
    assert late.metrics == {
        "R@5": 0.0,
        "Hit@5": 0.0,
        "R@10": 0.5,
        "Hit@10": 1.0,
        "MRR": pytest.approx(1 / 7),
    }
    summary = aggregate([perfect, late])
    assert summary["overall"]["R@10"] == 0.75
    assert set(summary["per_category"]) == {"1", "2"}


@pytest.mark.parametrize("store", ["memory", "sqlite"])
def test_bench_locomo_command(data_file: Path, tmp_path: Path, store: str):
    out = tmp_path / "report.json"
    result = CliRunner().invoke(
        main,
        [
            "bench",
            "locomo",
            "--data",
            str(data_file),
            "--store",
            store,
            "--embedder",
            "hash",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "memstack" in result.output and "bm25" in result.output and "vector" in result.output
    report = json.loads(out.read_text())
    assert set(report["overall"]) == {"R@5", "Hit@5", "R@10", "Hit@10", "MRR"}
    assert set(report["per_category"]) == {"1", "2", "4"}
    assert report["questions"] == 3
    assert set(report["baselines"]) == {"bm25", "vector"}
    assert report["ingest_per_s"] > 0
    assert set(report["recall_ms"]) == {"p50", "p95"}
    assert report["embed_ms"]["p50"] > 0
    assert report["recall_over_embed"] == round(
        report["recall_ms"]["p50"] / report["embed_ms"]["p50"], 3
    )
    assert "query embedding alone" in result.output
    # the puppy question is easy: its evidence is the only turn with "Biscuit" and "puppy"
    assert report["baselines"]["bm25"]["per_category"]["4"]["Hit@5"] == 1.0
    assert report["per_category"]["4"]["Hit@5"] == 1.0


def test_bench_locomo_missing_file_is_a_clear_error(tmp_path: Path):
    result = CliRunner().invoke(main, ["bench", "locomo", "--data", str(tmp_path / "nope.json")])
    assert result.exit_code != 0
    assert "no LoCoMo file" in str(result.exception) or "no LoCoMo file" in result.output


def test_bench_locomo_ablates_each_mechanism_in_its_own_run(data_file: Path, tmp_path: Path):
    out = tmp_path / "report.json"
    args = ["bench", "locomo", "--data", str(data_file), "--store", "memory"]
    result = CliRunner().invoke(
        main, [*args, "--embedder", "hash", "--ablate", "context,time", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    assert set(report["ablations"]) == {"context", "time"}
    assert set(report["ablations"]["context"]["overall"]) == set(report["overall"])
    assert "without context" in result.output and "without time" in result.output
    assert report["halves"] == {}  # the weights were tuned on conversations not in this file


def test_bench_locomo_gives_each_halfs_categories_and_the_ablations_halves(tmp_path: Path):
    """Each half's JSON holds its categories, an ablation's halves too."""
    tuned, other = _conversation()[0], _conversation()[0]
    tuned["sample_id"], other["sample_id"] = "conv-26", "conv-42"
    data = tmp_path / "two.json"
    data.write_text(json.dumps([tuned, other]), encoding="utf-8")
    out = tmp_path / "report.json"
    args = ["bench", "locomo", "--data", str(data), "--store", "memory", "--embedder", "hash"]
    result = CliRunner().invoke(main, [*args, "--ablate", "time", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "without time" in result.output
    report = json.loads(out.read_text())
    assert set(report["halves"]) == {"tuned", "other"}
    assert set(report["halves"]["other"]["per_category"]) == {"1", "2", "4"}
    halves = report["ablations"]["time"]["halves"]
    assert set(halves) == {"tuned", "other"}
    assert set(halves["tuned"]["per_category"]) == {"1", "2", "4"}


def test_bench_locomo_refuses_an_unknown_mechanism(data_file: Path):
    result = CliRunner().invoke(
        main, ["bench", "locomo", "--data", str(data_file), "--ablate", "context,magic"]
    )
    assert result.exit_code == 2
    assert "unknown magic" in result.output and "speaker" in result.output


async def test_without_context_a_turn_is_found_only_by_its_own_words(tmp_path: Path):
    from memstack.bench.locomo import run_locomo
    from memstack.clock import SystemClock
    from memstack.embeddings import HashEmbedder
    from memstack.storage import InMemoryRecordStore

    samples, stats = load_locomo(_answer_next_door(tmp_path))
    runs = {}
    for off in ([], ["context"]):
        store = InMemoryRecordStore()
        store.setup()
        runs[tuple(off)] = await run_locomo(
            samples,
            stats,
            store=store,
            store_name="memory",
            embedder=HashEmbedder(),
            clock=SystemClock(),
            off=off,
        )
    with_context = runs[()].memstack["overall"]["Hit@5"]
    without = runs[("context",)].memstack["overall"]["Hit@5"]
    assert (with_context, without) == (1.0, 0.0)


def _answer_next_door(tmp_path: Path) -> Path:
    """A conversation whose answer shares no word with the question; the turn before it does."""
    filler = [f"Let us talk about topic number {i} for a while" for i in range(30)]
    turns = [
        {"speaker": "Ann" if i % 2 else "Bob", "dia_id": f"D1:{i + 1}", "text": text}
        for i, text in enumerate(
            [
                *filler[:15],
                "How long have you been married?",
                "Five wonderful summers",
                *filler[15:],
            ]
        )
    ]
    path = tmp_path / "next_door.json"
    path.write_text(
        json.dumps(
            [
                {
                    "sample_id": "conv-n",
                    "conversation": {
                        "speaker_a": "Bob",
                        "speaker_b": "Ann",
                        "session_1_date_time": "1:56 pm on 8 May, 2023",
                        "session_1": turns,
                    },
                    "qa": [
                        {
                            "question": "How long married?",
                            "answer": "5 years",
                            "category": 4,
                            "evidence": ["D1:17"],
                        }
                    ],
                }
            ]
        )
    )
    return path


def test_an_ablation_zeroes_the_weight_of_what_it_switches_off():
    from memstack.bench.locomo import _switched_off, switched
    from memstack.longterm.scoring import ContextWeights

    assert _switched_off({"time"})[0] == ContextWeights(time=0.0)
    assert _switched_off({"context"}) == (ContextWeights(), 0)
    assert switched("time") == "without time"
