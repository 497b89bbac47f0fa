"""``memstack bench calibrate`` (issues 33 and 42): the logistic fit (balanced class
weights by default), the cut's figures at a threshold, the best-ranked evidence's survival,
the default threshold's rule, and the command end to end on LoCoMo-schema data."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from memstack.bench.calibrate import halves
from memstack.bench.calibrate_fit import (
    Seen,
    at_threshold,
    base_rate,
    fit,
    log_loss,
    pick_threshold,
    reliability,
    survival,
)
from memstack.bench.locomo_data import load_locomo
from memstack.cli import main
from memstack.longterm.calibration import Calibration
from tests.bench.test_locomo import _conversation

EASY = Calibration(intercept=-5.0, relevance=10.0, coverage=0.0)
"""0.5 at relevance 0.5; about 0.95 at 0.8 and 0.05 at 0.2."""


def _seen(
    question: int,
    relevance: float,
    evidence: bool,
    *,
    foreign: bool = False,
    rank: int = 0,
    similarity: float = 0.0,
) -> Seen:
    return Seen(
        half="tuned",
        question=question,
        foreign=foreign,
        rank=rank,
        relevance=relevance,
        similarity=similarity,
        coverage=0.0,
        evidence=evidence,
    )


def test_the_fit_finds_the_curve_that_made_the_data():
    rng = np.random.default_rng(7)
    truth = Calibration(intercept=-4.0, relevance=5.0, coverage=2.0)
    seen = []
    for i in range(20_000):
        relevance, cover = float(rng.uniform(-0.2, 1.0)), float(rng.choice([0, 0.5, 1]))
        chance = truth.of(relevance, cover)
        seen.append(
            Seen(
                half="tuned",
                question=i,
                foreign=False,
                rank=0,
                relevance=relevance,
                similarity=relevance,
                coverage=cover,
                evidence=bool(rng.uniform() < chance),
            )
        )
    fitted = fit(seen, balanced=False)
    assert fitted.intercept == pytest.approx(truth.intercept, abs=0.3)
    assert fitted.relevance == pytest.approx(truth.relevance, abs=0.3)
    assert fitted.coverage == pytest.approx(truth.coverage, abs=0.3)
    assert log_loss(seen, fitted, balanced=False) <= log_loss(seen, EASY, balanced=False)
    # Balanced class weights keep the slopes and move the intercept to even odds: by the
    # log of how many more memories are not evidence than are.
    rate = base_rate(seen)
    assert 0.1 < rate < 0.5  # the data is unbalanced enough for the shift to show
    balanced = fit(seen)
    shift = math.log((1 - rate) / rate)
    assert balanced.intercept == pytest.approx(truth.intercept + shift, abs=0.3)
    assert balanced.relevance == pytest.approx(truth.relevance, abs=0.3)
    assert balanced.coverage == pytest.approx(truth.coverage, abs=0.3)
    assert log_loss(seen, balanced) < log_loss(seen, fitted)  # each fit wins its own loss
    assert log_loss(seen, fitted, balanced=False) < log_loss(seen, balanced, balanced=False)
    with pytest.raises(ValueError, match="evidence"):
        fit([_seen(0, 0.5, False), _seen(1, 0.9, False)])


def test_the_cut_s_figures_at_a_threshold():
    seen = [
        _seen(0, 0.8, True),  # kept, evidence
        _seen(0, 0.2, False),
        _seen(1, 0.2, True),  # evidence the cut loses
        _seen(1, 0.6, False),  # kept, not evidence
        _seen(2, 0.1, False),  # question 2 keeps nothing
        _seen(3, 0.9, False, foreign=True),  # another conversation's question keeps one
        _seen(4, 0.3, False, foreign=True),
    ]
    row = at_threshold(seen, EASY, 0.5)
    assert row == {
        "min_score": 0.5,
        "kept": 0.4,  # 2 of the 5 own memories
        "precision": 0.5,
        "recall": 0.5,
        "hit": pytest.approx(1 / 3, abs=1e-4),
        "top_evidence": 0.5,  # question 0's evidence is kept, question 1's is not
        "empty": pytest.approx(1 / 3, abs=1e-4),
        "irrelevant": 0.5,
    }
    everything = at_threshold(seen, EASY, 0.0)
    assert (everything["kept"], everything["recall"], everything["irrelevant"]) == (1, 1, 1)


def test_survival_follows_the_best_ranked_evidence_and_the_foreign_questions():
    seen = [
        _seen(0, 0.2, True, rank=1, similarity=0.9),  # the best-ranked evidence: cut
        _seen(0, 0.9, True, rank=4, similarity=0.1),  # evidence ranked lower: kept
        _seen(0, 0.1, False, rank=0, similarity=0.9),
        _seen(1, 0.8, True, rank=2, similarity=0.2),  # the best-ranked evidence: kept
        _seen(2, 0.9, False, rank=0, similarity=0.1),  # no evidence recalled
        _seen(3, 0.9, False, foreign=True, similarity=0.1),  # keeps one
        _seen(4, 0.1, False, foreign=True, similarity=0.2),  # keeps nothing
        _seen(5, 0.2, False, foreign=True, similarity=0.9),
    ]
    on_relevance = survival(seen, lambda s: s.relevance, 0.5)
    # Of the 2 questions with evidence, 1 keeps its best-ranked one; 2 of 3 keep some.
    assert on_relevance == {
        "top_evidence": 0.5,
        "hit": pytest.approx(2 / 3, abs=1e-4),
        "foreign_empty": pytest.approx(2 / 3, abs=1e-4),
    }
    on_similarity = survival(seen, lambda s: s.similarity, 0.5)
    assert on_similarity == {
        "top_evidence": 0.5,  # question 0 now, question 1 not
        "hit": pytest.approx(1 / 3, abs=1e-4),
        "foreign_empty": pytest.approx(2 / 3, abs=1e-4),
    }
    assert survival(seen, lambda s: s.relevance, 0.0)["foreign_empty"] == 0.0


def test_the_reliability_gives_the_chance_at_the_base_rate_beside_the_value():
    seen = [_seen(i, 0.5, i % 10 == 0) for i in range(100)]  # EASY gives 0.5 to each
    (row,) = reliability(seen, EASY, 0.1)
    assert row["predicted"] == 0.5 and row["observed"] == 0.1
    assert row["chance"] == pytest.approx(0.1, abs=1e-4)  # even odds moved back to 1 in 10
    (same,) = reliability(seen, EASY, 0.5)
    assert same["chance"] == 0.5


def test_the_default_is_the_lowest_threshold_few_foreign_questions_reach():
    # 40 questions about another conversation, their best chances 0.025, 0.05, .. 1.0.
    tops = [0.025 * (i + 1) for i in range(40)]
    seen = [
        _seen(i, (math.log(top / (1 - top)) + 5) / 10 if top < 1 else 5.0, False, foreign=True)
        for i, top in enumerate(tops)
    ]
    # At most 5% (2 of 40) may reach it: the two best are 0.975 and 1.0.
    assert pick_threshold(seen, EASY) == 0.96
    assert pick_threshold([_seen(0, 0.5, True)], EASY) is None


def _data(tmp_path: Path, ids: list[str]) -> Path:
    sample = _conversation()[0]
    data = tmp_path / "locomo.json"
    data.write_text(json.dumps([{**sample, "sample_id": i} for i in ids]), encoding="utf-8")
    return data


def test_the_halves_are_tuned_on_or_the_file_s_two_halves(tmp_path: Path):
    samples, _ = load_locomo(_data(tmp_path, ["conv-42", "conv-26", "conv-43"]))
    tuned, other = halves(samples)
    assert [s.sample_id for s in tuned] == ["conv-26"]
    assert [s.sample_id for s in other] == ["conv-42", "conv-43"]
    samples, _ = load_locomo(_data(tmp_path, ["a", "b", "c"]))
    assert [[s.sample_id for s in h] for h in halves(samples)] == [["a", "b"], ["c"]]
    samples, _ = load_locomo(_data(tmp_path, ["a"]))
    with pytest.raises(ValueError, match="two conversations"):
        halves(samples)


def test_the_command_fits_checks_and_writes_its_json(tmp_path: Path):
    data = _data(tmp_path, ["a", "b", "c", "d"])
    out = tmp_path / "calibrate.json"
    args = ["bench", "calibrate", "--data", str(data), "--store", "memory"]
    result = CliRunner().invoke(main, [*args, "--embedder", "hash", "--out", str(out)])
    assert result.exit_code == 0, result.output
    payload = json.loads(out.read_text())
    assert payload["benchmark"] == "calibrate"
    assert payload["halves"] == {"tuned": ["a", "b"], "other": ["c", "d"]}
    assert payload["questions"] == {"tuned": 6, "other": 6}  # 3 scored questions each
    rows = {(r["half"], r["min_score"]): r for r in payload["thresholds"]}
    assert rows["tuned", 0.0]["kept"] == 1.0 and rows["other", 0.0]["recall"] == 1.0
    assert rows["other", 0.0]["irrelevant"] == 1.0  # every memory is kept at 0
    assert payload["context_min_score"] in {m for _, m in rows}
    assert set(payload["fitted"]) == {"intercept", "relevance", "coverage"}
    assert set(payload["unweighted"]) == {"intercept", "relevance", "coverage"}
    assert "| shipped |" in result.output and "| other | 0.0 |" in result.output
    at = payload["plain_threshold"]
    assert at["min_score"] == 0.3 and set(at["scales"]) == {"shipped", "unweighted", "cosine"}
    for name, by_half in at["scales"].items():
        assert set(by_half) == {"tuned", "other"}
        for half, row in by_half.items():
            assert set(row) == {"top_evidence", "hit", "foreign_empty"}
            line = (
                f"{name:10} {half:5}  top evidence survives {row['top_evidence']:.3f}  "
                f"other conversation empty {row['foreign_empty']:.3f}"
            )
            assert line in result.output
