"""Printing benchmark tables, summarizing latencies, and writing the JSON."""

from __future__ import annotations

import json
import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from memstack.bench.metrics import METRIC_NAMES

__all__ = ["format_table", "metrics_table", "percentiles", "ratio", "write_json"]

BM25_REFERENCE = {"R@5": 0.518, "R@10": 0.588, "Hit@10": 0.652, "MRR": 0.452}
"""The plain-BM25 figures the LoCoMo README gives for its development split."""


def metrics_table(rows: Mapping[str, Mapping[str, Any]]) -> str:
    width = max(len(name) for name in rows) + 2
    lines = [" " * width + "".join(f"{m:>8}" for m in METRIC_NAMES)]
    for name, metrics in rows.items():
        cells = "".join(
            f"{metrics[m]:>8.3f}" if isinstance(metrics.get(m), float | int) else f"{'-':>8}"
            for m in METRIC_NAMES
        )
        lines.append(f"{name:<{width}}{cells}")
    return "\n".join(lines)


def format_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """Columns right-aligned (the first left-aligned); None prints as ``-``."""
    cells = [[_cell(v) for v in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(headers)]

    def line(values: Sequence[str]) -> str:
        first = f"{values[0]:<{widths[0]}}"
        rest = "".join(f"  {v:>{w}}" for v, w in zip(values[1:], widths[1:], strict=True))
        return first + rest

    return "\n".join([line(headers), *(line(r) for r in cells)])


def _cell(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool) or not isinstance(value, float):
        return str(value)
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.1f}" if abs(value) >= 10 else f"{value:.2f}"


def percentiles(values: Sequence[float], points: Sequence[int] = (50, 95, 99)) -> dict[str, float]:
    """``{"p50": ..., "p95": ..., ...}`` of ``values``, rounded to 2 places; 0.0 when empty."""
    if len(values) < 2:
        only = round(values[0], 2) if values else 0.0
        return {f"p{p}": only for p in points}
    cuts = statistics.quantiles(values, n=100, method="inclusive")
    return {f"p{p}": round(cuts[p - 1], 2) for p in points}


def ratio(value: float | None, floor: float | None) -> float | None:
    """``value / floor`` to 2 places, or None when either is missing or the floor is 0."""
    if value is None or not floor:
        return None
    return round(value / floor, 2)


def write_json(path: Path, payload: Mapping[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
