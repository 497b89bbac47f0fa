"""PNG plots of benchmark runs (matplotlib, headless; an optional dependency)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from memstack.bench.scale import RecallRun
from memstack.errors import ConfigError

__all__ = ["MISSING_MATPLOTLIB", "plot_recall", "plots_available"]

MISSING_MATPLOTLIB = 'no PNG: plots need matplotlib: pip install "memstack[bench]"'


def plots_available() -> bool:
    """Whether matplotlib imports, asked before a benchmark starts its work."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def plot_recall(runs: Sequence[RecallRun], path: Path) -> None:
    """Recall p95 and its floor's p95 against stored memories (log-log), per store.

    Raises ``ConfigError`` naming the extra to install when matplotlib is missing.
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ConfigError(MISSING_MATPLOTLIB) from exc
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for run in runs:
        sizes = [p.size for p in run.points]
        line = ax.plot(
            sizes, [p.recall_p95_ms for p in run.points], marker="o", label=f"{run.store} p95"
        )
        ax.plot(
            sizes,
            [p.floor_p95_ms for p in run.points],
            marker="x",
            linestyle="--",
            color=line[0].get_color(),
            label=f"{run.store} floor p95",
        )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("stored memories")
    ax.set_ylabel("latency (ms)")
    shapes = ", ".join(sorted({run.shape for run in runs}))
    ax.set_title(f"hybrid recall p95 against its floor ({shapes})")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
