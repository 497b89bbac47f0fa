"""``memstack bench ablation``: does a mechanism earn its place? Medians of alternating
runs with it and without it.

Each run is the JSON a bench command wrote (``bench server``, ``bench recall``) to a file
named ``<bench>-<variant>-<round>.json``: the same load once per variant in each round,
the variants alternating, so whatever drifts on the machine meanwhile hits them alike.
A comparison names a mechanism, the bench it was built for, the variant with it and the
variant without it. For each of the bench's figures the gain is the median with it over
the median without (inverted where lower is better: 1.2 means 20% better with it), and
the mechanism is kept when its gain on the comparison's figure is at least ``KEEP_AT``.
"""

from __future__ import annotations

import json
import re
import statistics
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from memstack.errors import InvalidInput

__all__ = ["FIGURES", "KEEP_AT", "Comparison", "ablation_payload", "kept", "parse_comparison"]

KEEP_AT: Final = 1.10
"""The least gain, on the figure a mechanism was built for, that keeps it."""

Payload = Mapping[str, Any]


@dataclass(frozen=True, kw_only=True)
class Figure:
    """One number read from a run's JSON, and which way is better."""

    name: str
    read: Callable[[Payload], float]
    higher_is_better: bool


def _largest(store: str, field: str) -> Callable[[Payload], float]:
    """``field`` of ``store``'s largest size in a ``bench recall`` run."""

    def read(run: Payload) -> float:
        for entry in run["runs"]:
            if entry["store"] == store:
                return float(max(entry["points"], key=lambda p: p["size"])[field])
        raise InvalidInput(f"the recall run has no {store!r} store.", field="runs")

    return read


FIGURES: Final[Mapping[str, Sequence[Figure]]] = {
    "server": (
        Figure(name="requests/s", read=lambda r: r["requests_per_s"], higher_is_better=True),
        Figure(
            name="CPU ms/request",
            read=lambda r: r["server_cpu_ms_per_request"],
            higher_is_better=False,
        ),
        Figure(
            name="store p99 ms",
            read=lambda r: r["by_operation"]["store"]["p99"],
            higher_is_better=False,
        ),
    ),
    "recall": (
        Figure(
            name="sqlite p50 ms", read=_largest("sqlite", "recall_p50_ms"), higher_is_better=False
        ),
        Figure(
            name="memory p50 ms", read=_largest("memory", "recall_p50_ms"), higher_is_better=False
        ),
        Figure(name="sqlite RSS MB", read=_largest("sqlite", "rss_mb"), higher_is_better=False),
        Figure(name="memory RSS MB", read=_largest("memory", "rss_mb"), higher_is_better=False),
    ),
}
"""The figures of each bench an ablation compares; the first is the default."""

_RUN_NAME: Final = re.compile(r"([a-z]+)-([A-Za-z0-9_]+)-([0-9]+)\.json")


@dataclass(frozen=True, kw_only=True)
class Comparison:
    """``mechanism``, built for ``figure`` of ``bench``: variant ``with_it`` against
    ``without``."""

    mechanism: str
    bench: str
    with_it: str
    without: str
    figure: str


def parse_comparison(text: str) -> Comparison:
    """``NAME=BENCH:WITH/WITHOUT`` or ``NAME=BENCH:WITH/WITHOUT:FIGURE``."""
    name, _, rest = text.partition("=")
    parts = rest.split(":")
    variants = parts[1].split("/") if len(parts) in (2, 3) else []
    if not name.strip() or len(variants) != 2 or parts[0] not in FIGURES:
        raise InvalidInput(
            f"--compare {text!r}: write NAME=BENCH:WITH/WITHOUT[:FIGURE], BENCH one of "
            f"{', '.join(FIGURES)}, e.g. 'hot routes=server:base/nohot'.",
            field="compare",
        )
    names = [f.name for f in FIGURES[parts[0]]]
    figure = parts[2] if len(parts) == 3 else names[0]
    if figure not in names:
        raise InvalidInput(
            f"--compare {text!r}: {parts[0]} has the figures {', '.join(names)}.",
            field="compare",
        )
    return Comparison(
        mechanism=name.strip(),
        bench=parts[0],
        with_it=variants[0],
        without=variants[1],
        figure=figure,
    )


def ablation_payload(
    runs: Sequence[Path],
    comparisons: Sequence[Comparison],
    decisions: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The medians of every variant's runs, one row per comparison and figure, and what
    was decided for each mechanism (``decisions``: the rule's verdict is one input; a
    cost on another figure may weigh more)."""
    loaded = _load(runs)
    rows = [row for c in comparisons for row in _rows(c, loaded)]
    unknown = set(decisions or {}) - {c.mechanism for c in comparisons}
    if unknown:
        raise InvalidInput(
            f"--decision names {sorted(unknown)[0]!r}, which no --compare measures.",
            field="decision",
        )
    return {
        "decisions": dict(decisions or {}),
        "benchmark": "ablation",
        "keep_at": KEEP_AT,
        "runs": {
            bench: {variant: len(found) for variant, found in variants.items()}
            for bench, variants in loaded.items()
        },
        "rows": rows,
    }


def kept(row: Payload) -> str:
    """A row's verdict as a table shows it: yes or no on the figure the mechanism was
    built for, nothing on the others."""
    return ("yes" if row["kept"] else "no") if row["built_for"] else ""


def _load(runs: Sequence[Path]) -> dict[str, dict[str, list[Payload]]]:
    loaded: dict[str, dict[str, list[Payload]]] = defaultdict(lambda: defaultdict(list))
    for path in runs:
        named = _RUN_NAME.fullmatch(path.name)
        if named is None or named[1] not in FIGURES:
            raise InvalidInput(
                f"{path.name}: name each run <bench>-<variant>-<round>.json, bench one of "
                f"{', '.join(FIGURES)}.",
                field="runs",
            )
        loaded[named[1]][named[2]].append(json.loads(path.read_text(encoding="utf-8")))
    return loaded


def _rows(c: Comparison, loaded: Mapping[str, Mapping[str, list[Payload]]]) -> list[dict[str, Any]]:
    variants = loaded.get(c.bench, {})
    for variant in (c.with_it, c.without):
        if not variants.get(variant):
            raise InvalidInput(
                f"no {c.bench} runs of the variant {variant!r} (for {c.mechanism!r}).",
                field="runs",
            )
    rows = []
    for figure in FIGURES[c.bench]:
        values_with = [figure.read(r) for r in variants[c.with_it]]
        values_without = [figure.read(r) for r in variants[c.without]]
        with_it, without = statistics.median(values_with), statistics.median(values_without)
        gain = with_it / without if figure.higher_is_better else without / with_it
        row: dict[str, Any] = {
            "mechanism": c.mechanism,
            "bench": c.bench,
            "with": c.with_it,
            "without": c.without,
            "figure": figure.name,
            "median_with": round(with_it, 2),
            "median_without": round(without, 2),
            "gain": round(gain, 3),
            "values_with": values_with,
            "values_without": values_without,
            "built_for": figure.name == c.figure,
        }
        if row["built_for"]:
            row["kept"] = gain >= KEEP_AT
        rows.append(row)
    return rows
