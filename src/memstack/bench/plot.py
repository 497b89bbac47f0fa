"""PNG plots of benchmark runs (matplotlib, headless)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from memstack.bench.scale import ScaleRun
from memstack.errors import ConfigError

__all__ = ["plot_scale"]


def plot_scale(runs: Sequence[ScaleRun], path: Path) -> None:
    """Recall p50 and p95 latency against stored memories, one line pair per backend."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise ConfigError('plots need matplotlib: pip install "memstack[bench]"') from exc
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for run in runs:
        sizes = [p.size for p in run.points]
        line = ax.plot(
            sizes, [p.recall_p50_ms for p in run.points], marker="o", label=f"{run.store} p50"
        )
        ax.plot(
            sizes,
            [p.recall_p95_ms for p in run.points],
            marker="x",
            linestyle="--",
            color=line[0].get_color(),
            label=f"{run.store} p95",
        )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("stored memories")
    ax.set_ylabel("hybrid recall latency (ms)")
    ax.set_title("memstack recall latency against collection size")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
