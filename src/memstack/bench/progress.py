"""Progress bars for long benchmark work: position, rate and time left, on stderr."""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING, TextIO

import click

if TYPE_CHECKING:
    from click._termui_impl import ProgressBar

__all__ = ["progress_bar", "rate"]


def rate(done: int, seconds: float) -> str:
    """``1,234/s``: items per second so far (``-/s`` before any time has passed)."""
    return f"{done / seconds:,.0f}/s" if seconds > 0 and done else "-/s"


def progress_bar(length: int, label: str, *, file: TextIO | None = None) -> ProgressBar[int]:
    """A ``click.progressbar`` that also shows how many items a second go by."""
    bar: ProgressBar[int] = click.progressbar(
        length=length,
        label=label,
        file=file or sys.stderr,
        show_pos=True,
        item_show_func=lambda _: rate(bar.pos, time.time() - bar.start),
    )
    return bar
