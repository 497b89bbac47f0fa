"""``memstack bench ...``: benchmark commands that print tables and write JSON."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Literal

import click

DEFAULT_LOCOMO = Path("../shared/bench/locomo/locomo-dev.json")


@click.group()
def bench() -> None:
    """Measure recall quality and speed; every run prints a table and can write JSON."""


@bench.command("locomo")
@click.option(
    "--data",
    type=click.Path(path_type=Path, dir_okay=False),
    default=DEFAULT_LOCOMO,
    show_default=True,
    envvar="MEMSTACK_LOCOMO_DATA",
    help="Any JSON file of the LoCoMo schema.",
)
@click.option(
    "--store",
    "store_kind",
    type=click.Choice(["sqlite", "postgres", "memory"]),
    default="sqlite",
    show_default=True,
)
@click.option(
    "--db",
    type=click.Path(path_type=Path, dir_okay=False),
    help="SQLite file (default: a temporary one).",
)
@click.option("--postgres-url", envvar="MEMSTACK_POSTGRES_URL", help="For --store postgres.")
@click.option(
    "--embedder",
    "embedder_kind",
    type=click.Choice(["local", "hash"]),
    default="local",
    show_default=True,
    help="local = all-MiniLM-L6-v2 (the default); hash = the deterministic test embedder.",
)
@click.option(
    "--samples", "max_samples", type=click.IntRange(min=1), help="Only the first N conversations."
)
@click.option(
    "--out", type=click.Path(path_type=Path, dir_okay=False), help="Write the JSON report here."
)
def locomo(
    data: Path,
    store_kind: Literal["sqlite", "postgres", "memory"],
    db: Path | None,
    postgres_url: str | None,
    embedder_kind: Literal["local", "hash"],
    max_samples: int | None,
    out: Path | None,
) -> None:
    """Recall quality of long-term memory on LoCoMo, beside plain BM25 and pure vector."""
    from memstack.bench.locomo import run_locomo, scored_questions
    from memstack.bench.locomo_data import load_locomo
    from memstack.bench.report import BM25_REFERENCE, metrics_table, write_json
    from memstack.bench.setup import open_bench_embedder, open_bench_store
    from memstack.clock import SystemClock

    samples, stats = load_locomo(data)
    samples = samples[:max_samples] if max_samples else samples
    total = sum(len(scored_questions(s)) for s in samples)
    embedder = open_bench_embedder(embedder_kind)
    with open_bench_store(store_kind, db=db, postgres_url=postgres_url) as store:
        with click.progressbar(length=total, label="recalling", file=sys.stderr) as bar:
            report = asyncio.run(
                run_locomo(
                    samples,
                    stats,
                    store=store,
                    store_name=store_kind,
                    embedder=embedder,
                    clock=SystemClock(),
                    progress=bar.update,
                )
            )
    payload = report.to_json()
    click.echo(
        f"LoCoMo retrieval: {payload['questions']} questions from {len(samples)} conversations "
        f"({data.name}); store={store_kind}, embedder={embedder.model_id}"
    )
    rows = {
        "memstack": report.memstack["overall"],
        "bm25": report.baselines["bm25"]["overall"],
        "vector": report.baselines["vector"]["overall"],
        "bm25 (README reference)": BM25_REFERENCE,
    }
    click.echo(metrics_table(rows))
    click.echo("\nmemstack per category (1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop):")
    per_category = report.memstack["per_category"]
    click.echo(metrics_table({f"category {c}": m for c, m in per_category.items()}))
    click.echo(
        f"\ningest {report.ingest_per_s:.0f} memories/s (embedding included); "
        f"recall p50 {report.recall_ms['p50']:.1f} ms, p95 {report.recall_ms['p95']:.1f} ms"
    )
    if stats.evidence_dropped:
        click.echo(f"evidence ids naming no turn, dropped: {', '.join(stats.evidence_dropped)}")
    if out:
        write_json(out, payload)
        click.echo(f"wrote {out}")


@bench.command("recall")
@click.option(
    "--sizes",
    default="1000,10000,100000",
    show_default=True,
    help="Comma-separated numbers of stored memories to measure at.",
)
@click.option(
    "--stores",
    default="memory,sqlite,postgres",
    show_default=True,
    help="Comma-separated backends: memory, sqlite, postgres (postgres needs --postgres-url).",
)
@click.option("--postgres-url", envvar="MEMSTACK_POSTGRES_URL")
@click.option("--queries", "n_queries", type=click.IntRange(min=2), default=200, show_default=True)
@click.option(
    "--embedder",
    "embedder_kind",
    type=click.Choice(["local", "hash"]),
    default="local",
    show_default=True,
)
@click.option(
    "--out",
    type=click.Path(path_type=Path, dir_okay=False),
    default=Path("bench-results/recall.json"),
    show_default=True,
    help="JSON report; a PNG plot is written beside it.",
)
def recall(
    sizes: str,
    stores: str,
    postgres_url: str | None,
    n_queries: int,
    embedder_kind: Literal["local", "hash"],
    out: Path,
) -> None:
    """Recall latency p50/p95 and ingest rate against the number of stored memories."""
    from memstack.bench.plot import plot_scale
    from memstack.bench.report import write_json
    from memstack.bench.scale import embed_corpus, run_scale, synthetic_memories
    from memstack.bench.setup import open_bench_embedder, open_bench_store
    from memstack.clock import SystemClock

    steps = _ints(sizes, "--sizes")
    backends = [s.strip() for s in stores.split(",") if s.strip()]
    unknown = sorted(set(backends) - {"memory", "sqlite", "postgres"})
    if unknown:
        raise click.BadParameter(f"unknown store {', '.join(unknown)}", param_hint="--stores")
    if "postgres" in backends and not postgres_url:
        raise click.BadParameter("postgres needs --postgres-url", param_hint="--stores")
    embedder = open_bench_embedder(embedder_kind)
    texts = synthetic_memories(max(steps))
    queries = [
        f"what does {t.split(' (note')[0].lower()}" for t in synthetic_memories(n_queries, seed=99)
    ]
    with click.progressbar(length=len(texts), label="embedding", file=sys.stderr) as bar:
        vectors, seconds = embed_corpus(embedder, texts, progress=bar.update)
    embed_rate = len(texts) / seconds
    runs = []
    for backend in backends:
        with open_bench_store(backend, postgres_url=postgres_url) as store:
            runs.append(
                asyncio.run(
                    run_scale(
                        store=store,
                        store_name=backend,
                        embedder=embedder,
                        texts=texts,
                        vectors=vectors,
                        sizes=steps,
                        queries=queries,
                        clock=SystemClock(),
                    )
                )
            )
    click.echo(f"embedding ({embedder.model_id}): {embed_rate:.0f} memories/s")
    click.echo(
        f"{'store':<10}{'size':>10}{'p50 ms':>10}{'p95 ms':>10}"
        f"{'ingest/s':>12}{'ingest+embed/s':>16}"
    )
    for run in runs:
        for p in run.points:
            combined = 1 / (1 / p.store_per_s + 1 / embed_rate) if p.store_per_s else 0.0
            click.echo(
                f"{run.store:<10}{p.size:>10}{p.recall_p50_ms:>10.2f}{p.recall_p95_ms:>10.2f}"
                f"{p.store_per_s:>12.0f}{combined:>16.0f}"
            )
    payload = {
        "embedder": embedder.model_id,
        "embed_per_s": round(embed_rate, 1),
        "queries": n_queries,
        "runs": [{"store": r.store, "points": [vars(p) for p in r.points]} for r in runs],
    }
    write_json(out, payload)
    png = out.with_suffix(".png")
    plot_scale(runs, png)
    click.echo(f"wrote {out} and {png}")


def _ints(text: str, option: str) -> list[int]:
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError as exc:
        raise click.BadParameter("use comma-separated whole numbers", param_hint=option) from exc
    if not values or min(values) < 10:
        raise click.BadParameter("give at least one size of 10 or more", param_hint=option)
    return values


@bench.command("server")
@click.option("--url", default="http://127.0.0.1:8765", show_default=True, envvar="MEMSTACK_URL")
@click.option("--api-key", required=True, envvar="MEMSTACK_API_KEY", help="[env MEMSTACK_API_KEY]")
@click.option("--clients", type=click.IntRange(1, 256), default=16, show_default=True)
@click.option("--duration", type=click.FloatRange(0.5, 600), default=20.0, show_default=True)
@click.option("--max-requests", type=click.IntRange(1), default=100_000, show_default=True)
@click.option(
    "--label", default="", help="What is being measured, e.g. 'sqlite' (kept in the JSON)."
)
@click.option(
    "--out", type=click.Path(path_type=Path, dir_okay=False), help="Write the JSON report here."
)
def server(
    url: str,
    api_key: str,
    clients: int,
    duration: float,
    max_requests: int,
    label: str,
    out: Path | None,
) -> None:
    """Requests/s and p50/p95/p99 latency of a running server under concurrent clients
    (50% store, 30% search, 20% list)."""
    from memstack.bench.load import run_load
    from memstack.bench.report import write_json

    report = asyncio.run(
        run_load(
            url=url, api_key=api_key, clients=clients, duration=duration, max_requests=max_requests
        )
    )
    summary = report.summary()
    click.echo(
        f"{label or url}: {report.requests} requests from {clients} clients in "
        f"{report.seconds:.1f}s, {report.errors} errors"
    )
    click.echo(f"{'operation':<10}{'count':>8}{'p50 ms':>10}{'p95 ms':>10}{'p99 ms':>10}")
    by_op = summary["by_operation"]
    assert isinstance(by_op, dict)
    overall = summary["latency_ms"]
    assert isinstance(overall, dict)
    for op, stats in [*by_op.items(), ("all", {"count": report.requests, **overall})]:
        click.echo(
            f"{op:<10}{stats['count']:>8}{stats['p50']:>10.1f}{stats['p95']:>10.1f}{stats['p99']:>10.1f}"
        )
    click.echo(f"throughput: {report.per_second:.1f} requests/s")
    if out:
        write_json(out, {"label": label, "url": url, **summary})
        click.echo(f"wrote {out}")
