"""``memstack bench ...``: benchmark commands that print tables and write JSON."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import click

from memstack.bench.progress import progress_bar

if TYPE_CHECKING:
    from memstack.bench.load import Mix
    from memstack.bench.serverbench import LoadOptions
    from memstack.bench.spawn import ServerShape

DEFAULT_LOCOMO = Path("../shared/bench/locomo/locomo-dev.json")
_F = TypeVar("_F", bound=Callable[..., Any])


def _locomo_data(help: str) -> Callable[[_F], _F]:
    """The ``--data`` option of the commands that read LoCoMo."""
    return click.option(
        "--data",
        type=click.Path(path_type=Path, dir_okay=False),
        default=DEFAULT_LOCOMO,
        show_default=True,
        envvar="MEMSTACK_LOCOMO_DATA",
        help=help,
    )


@click.group()
def bench() -> None:
    """Measure recall quality and speed; every run prints a table and can write JSON."""


@bench.command("locomo")
@_locomo_data("Any JSON file of the LoCoMo schema.")
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
    "--ablate",
    default="",
    metavar="MECHANISMS",
    help="Comma-separated mechanisms to switch off one at a time for an ablation table: "
    "context, session, speaker, time (each is a full extra run).",
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
    ablate: str,
    out: Path | None,
) -> None:
    """Recall quality of long-term memory on LoCoMo, beside plain BM25 and pure vector."""
    from memstack.bench.locomo import MECHANISMS, TUNED_ON, run_locomo, scored_questions
    from memstack.bench.locomo_data import load_locomo
    from memstack.bench.report import BM25_REFERENCE, metrics_table, write_json
    from memstack.bench.setup import open_bench_embedder, open_bench_store
    from memstack.clock import SystemClock

    ablations = [name.strip() for name in ablate.split(",") if name.strip()]
    unknown = sorted(set(ablations) - set(MECHANISMS))
    if unknown:
        raise click.BadParameter(
            f"unknown {', '.join(unknown)}; choose from {', '.join(MECHANISMS)}",
            param_hint="--ablate",
        )
    samples, stats = load_locomo(data)
    samples = samples[:max_samples] if max_samples else samples
    total = sum(len(scored_questions(s)) for s in samples)
    embedder = open_bench_embedder(embedder_kind)
    with open_bench_store(store_kind, db=db, postgres_url=postgres_url) as store:
        runs = {}
        for name in ["", *dict.fromkeys(ablations)]:
            label = f"without {name}" if name else "recalling"
            with progress_bar(total, label) as bar:
                runs[name] = asyncio.run(
                    run_locomo(
                        samples,
                        stats,
                        store=store,
                        store_name=store_kind,
                        embedder=embedder,
                        clock=SystemClock(),
                        progress=bar.update,
                        off=[name] if name else [],
                    )
                )
    report = runs.pop("")
    report.ablations = {name: run.memstack for name, run in runs.items()}
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
        f"recall p50 {report.recall_ms['p50']:.1f} ms, p95 {report.recall_ms['p95']:.1f} ms; "
        f"query embedding alone p50 {report.embed_ms['p50']:.1f} ms "
        f"(recall / embedding {report.recall_over_embed}x)"
    )
    if report.halves:
        click.echo(f"\nweights tuned on {', '.join(TUNED_ON)}; checked on the rest:")
        click.echo(metrics_table({name: h["overall"] for name, h in report.halves.items()}))
    if report.ablations:
        click.echo("\nablation (one mechanism off per row):")
        table = {"all on": report.memstack["overall"]}
        table |= {f"without {name}": a["overall"] for name, a in report.ablations.items()}
        click.echo(metrics_table(table))
    if stats.evidence_dropped:
        click.echo(f"evidence ids naming no turn, dropped: {', '.join(stats.evidence_dropped)}")
    if out:
        write_json(out, {"benchmark": "locomo", **payload})
        click.echo(f"wrote {out}")


_embedder_option = click.option(
    "--embedder",
    "embedder_kind",
    type=click.Choice(["local", "hash"]),
    default="local",
    show_default=True,
    help="local = all-MiniLM-L6-v2 (the default); hash = the deterministic test embedder.",
)


@bench.command("recall")
@click.option(
    "--stores",
    default="sqlite,memory",
    show_default=True,
    help="Comma-separated backends: sqlite, memory, postgres (postgres needs --postgres-url).",
)
@click.option(
    "--sizes",
    default="1000,10000,100000",
    show_default=True,
    help="Comma-separated numbers of stored memories, loaded one step after the other.",
)
@click.option(
    "--shape",
    type=click.Choice(["one-namespace", "many-namespaces"]),
    default="one-namespace",
    show_default=True,
    help="All rows in one collection, or one collection per 100 rows.",
)
@click.option("--postgres-url", envvar="MEMSTACK_POSTGRES_URL", help="[env MEMSTACK_POSTGRES_URL]")
@click.option("--queries", "n_queries", type=click.IntRange(min=2), default=200, show_default=True)
@click.option(
    "--writes",
    type=click.IntRange(min=0),
    default=50,
    show_default=True,
    help="Recalls timed right after a write, per size.",
)
@_embedder_option
@click.option("--seed", type=int, default=7, show_default=True)
@click.option(
    "--out",
    type=click.Path(path_type=Path, dir_okay=False),
    default=Path("bench-results/recall.json"),
    show_default=True,
    help="JSON report; a PNG plot is written beside it.",
)
def recall(
    stores: str,
    sizes: str,
    shape: Literal["one-namespace", "many-namespaces"],
    postgres_url: str | None,
    n_queries: int,
    writes: int,
    embedder_kind: Literal["local", "hash"],
    seed: int,
    out: Path,
) -> None:
    """Recall p50/p95 against the number of stored memories, beside the floor (the query's
    embedding plus an exact numpy scan), after writes, ANN recall@10, ingest and RSS."""
    from memstack.bench.plot import MISSING_MATPLOTLIB, plot_recall, plots_available
    from memstack.bench.proc import release_memory, rss_mb
    from memstack.bench.recall_report import recall_payload, recall_table
    from memstack.bench.report import write_json
    from memstack.bench.scale import RecallBench, run_recall
    from memstack.bench.setup import open_bench_embedder, open_bench_store
    from memstack.bench.synth import embed_phrases, synth_fidelity, synth_queries, synth_sentences
    from memstack.clock import SystemClock

    steps = _ints(sizes, "--sizes")
    backends = _stores(stores, postgres_url)
    plotting = plots_available()
    if not plotting:
        click.echo(f"{MISSING_MATPLOTLIB}; the JSON report is written all the same", err=True)
    before_model = rss_mb()
    embedder = open_bench_embedder(embedder_kind)
    phrases = embed_phrases(embedder)
    model_mb = rss_mb() - before_model
    bench_setup = RecallBench(
        embedder=embedder,
        phrases=phrases,
        sizes=tuple(sorted(set(steps))),
        shape=shape,
        queries=tuple(synth_queries(n_queries, seed=seed + 92)),
        writes=tuple(f"{t} (written)" for t in synth_sentences(writes, seed=seed + 1)),
        clock=SystemClock(),
        seed=seed,
    )
    work = max(steps) + len(bench_setup.sizes) * (2 * n_queries + writes)
    runs = []
    for backend in backends:
        release_memory()
        with (
            open_bench_store(backend, postgres_url=postgres_url) as store,
            progress_bar(work, f"{backend} {shape}") as bar,
        ):
            run = run_recall(
                bench_setup,
                store=store,
                store_name=backend,
                cleanup=backend == "postgres",
                progress=bar.update,
            )
            runs.append(asyncio.run(run))
    click.echo(
        f"recall of 10, {n_queries} queries, {writes} after writes; embedder {embedder.model_id}"
    )
    click.echo(recall_table(runs))
    payload = recall_payload(
        bench_setup,
        runs,
        model_rss_mb=model_mb,
        rss_before_model_mb=before_model,
        synth_fidelity=synth_fidelity(embedder, phrases, seed=seed),
    )
    write_json(out, {"benchmark": "recall", **payload})
    png = out.with_suffix(".png")
    if not plotting:
        click.echo(f"wrote {out} ({MISSING_MATPLOTLIB})")
        return
    plot_recall(runs, png)
    click.echo(f"wrote {out} and {png}")


def _stores(text: str, postgres_url: str | None) -> list[str]:
    backends = list(dict.fromkeys(s.strip() for s in text.split(",") if s.strip()))
    unknown = sorted(set(backends) - {"memory", "sqlite", "postgres"})
    if unknown or not backends:
        raise click.BadParameter(
            f"unknown store {', '.join(unknown) or '(none)'}; use sqlite, memory, postgres",
            param_hint="--stores",
        )
    if "postgres" in backends and not postgres_url:
        raise click.BadParameter(
            "postgres needs --postgres-url URL (or MEMSTACK_POSTGRES_URL)", param_hint="--stores"
        )
    return backends


def _ints(text: str, option: str) -> list[int]:
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError as exc:
        raise click.BadParameter("use comma-separated whole numbers", param_hint=option) from exc
    if not values or min(values) < 10:
        raise click.BadParameter("give at least one size of 10 or more", param_hint=option)
    return values


_INGEST_FIELDS = (
    "texts",
    "n",
    "mean_chars",
    "remember_per_s",
    "remember_many_per_s",
    "embed_per_s",
    "upsert_per_s",
)


@bench.command("ingest")
@click.option(
    "--texts",
    "text_sets",
    type=click.Choice(["locomo", "short", "both"]),
    default="both",
    show_default=True,
    help="LoCoMo dialogue turns, short templated sentences, or both.",
)
@_locomo_data("The LoCoMo file the turns come from.")
@click.option("--n", "n", type=click.IntRange(min=1), default=1000, show_default=True)
@click.option("--batch", type=click.IntRange(min=1), default=64, show_default=True)
@_embedder_option
@click.option(
    "--stores",
    default="sqlite",
    show_default=True,
    help="Comma-separated backends: sqlite, memory, postgres (postgres needs --postgres-url).",
)
@click.option("--postgres-url", envvar="MEMSTACK_POSTGRES_URL", help="[env MEMSTACK_POSTGRES_URL]")
@click.option(
    "--out", type=click.Path(path_type=Path, dir_okay=False), help="Write the JSON report here."
)
def ingest(
    text_sets: Literal["locomo", "short", "both"],
    data: Path,
    n: int,
    batch: int,
    embedder_kind: Literal["local", "hash"],
    stores: str,
    postgres_url: str | None,
    out: Path | None,
) -> None:
    """Memories/s of remember (one at a time), remember_many (batches, dedupe on), the
    embedder alone, and upsert of 10,000 records with vectors given, per store (a
    temporary SQLite file by default; the runs' collections are deleted from PostgreSQL
    after)."""
    from memstack.bench.ingest import UPSERT_ROWS, IngestResult, run_ingest
    from memstack.bench.locomo_data import load_locomo
    from memstack.bench.report import format_table, write_json
    from memstack.bench.setup import open_bench_embedder, open_bench_store
    from memstack.bench.synth import synth_sentences
    from memstack.clock import SystemClock
    from memstack.errors import MemstackError
    from memstack.longterm.turns import Turn

    sets: dict[str, list[str]] = {}
    turns: dict[str, list[Turn]] = {}
    if text_sets in ("locomo", "both"):
        try:
            samples, _ = load_locomo(data)
        except MemstackError as exc:
            raise click.ClickException(str(exc)) from exc
        said = [(s.sample_id, t) for s in samples for t in s.turns][:n]
        sets["locomo"] = [t.memory_text for _, t in said]
        turns["locomo"] = [
            Turn(speaker=t.speaker, text=t.text, time=t.timestamp, session_id=f"{s}:{t.session}")
            for s, t in said
        ]
    if text_sets in ("short", "both"):
        sets["short"] = synth_sentences(n)
    backends = _stores(stores, postgres_url)
    embedder = open_bench_embedder(embedder_kind)
    embedder.embed_batch(["warm up"])
    results: dict[str, list[IngestResult]] = {}
    for backend in backends:
        results[backend] = []
        with open_bench_store(backend, postgres_url=postgres_url) as store:
            for name, texts in sets.items():
                with progress_bar(5 * len(texts) + UPSERT_ROWS, f"{backend} {name}") as bar:
                    run = run_ingest(
                        name,
                        texts,
                        store=store,
                        embedder=embedder,
                        clock=SystemClock(),
                        batch=batch,
                        progress=bar.update,
                        turns=turns.get(name),
                        cleanup=backend == "postgres",
                    )
                    results[backend].append(asyncio.run(run))
    click.echo(f"ingest, embedder {embedder.model_id}, batches of {batch} (memories/s)")
    headers = (
        "store",
        *("texts", "n", "chars", "remember", "remember_many", "embed", "upsert", "many/embed"),
    )
    rows = [
        [backend, *(getattr(r, f) for f in _INGEST_FIELDS), r.many_to_embed]
        for backend, runs in results.items()
        for r in runs
    ]
    click.echo(format_table(headers, rows))
    for backend, runs in results.items():
        for r in runs:
            click.echo(
                f"{backend} {r.texts}: remember_many runs at {r.many_to_embed:.0%} of the "
                f"embedder alone; remember_turns {r.remember_turns_per_s:,.0f}/s, embedder "
                f"alone on the same turns {r.turns_embed_per_s:,.0f}/s ({r.turns_to_embed:.0%})"
            )
    if out:
        payload: dict[str, object] = {"benchmark": "ingest", "embedder": embedder.model_id}
        payload["batch"] = batch
        payload["runs"] = [r.to_json() for r in results[backends[0]]]
        payload["stores"] = {b: [r.to_json() for r in runs] for b, runs in results.items()}
        write_json(out, payload)
        click.echo(f"wrote {out}")


@bench.command("server")
@click.option(
    "--spawn",
    is_flag=True,
    help="Start a throwaway server on a temporary SQLite file (the default without --url).",
)
@click.option("--url", default=None, help="Drive this running server instead (with --api-key).")
@click.option(
    "--durable",
    is_flag=True,
    help="Spawn the server with --durable (SQLite synchronous=FULL) to measure its cost.",
)
@click.option(
    "--postgres-url",
    default=None,
    help="Spawn the server on this PostgreSQL instead of a temporary SQLite file; the "
    "benchmark's tenant, memories and key are erased from it afterwards (not read from "
    "MEMSTACK_POSTGRES_URL: give it here).",
)
@click.option(
    "--redis-url",
    default=None,
    help="Spawn the server with its short-term tier in this Redis; the benchmark's "
    "entries are erased from it afterwards (not read from MEMSTACK_REDIS_URL).",
)
@click.option(
    "--workers",
    "workers_text",
    default="1",
    show_default=True,
    help="Worker processes of the spawned server; a comma list (1,2) runs the same load "
    "once per count, each on a fresh server, and compares them. More than 1 needs "
    "--redis-url.",
)
@click.option("--api-key", envvar="MEMSTACK_API_KEY", help="With --url [env MEMSTACK_API_KEY].")
@click.option(
    "--server-pid",
    type=int,
    default=None,
    help="With --url: the server's process id on this machine, to read its CPU time.",
)
@click.option("--clients", type=click.IntRange(1, 256), default=16, show_default=True)
@click.option("--duration", type=click.FloatRange(0.5, 600), default=20.0, show_default=True)
@click.option("--max-requests", type=click.IntRange(1), default=100_000, show_default=True)
@click.option(
    "--mix",
    default="50,30,20",
    show_default=True,
    help="Shares of store,search,list requests.",
)
@_embedder_option
@click.option(
    "--label", default="", help="What is being measured, e.g. 'sqlite' (kept in the JSON)."
)
@click.option(
    "--out", type=click.Path(path_type=Path, dir_okay=False), help="Write the JSON report here."
)
def server(
    spawn: bool,
    url: str | None,
    durable: bool,
    postgres_url: str | None,
    redis_url: str | None,
    workers_text: str,
    api_key: str | None,
    server_pid: int | None,
    clients: int,
    duration: float,
    max_requests: int,
    mix: str,
    embedder_kind: Literal["local", "hash"],
    label: str,
    out: Path | None,
) -> None:
    """Requests/s, p50/p95/p99 per operation and server CPU ms per request under
    concurrent clients, beside the CPU the same calls take in process (the floor).

    By default a throwaway server is started (temporary SQLite file, throwaway tenant),
    and deleted afterwards; --postgres-url, --redis-url and --workers shape it, and
    several worker counts (--workers 1,2) are compared: requests/s and CPU per request
    as ratios to the first. With --url it drives that server, as agents named after a
    random run id, and deletes every memory it stored when done."""
    import httpx

    from memstack.bench.report import write_json
    from memstack.bench.serverbench import LoadOptions, server_table
    from memstack.errors import MemstackError

    if spawn and url:
        raise click.UsageError("give --spawn or --url, not both")
    if url and not api_key:
        raise click.UsageError("--url needs --api-key KEY (or MEMSTACK_API_KEY)")
    if url and durable:
        raise click.UsageError("--durable goes with a spawned server; start yours with it")
    if not url and server_pid is not None:
        raise click.UsageError("--server-pid goes with --url; a spawned server is measured anyway")
    shapes = _shapes(url, durable, postgres_url, redis_url, workers_text)
    ctx = click.get_current_context()
    if not url and ctx.get_parameter_source("api_key") == click.core.ParameterSource.COMMANDLINE:
        click.echo("note: --api-key is used with --url only; spawning a throwaway server", err=True)
    options = LoadOptions(
        clients=clients, duration=duration, max_requests=max_requests, mix=_mix(mix)
    )
    try:
        runs = [
            _server_bench(options, url, api_key, server_pid, embedder_kind, durable, shape)
            for shape in shapes
        ]
    except MemstackError as exc:
        raise click.ClickException(str(exc)) from exc
    except httpx.HTTPError as exc:
        raise click.ClickException(f"the server at {url} failed: {exc!r}") from exc
    if len(runs) == 1:
        summary = runs[0]
        click.echo(server_table(summary, label or str(summary["url"])))
        if out:
            write_json(out, {"benchmark": "server", "label": label, **summary})
            click.echo(f"wrote {out}")
        return
    _echo_comparison(runs, label, out)


def _echo_comparison(runs: list[dict[str, object]], label: str, out: Path | None) -> None:
    """Each run's table, then the comparison; the JSON holds both."""
    from memstack.bench.report import write_json
    from memstack.bench.serverbench import compare_runs, comparison_table, server_table

    for run in runs:
        click.echo(server_table(run, f"{label or run['store']}, {run['workers']} workers") + "\n")
    rows = compare_runs(runs)
    first = runs[0]
    click.echo(f"workers compared ({first['store']}, short-term tier {first['short_term']}):")
    click.echo(comparison_table(rows))
    if out:
        payload: dict[str, object] = {"benchmark": "server", "label": label}
        payload |= {k: first[k] for k in ("mode", "embedder", "store", "short_term", "mix")}
        payload |= {"workers": [run["workers"] for run in runs], "comparison": rows}
        write_json(out, {**payload, "runs": runs})
        click.echo(f"wrote {out}")


