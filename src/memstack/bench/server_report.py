"""The printed report of ``memstack bench server``, and runs in several configurations
(worker counts, with and without hot standbys) set side by side.

``server_table`` prints one ``server_summary`` with what its load saturated;
``compare_runs`` turns runs of the same load in different configurations into rows,
throughput, p99 and CPU per request as ratios to the first run's, and
``comparison_table`` prints them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from memstack.bench.report import format_table, ratio

__all__ = [
    "SATURATION_HEADERS",
    "compare_runs",
    "comparison_table",
    "configuration",
    "saturation_rows",
    "saturation_table",
    "server_table",
]


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
            *saturation_lines(summary),
        ]
    )


def saturation_lines(summary: Mapping[str, object]) -> list[str]:
    """The table of what each part of the deployment used, and which part led."""
    found = summary.get("saturation")
    if not isinstance(found, Mapping):
        return []
    return [
        f"CPU by part (cores used of those it can use; {found['saturates_first']} leads, the "
        f"machine at {found['machine_utilization']} of its {summary['cores']} cores):",
        saturation_table(found),
    ]


SATURATION_HEADERS: Final = ("part", "CPU s", "cores used", "can use", "utilization")


def saturation_rows(found: Mapping[str, Any]) -> list[list[object]]:
    """A row a part of a ``saturation`` report, under ``SATURATION_HEADERS``."""
    return [
        [
            part["part"] + (" (estimated)" if part.get("estimated") else ""),
            part["cpu_s"],
            part["cores_used"],
            part.get("capacity_cores"),
            part.get("utilization"),
        ]
        for part in found["parts"]
    ]


def saturation_table(found: Mapping[str, Any]) -> str:
    return format_table(SATURATION_HEADERS, saturation_rows(found))


def configuration(run: Mapping[str, object]) -> str:
    """A run's configuration in words: ``2 workers + 1 standby``."""
    workers, replicas = run.get("workers", 1), run.get("replicas", 0)
    text = f"{workers} worker" + ("" if workers == 1 else "s")
    if isinstance(replicas, int) and replicas:
        text += f" + {replicas} standby" + ("" if replicas == 1 else "s")
    return text


def _ms(value: object) -> str:
    return f"{value:.2f}" if isinstance(value, float) else "-"


def compare_runs(runs: Sequence[Mapping[str, object]]) -> list[dict[str, object]]:
    """One row per run (each ``server_summary`` with its ``workers`` and ``replicas``):
    throughput, p95, p99, server CPU per request, what led, and throughput, p99 and CPU
    per request as ratios to the first run's."""
    first = runs[0]
    rows: list[dict[str, object]] = []
    for run in runs:
        by_op = run["by_operation"]
        latency = run["latency_ms"]
        assert isinstance(by_op, dict) and isinstance(latency, dict)
        found = run.get("saturation")
        leader = found.get("saturates_first") if isinstance(found, Mapping) else None
        machine = found.get("machine_utilization") if isinstance(found, Mapping) else None
        first_latency = first["latency_ms"]
        assert isinstance(first_latency, dict)
        rows.append(
            {
                "configuration": configuration(run),
                "workers": run["workers"],
                "replicas": run.get("replicas", 0),
                "requests": run["requests"],
                "errors": run["errors"],
                "requests_per_s": run["requests_per_s"],
                "p95_ms": latency["p95"],
                "p99_ms": latency["p99"],
                "p95_ms_by_operation": {op: stats["p95"] for op, stats in by_op.items()},
                "server_cpu_ms_per_request": run["server_cpu_ms_per_request"],
                "floor_cpu_ms_per_request": run["floor_cpu_ms_per_request"],
                "requests_per_s_ratio": ratio(
                    _number(run["requests_per_s"]), _number(first["requests_per_s"])
                ),
                "p99_ratio": ratio(_number(latency["p99"]), _number(first_latency["p99"])),
                "cpu_per_request_ratio": ratio(
                    _number(run["server_cpu_ms_per_request"]),
                    _number(first["server_cpu_ms_per_request"]),
                ),
                "saturates_first": leader,
                "machine_utilization": machine,
            }
        )
    return rows


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) else None


def comparison_table(rows: Sequence[Mapping[str, object]]) -> str:
    """The printed comparison: a line per configuration, ratios to the first."""
    ops = sorted({op for row in rows for op in _p95s(row)})
    headers = (
        "configuration",
        "requests",
        "errors",
        "requests/s",
        "p95 ms",
        "p99 ms",
        *(f"{op} p95" for op in ops),
        "server CPU ms/req",
        "floor CPU ms/req",
        "req/s ratio",
        "p99 ratio",
        "CPU/req ratio",
        "leads",
        "machine",
    )
    table = [
        [
            row["configuration"],
            row["requests"],
            row["errors"],
            row["requests_per_s"],
            row["p95_ms"],
            row["p99_ms"],
            *(_p95s(row).get(op) for op in ops),
            row["server_cpu_ms_per_request"],
            row["floor_cpu_ms_per_request"],
            row["requests_per_s_ratio"],
            row["p99_ratio"],
            row["cpu_per_request_ratio"],
            row["saturates_first"],
            row["machine_utilization"],
        ]
        for row in rows
    ]
    return format_table(headers, table)


def _p95s(row: Mapping[str, object]) -> dict[str, object]:
    found = row["p95_ms_by_operation"]
    assert isinstance(found, dict)
    return found
