"""What a process uses: resident memory and CPU time, from /proc (or psutil, or getrusage)."""

from __future__ import annotations

import gc
import importlib
import os
import resource
import sys
from pathlib import Path

from memstack.errors import ConfigError

__all__ = ["cpu_seconds", "release_memory", "rss_mb", "tree_rss_mb"]


def rss_mb() -> float:
    """This process's resident set now (VmRSS), or its peak where /proc is missing."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


def tree_rss_mb(pid: int) -> float:
    """The resident memory (VmRSS) of process ``pid`` and its live descendants (a
    server's worker processes), from /proc; 0 for a process that has gone."""
    total_kb = 0
    for process in [pid, *_proc_descendants(pid)]:
        try:
            lines = Path(f"/proc/{process}/status").read_text().splitlines()
        except OSError:
            continue
        total_kb += sum(int(line.split()[1]) for line in lines if line.startswith("VmRSS:"))
    return total_kb / 1024


def cpu_seconds(pid: int) -> float:
    """User plus system CPU seconds used so far by process ``pid`` and its descendants:
    the live ones (a server's worker processes) and those already waited for (a
    PostgreSQL backend whose connection closed), whose time their parent holds."""
    try:
        psutil = importlib.import_module("psutil")
    except ImportError:
        return sum(_proc_cpu_seconds(p) for p in [pid, *_proc_descendants(pid)])
    try:
        root = psutil.Process(pid)
    except psutil.NoSuchProcess as exc:
        raise ConfigError(f"cannot read the CPU time of process {pid}: it is gone") from exc
    total = 0.0
    for process in [root, *root.children(recursive=True)]:
        try:
            times = process.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += float(times.user + times.system + times.children_user + times.children_system)
    return total


def _proc_cpu_seconds(pid: int) -> float:
    try:
        fields = _proc_stat(pid)
    except OSError as exc:
        raise ConfigError(
            f"cannot read the CPU time of process {pid} ({exc}); install psutil to measure "
            "it on a system without /proc."
        ) from exc
    utime, stime, cutime, cstime = (int(value) for value in fields[11:15])
    return (utime + stime + cutime + cstime) / os.sysconf("SC_CLK_TCK")


def _proc_stat(pid: int) -> list[str]:
    """The fields of /proc/<pid>/stat after the command name (state first)."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def _proc_descendants(pid: int) -> list[int]:
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parents[int(entry.name)] = int(_proc_stat(int(entry.name))[1])
            except (OSError, IndexError, ValueError):
                continue
    found: list[int] = []
    frontier = [pid]
    while frontier:
        children = [child for child, parent in parents.items() if parent in frontier]
        found += children
        frontier = children
    return found


def release_memory() -> None:
    """Collect garbage between measurements."""
    gc.collect()