def _shapes(
    url: str | None,
    durable: bool,
    postgres_url: str | None,
    redis_url: str | None,
    workers_text: str,
) -> list[ServerShape | None]:
    """One spawned server's shape per worker count; ``[None]`` with --url."""
    from memstack.bench.spawn import ServerShape

    ctx = click.get_current_context()
    flags = {"postgres_url": "--postgres-url", "redis_url": "--redis-url"}
    flags["workers_text"] = "--workers"
    given = [
        flag
        for name, flag in flags.items()
        if ctx.get_parameter_source(name) == click.core.ParameterSource.COMMANDLINE
    ]
    if url:
        if given:
            names = ", ".join(given)
            raise click.UsageError(f"{names} shape a spawned server; drop them with --url")
        return [None]
    try:
        counts = [int(part) for part in workers_text.split(",") if part.strip()]
    except ValueError as exc:
        raise click.BadParameter(
            f"{workers_text!r} is not a number or a comma list of numbers, e.g. 1,2",
            param_hint="--workers",
        ) from exc
    if not counts or not all(1 <= n <= 256 for n in counts):
        raise click.BadParameter(
            "give worker counts from 1 to 256, e.g. 1,2", param_hint="--workers"
        )
    if max(counts) > 1 and not redis_url:
        raise click.UsageError(
            f"--workers {max(counts)} needs --redis-url URL: a server of several worker "
            "processes shares its short-term tier through Redis (memstack serve refuses "
            "it without); add --redis-url or use --workers 1."
        )
    if durable and postgres_url:
        raise click.UsageError(
            "--durable is SQLite's synchronous=FULL; PostgreSQL is durable already, so drop "
            "--durable or --postgres-url."
        )
    return [
        ServerShape(postgres_url=postgres_url, redis_url=redis_url, workers=n)
        for n in dict.fromkeys(counts)
    ]


