"""What a load saturates first: the CPU each part of a deployment spent, as cores used
against the cores it can use.

``memstack bench server`` reads every part's CPU seconds before and after the load:

- the memstack server (its processes together, by pid),
- each PostgreSQL it was given, primary and hot standbys (the postmaster's process
  tree: backends, WAL sender and receiver, replay), when that server runs on this
  machine (``postmaster.pid`` in its data directory is readable here),
- Redis (``INFO cpu``, so a Redis on another host is read too),
- the load generator (this process).

Cores used is CPU seconds over wall seconds; utilization divides it by the cores the
part can use: one for Redis (its commands run on one thread), the machine's cores for
the rest. The part with the highest utilization is what saturates first. The
embedder's share is estimated from the in-process floor (its CPU per request times the
requests/s): listed as part of the server's, never the leader on its own. On a machine
that also runs the load generator and every server, the machine's own total (every
part's cores together over its cores) is a limit of its own: when it nears 1, the cores
are what saturated, whichever part leads.
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from memstack.bench.proc import cpu_seconds
from memstack.errors import MemstackError, StoreUnavailable

__all__ = [
    "CpuProbe",
    "Spent",
    "postgres_probe",
    "process_probe",
    "read_probes",
    "redis_probe",
    "saturation",
    "spent_between",
]


@dataclass(frozen=True, kw_only=True)
class CpuProbe:
    """One part of the deployment: its name, the cores it can use, and how to read the
    CPU seconds it has spent so far."""

    name: str
    capacity: float
    read: Callable[[], float]


def process_probe(name: str, pid: int, capacity: float) -> CpuProbe:
    """A process on this machine and its descendants."""
    return CpuProbe(name=name, capacity=capacity, read=lambda: cpu_seconds(pid))


def postgres_probe(name: str, url: str, capacity: float) -> CpuProbe | None:
    """The PostgreSQL server at ``url`` by its postmaster's process tree, or None when
    that server does not run on this machine (or the URL's role may not read its data
    directory's location)."""
    psycopg = importlib.import_module("psycopg")
    try:
        with psycopg.connect(url, connect_timeout=5) as conn:
            row = conn.execute("SHOW data_directory").fetchone()
    except psycopg.Error:
        return None
    try:
        first = (Path(str(row[0])) / "postmaster.pid").read_text().splitlines()[0]
        pid = int(first)
        cpu_seconds(pid)
    except (OSError, IndexError, ValueError):
        return None
    return process_probe(name, pid, capacity)


def redis_probe(url: str) -> CpuProbe:
    """Redis by ``INFO cpu``: the server process's user and system seconds."""
    redis = importlib.import_module("redis")

    def read() -> float:
        try:
            with redis.Redis.from_url(url) as client:
                info = client.info("cpu")
        except redis.RedisError as exc:
            raise StoreUnavailable(f"cannot read Redis's CPU time: {exc}") from exc
        return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])

    return CpuProbe(name="Redis", capacity=1.0, read=read)


def read_probes(probes: Sequence[CpuProbe]) -> dict[str, float | None]:
    """Every probe's CPU seconds now; None for one that could not be read (its process
    gone, its server unreachable)."""
    found: dict[str, float | None] = {}
    for probe in probes:
        found[probe.name] = None
        with contextlib.suppress(OSError, MemstackError):
            found[probe.name] = probe.read()
    return found


@dataclass(frozen=True, kw_only=True)
class Spent:
    """The CPU seconds one part spent during the load (None: not read), and the cores it
    can use."""

    name: str
    capacity: float
    cpu_s: float | None


def spent_between(
    probes: Sequence[CpuProbe],
    before: Mapping[str, float | None],
    after: Mapping[str, float | None],
) -> list[Spent]:
    """Each probe's CPU seconds between two ``read_probes``."""
    found = []
    for probe in probes:
        start, end = before.get(probe.name), after.get(probe.name)
        cpu_s = None if start is None or end is None else end - start
        found.append(Spent(name=probe.name, capacity=probe.capacity, cpu_s=cpu_s))
    return found


def saturation(
    parts: Sequence[Spent],
    *,
    seconds: float,
    cores: int,
    embedder_cores: float | None = None,
) -> dict[str, object]:
    """Each part's CPU seconds, cores used and utilization during ``seconds`` of load;
    which part leads; and the machine's total over its ``cores``. ``embedder_cores``:
    the embedder's estimated share of the server's, listed but not counted twice."""
    rows: list[dict[str, object]] = []
    total = 0.0
    for part in parts:
        if part.cpu_s is None or seconds <= 0:
            rows.append({"part": part.name, "cpu_s": None, "cores_used": None})
            continue
        used = part.cpu_s / seconds
        total += used
        rows.append(_part(part.name, part.cpu_s, used, part.capacity))
    if embedder_cores is not None and seconds > 0:
        share = _part(
            "embedder (of the server)", embedder_cores * seconds, embedder_cores, float(cores)
        )
        rows.append({**share, "estimated": True})
    measured = [
        row
        for row in rows
        if isinstance(row.get("utilization"), float) and not row.get("estimated")
    ]
    leader = max(measured, key=lambda row: _float(row["utilization"]), default=None)
    return {
        "parts": rows,
        "saturates_first": leader["part"] if leader else None,
        "machine_cores_used": round(total, 2),
        "machine_utilization": round(total / cores, 2) if cores else None,
    }


def _part(name: str, cpu_s: float, used: float, capacity: float) -> dict[str, object]:
    return {
        "part": name,
        "cpu_s": round(cpu_s, 3),
        "cores_used": round(used, 2),
        "capacity_cores": capacity,
        "utilization": round(used / capacity, 2) if capacity else 0.0,
    }


def _float(value: object) -> float:
    return float(value) if isinstance(value, int | float) else 0.0
