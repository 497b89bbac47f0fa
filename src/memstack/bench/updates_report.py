"""The printed report of ``memstack bench updates``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from memstack.bench.report import format_table
from memstack.bench.updates import UpdatesReport
from memstack.bench.updates_data import Question

__all__ = ["updates_text"]

_HEADERS: Final = ("mode", "current", "past", "overall", "hit@3", "recall p50 ms", "updates")


def updates_text(report: UpdatesReport, questions: Sequence[Question]) -> str:
    """What was asked, a row per mode, and the statements a mode did not store."""
    current = sum(q.kind == "current" for q in questions)
    rows = []
    for name, score in report.modes.items():
        m = score.to_json()
        row = [name, m["current"], m["past"], m["overall"], m["hit3"], m["recall_ms_p50"]]
        rows.append([*row, f"{score.updates}/{score.changes}"])
    lines = [
        f"fact updates: {len(questions)} questions ({current} current, "
        f"{len(questions) - current} past, as_of) from {report.conversations} conversations, "
        f"seed {report.seed}; SQLite, embedder {report.embedder}; top-1 is the gold statement",
        format_table(_HEADERS, rows),
    ]
    unstored = {name: s.unstored for name, s in report.modes.items() if s.unstored}
    if unstored:
        lines.append(
            "statements not stored as memories of their own (deduplicated or refused): "
            + ", ".join(f"{name} {n}" for name, n in unstored.items())
        )
    return "\n".join(lines)