def _server_bench(
    options: LoadOptions,
    url: str | None,
    api_key: str | None,
    server_pid: int | None,
    embedder_kind: str,
    durable: bool = False,
    shape: ServerShape | None = None,
) -> dict[str, object]:
    from memstack.bench.inprocess import replay_in_process
    from memstack.bench.load import delete_memories
    from memstack.bench.serverbench import measure_load, server_summary
    from memstack.bench.spawn import spawned_server
    from memstack.embeddings import EmbeddingSettings

    run_id = uuid.uuid4().hex[:8]
    extra: dict[str, object] = {"mode": "url" if url else "spawn", "embedder": embedder_kind}
    extra["durable"] = durable
    spawned = None
    with contextlib.ExitStack() as stack:
        if url is None or api_key is None:
            server_args = ["--durable"] if durable else []
            spawned = stack.enter_context(
                spawned_server(embedder_kind, shape=shape, server_args=server_args)
            )
            url, api_key, server_pid = spawned.url, spawned.api_key, spawned.pid
            extra["spawned"] = {"tenant": spawned.tenant, "db": str(spawned.db), "pid": spawned.pid}
            extra |= {"store": spawned.store, "workers": spawned.workers}
            extra["short_term"] = "redis" if shape and shape.redis_url else "in-process"
        workers = spawned.workers if spawned else 1
        with progress_bar(
            int(options.duration), "load" if workers == 1 else f"load, {workers} workers"
        ) as bar:
            measured = measure_load(
                options,
                url=url,
                api_key=api_key,
                pid=server_pid,
                agent_prefix=f"bench-{run_id}",
                tick=bar.update,
                warm_connections=2 * workers,
            )
            report, cpu = asyncio.run(measured)
        if spawned is None:
            cleanup = delete_memories(url=url, api_key=api_key, ids=report.stored_ids)
            extra["cleanup"] = {"created": len(report.stored_ids), **asyncio.run(cleanup)}
    if spawned is not None and spawned.erased:
        extra["erased"] = {"stored": len(report.stored_ids), **spawned.erased}
    embedding = EmbeddingSettings(provider=embedder_kind)
    with progress_bar(len(report.calls), "floor") as bar:
        replay = replay_in_process(report.calls, embedding=embedding, progress=bar.update)
        floor = asyncio.run(replay)
    summary = server_summary(report, options=options, cpu=cpu, floor=floor)
    return {"url": url, **extra, **summary}


