"""bench ablation: medians of alternating runs, gains the right way round, clear refusals."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memstack.bench.ablation import ablation_payload, parse_comparison
from memstack.errors import InvalidInput


def _server(rps: float, cpu: float, p99: float) -> dict[str, Any]:
    return {
        "requests_per_s": rps,
        "server_cpu_ms_per_request": cpu,
        "by_operation": {"store": {"p99": p99}},
    }


def _write(folder: Path, name: str, payload: dict[str, Any]) -> Path:
    path = folder / name
    path.write_text(json.dumps(payload), encoding="utf-8")
    return path


def test_the_gain_is_the_median_with_over_the_median_without(tmp_path: Path) -> None:
    runs = [
        _write(tmp_path, "server-base-1.json", _server(400, 4.0, 200)),
        _write(tmp_path, "server-base-2.json", _server(420, 4.2, 100)),
        _write(tmp_path, "server-base-3.json", _server(900, 5.0, 150)),  # an outlier
        _write(tmp_path, "server-off-1.json", _server(300, 5.0, 100)),
        _write(tmp_path, "server-off-2.json", _server(350, 5.0, 100)),
        _write(tmp_path, "server-off-3.json", _server(330, 5.0, 100)),
    ]
    payload = ablation_payload(runs, [parse_comparison("it=server:base/off")])
    rows = {row["figure"]: row for row in payload["rows"]}
    assert rows["requests/s"]["median_with"] == 420
    assert rows["requests/s"]["median_without"] == 330
    assert rows["requests/s"]["gain"] == round(420 / 330, 3)
    assert rows["requests/s"]["kept"] is True
    # Lower is better: 4.2 ms with it against 5.0 without is a gain above 1.
    assert rows["CPU ms/request"]["gain"] == round(5.0 / 4.2, 3)
    assert rows["store p99 ms"]["gain"] == round(100 / 150, 3)
    assert "kept" not in rows["store p99 ms"]  # judged on the figure it was built for only
    assert payload["runs"] == {"server": {"base": 3, "off": 3}}


def test_a_mechanism_under_the_bar_goes(tmp_path: Path) -> None:
    runs = [
        _write(tmp_path, "server-base-1.json", _server(105, 4.0, 100)),
        _write(tmp_path, "server-off-1.json", _server(100, 4.0, 100)),
    ]
    (row, *_) = ablation_payload(runs, [parse_comparison("it=server:base/off")])["rows"]
    assert row["figure"] == "requests/s"
    assert row["kept"] is False


def test_a_comparison_may_name_the_figure_it_was_built_for(tmp_path: Path) -> None:
    runs = [
        _write(tmp_path, "server-base-1.json", _server(100, 4.0, 100)),
        _write(tmp_path, "server-off-1.json", _server(100, 4.0, 150)),
    ]
    comparison = parse_comparison("tail=server:base/off:store p99 ms")
    rows = ablation_payload(runs, [comparison])["rows"]
    assert [row["figure"] for row in rows if row["built_for"]] == ["store p99 ms"]
    assert [row["kept"] for row in rows if row["built_for"]] == [True]


@pytest.mark.parametrize(
    "text",
    ["no bench", "it=disk:a/b", "it=server:a", "=server:a/b", "it=server:a/b:speed"],
)
def test_a_malformed_comparison_says_how_to_write_one(text: str) -> None:
    with pytest.raises(InvalidInput, match="compare") as raised:
        parse_comparison(text)
    assert raised.value.field == "compare"


def test_runs_must_be_named_and_present(tmp_path: Path) -> None:
    stray = _write(tmp_path, "results.json", _server(1, 1, 1))
    with pytest.raises(InvalidInput, match="<bench>-<variant>-<round>"):
        ablation_payload([stray], [])
    base = _write(tmp_path, "server-base-1.json", _server(1, 1, 1))
    with pytest.raises(InvalidInput, match="'off'"):
        ablation_payload([base], [parse_comparison("it=server:base/off")])


def test_decisions_are_kept_and_must_name_a_measured_mechanism(tmp_path: Path) -> None:
    runs = [
        _write(tmp_path, "server-base-1.json", _server(100, 4.0, 100)),
        _write(tmp_path, "server-off-1.json", _server(100, 4.0, 100)),
    ]
    comparison = parse_comparison("it=server:base/off")
    payload = ablation_payload(runs, [comparison], {"it": "removed"})
    assert payload["decisions"] == {"it": "removed"}
    with pytest.raises(InvalidInput, match="'other'") as raised:
        ablation_payload(runs, [comparison], {"other": "kept"})
    assert raised.value.field == "decision"
