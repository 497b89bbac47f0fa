"""Progress bars for long benchmark work: position, rate and time left, on stderr.

On a terminal it is ``click.progressbar`` with the rate beside it. When stderr is not a
terminal (a log file, CI, ``| tee``) click draws nothing until the end, so a line is
written at each tenth of the work instead.
"""

from __future__ import annotations

import sys
import time
from types import TracebackType
from typing import TYPE_CHECKING, TextIO

import click

if TYPE_CHECKING:
    from click._termui_impl import ProgressBar

__all__ = ["Progress", "progress_bar", "rate"]

STEPS = 10
"""Lines written over the whole work when stderr is not a terminal."""


def rate(done: int, seconds: float) -> str:
    """``1,234/s``: items per second so far (``-/s`` before any time has passed)."""
    return f"{done / seconds:,.0f}/s" if seconds > 0 and done else "-/s"


class Progress:
    """A bar over ``length`` items; ``update(n)`` after each ``n`` done."""

    def __init__(self, length: int, label: str, file: TextIO) -> None:
        self.length, self.label, self.file = length, label, file
        self.bar: ProgressBar[int] = click.progressbar(
            length=length,
            label=label,
            file=file,
            show_pos=True,
            item_show_func=lambda _: rate(self.bar.pos, time.time() - self.bar.start),
        )
        self._plain = not file.isatty()
        self._next_step = 1

    def __enter__(self) -> Progress:
        self.bar.__enter__()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.bar.__exit__(kind, error, trace)

    def update(self, n: int) -> None:
        self.bar.update(n)
        if not self._plain or self.length <= 0:
            return
        done = self.bar.pos
        if done * STEPS >= self._next_step * self.length:
            self._next_step = done * STEPS // self.length + 1
            seconds = time.time() - self.bar.start
            percent = 100 * done // self.length
            line = f"{self.label}: {done:,}/{self.length:,} ({percent}%), {rate(done, seconds)}"
            click.echo(line, file=self.file)

    def format_progress_line(self) -> str:
        """The line a terminal shows now."""
        return self.bar.format_progress_line()


def progress_bar(length: int, label: str, *, file: TextIO | None = None) -> Progress:
    """A progress bar that also shows how many items a second go by."""
    return Progress(length, label, file or sys.stderr)