def _mix(text: str) -> Mix:
    from memstack.bench.load import Mix

    try:
        store, search, listing = (float(part) for part in text.split(","))
    except ValueError as exc:
        raise click.BadParameter(
            "give three numbers: store,search,list", param_hint="--mix"
        ) from exc
    if min(store, search, listing) < 0 or store + search + listing <= 0:
        raise click.BadParameter("shares must be >= 0, not all 0", param_hint="--mix")
    return Mix(store=store, search=search, list=listing)


@bench.command("updates")
@_embedder_option
@click.option(
    "--conversations",
    "n_conversations",
    type=click.IntRange(min=1),
    default=60,
    show_default=True,
    help="How many scripted conversations to generate.",
)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option(
    "--modes",
    default="plain,explicit,reconcile",
    show_default=True,
    help="Comma-separated: plain (no supersedes), explicit (remember with supersedes), "
    "reconcile (remember_conversation with a scripted model making the right decisions).",
)
@click.option(
    "--out", type=click.Path(path_type=Path, dir_okay=False), help="Write the JSON report here."
)
def updates(
    embedder_kind: Literal["local", "hash"],
    n_conversations: int,
    seed: int,
    modes: str,
    out: Path | None,
) -> None:
    """Changed facts: is the top recalled memory the current value, and with as_of the
    value valid then? On generated conversations whose facts change, per mode."""
    from memstack.bench.report import format_table, write_json
    from memstack.bench.setup import open_bench_embedder, open_bench_store
    from memstack.bench.updates import MODES, run_updates
    from memstack.bench.updates_data import conversations

    chosen = list(dict.fromkeys(m.strip() for m in modes.split(",") if m.strip()))
    unknown = sorted(set(chosen) - set(MODES))
    if unknown or not chosen:
        raise click.BadParameter(
            f"unknown {', '.join(unknown) or '(none)'}; choose from {', '.join(MODES)}",
            param_hint="--modes",
        )
    data = conversations(seed=seed, n=n_conversations)
    questions = [q for c in data for q in c.questions]
    embedder = open_bench_embedder(embedder_kind)
    with (
        open_bench_store("sqlite") as store,
        progress_bar(len(questions) * len(chosen), "updates") as bar,
    ):
        report = asyncio.run(
            run_updates(
                data,
                store=store,
                embedder=embedder,
                modes=chosen,
                seed=seed,
                progress=bar.update,
            )
        )
    payload = report.to_json()
    current = sum(q.kind == "current" for q in questions)
    click.echo(
        f"fact updates: {len(questions)} questions ({current} current, "
        f"{len(questions) - current} past, as_of) from {len(data)} conversations, seed {seed}; "
        f"SQLite, embedder {embedder.model_id}; top-1 is the gold statement"
    )
    headers = ("mode", "current", "past", "overall", "hit@3", "recall p50 ms", "updates")
    rows = []
    for name, score in report.modes.items():
        m = score.to_json()
        row = [name, m["current"], m["past"], m["overall"], m["hit3"], m["recall_ms_p50"]]
        rows.append([*row, f"{score.updates}/{score.changes}"])
    click.echo(format_table(headers, rows))
    unstored = {name: s.unstored for name, s in report.modes.items() if s.unstored}
    if unstored:
        click.echo(
            "statements not stored as memories of their own (deduplicated or refused): "
            + ", ".join(f"{name} {n}" for name, n in unstored.items())
        )
    if out:
        write_json(out, {"benchmark": "updates", **payload})
        click.echo(f"wrote {out}")


