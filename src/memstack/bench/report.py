"""Printing benchmark tables and writing their JSON."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from memstack.bench.metrics import METRIC_NAMES

__all__ = ["metrics_table", "write_json"]

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


def write_json(path: Path, payload: Mapping[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
