"""The printed report of ``memstack bench server``, and runs on several worker counts
set side by side.

``server_table`` prints one ``server_summary``; ``compare_runs`` turns runs of the same
load on different worker counts into rows, throughput and CPU per request as ratios to
the first run's, and ``comparison_table`` prints them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from memstack.bench.report import format_table, ratio

__all__ = ["compare_runs", "comparison_table", "server_table"]


def server_table(summary: dict[str, object], label: str) -> str:
    """The printed report: one line of totals, a table per operation, the CPU line."""
    by_op = summary["by_operation"]
    overall = summary["latency_ms"]
    assert isinstance(by_op, dict) and isinstance(overall, dict)
    rows = [
        [op, s["count"], s["p50"], s["p95"], s["p99"], s.get("floor_cpu_ms")]
        for op, s in [*by_op.items(), ("all", {"count": summary["requests"], **overall})]
    ]
    headers = ("operation", "count", "p50 ms", "p95 ms", "p99 ms", "floor CPU ms")
    return "\n".join(
        [
            f"{label}: {summary['requests']} requests from {summary['clients']} clients in "
            f"{summary['seconds']}s, {summary['errors']} errors",
            format_table(headers, rows),
            f"throughput: {summary['requests_per_s']} requests/s; server CPU "
            f"{_ms(summary['server_cpu_ms_per_request'])} ms/request, in-process floor "
            f"{_ms(summary['floor_cpu_ms_per_request'])} ms/request, "
            f"ratio {summary['cpu_ratio'] or '-'}",
            f"load generator CPU {_ms(summary['client_cpu_ms_per_request'])} ms/request; "
            f"on {summary['cores']} cores a server at its floor answers at most "
            f"{summary['requests_per_s_bound'] or '-'} requests/s beside it",
        ]
    )


def _ms(value: object) -> str:
    return f"{value:.2f}" if isinstance(value, float) else "-"


def compare_runs(runs: Sequence[Mapping[str, object]]) -> list[dict[str, object]]:
    """One row per run (each ``server_summary`` with its ``workers``): throughput, p95,
    server CPU per request, and the first two as ratios to the first run's."""
    first = runs[0]
    rows: list[dict[str, object]] = []
    for run in runs:
        by_op = run["by_operation"]
        latency = run["latency_ms"]
        assert isinstance(by_op, dict) and isinstance(latency, dict)
        rows.append(
            {
                "workers": run["workers"],
                "requests": run["requests"],
                "errors": run["errors"],
                "requests_per_s": run["requests_per_s"],
                "p95_ms": latency["p95"],
                "p95_ms_by_operation": {op: stats["p95"] for op, stats in by_op.items()},
                "server_cpu_ms_per_request": run["server_cpu_ms_per_request"],
                "floor_cpu_ms_per_request": run["floor_cpu_ms_per_request"],
                "requests_per_s_ratio": ratio(
                    _number(run["requests_per_s"]), _number(first["requests_per_s"])
                ),
                "cpu_per_request_ratio": ratio(
                    _number(run["server_cpu_ms_per_request"]),
                    _number(first["server_cpu_ms_per_request"]),
                ),
            }
        )
    return rows


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) else None


def comparison_table(rows: Sequence[Mapping[str, object]]) -> str:
    """The printed comparison: a line per worker count, ratios to the first."""
    ops = sorted({op for row in rows for op in _p95s(row)})
    headers = (
        "workers",
        "requests",
        "errors",
        "requests/s",
        "p95 ms",
        *(f"{op} p95" for op in ops),
        "server CPU ms/req",
        "floor CPU ms/req",
        "req/s ratio",
        "CPU/req ratio",
    )
    table = [
        [
            row["workers"],
            row["requests"],
            row["errors"],
            row["requests_per_s"],
            row["p95_ms"],
            *(_p95s(row).get(op) for op in ops),
            row["server_cpu_ms_per_request"],
            row["floor_cpu_ms_per_request"],
            row["requests_per_s_ratio"],
            row["cpu_per_request_ratio"],
        ]
        for row in rows
    ]
    return format_table(headers, table)


def _p95s(row: Mapping[str, object]) -> dict[str, object]:
    found = row["p95_ms_by_operation"]
    assert isinstance(found, dict)
    return found