@bench.command("report")
@click.option(
    "--results",
    type=click.Path(path_type=Path, exists=True, file_okay=False),
    default=Path("bench-results"),
    show_default=True,
    help="Folder of the benchmarks' JSON (read recursively).",
)
@click.option(
    "--out",
    type=click.Path(path_type=Path, dir_okay=False),
    default=Path("docs/benchmarks.md"),
    show_default=True,
    help="The markdown document to write.",
)
def report_command(results: Path, out: Path) -> None:
    """Write the benchmarks document (tables, plots) from every JSON under --results."""
    from memstack.bench.docs_report import read_results, render

    found = read_results(results)
    text = render(found, folder=results, out=out, root=Path.cwd())
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    unknown = sum(r.kind is None for r in found)
    click.echo(f"wrote {out} from {len(found)} JSON files ({unknown} not recognised)")


@bench.command("knowledge")
@click.option(
    "--mb",
    "megabytes",
    default="1,10",
    show_default=True,
    help="Document sizes in MiB, comma-separated (at most 10: the route's limit).",
)
@_embedder_option
@click.option(
    "--out", type=click.Path(path_type=Path, dir_okay=False), help="Write the JSON report here."
)
def knowledge_command(
    megabytes: str, embedder_kind: Literal["local", "hash"], out: Path | None
) -> None:
    """One large knowledge document a size, posted to a throwaway server and followed
    to ready: the 202, passages/s, /healthz meanwhile, and the server's RSS growth as a
    multiple of the document's size."""
    from memstack.bench.knowledge import document_text, knowledge_table, measure_document
    from memstack.bench.report import write_json
    from memstack.bench.spawn import spawned_server
    from memstack.errors import MemstackError

    try:
        sizes = [float(part) for part in megabytes.split(",")]
    except ValueError as exc:
        raise click.BadParameter("give sizes in MiB, e.g. 1,10", param_hint="--mb") from exc
    if not sizes or not all(0 < size <= 10 for size in sizes):
        raise click.BadParameter("each size must be above 0 and at most 10", param_hint="--mb")
    runs = []
    try:
        for size in sizes:
            text = document_text(size)
            with spawned_server(embedder_kind) as server:
                run = measure_document(
                    url=server.url, api_key=server.api_key, pid=server.pid, text=text
                )
            runs.append(run)
            click.echo(f"{size:g} MiB: ready in {run['ready_s']} s", err=True)
    except MemstackError as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(knowledge_table(runs))
    if out:
        write_json(out, {"benchmark": "knowledge", "embedder": embedder_kind, "runs": runs})
        click.echo(f"wrote {out}")
