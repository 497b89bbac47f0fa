"""``memstack bench ...``: benchmark commands that print tables and write JSON."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import click

from memstack.bench.progress import progress_bar

if TYPE_CHECKING:
    from memstack.bench.ingest import IngestResult
    from memstack.bench.load import Mix
    from memstack.bench.locomo import LocomoReport
    from memstack.bench.locomo_data import LoadStats, Sample
    from memstack.bench.scale import RecallBench, RecallRun
    from memstack.bench.serverbench import LoadOptions
    from memstack.bench.spawn import ServerShape
    from memstack.bench.synth import Phrases
    from memstack.embeddings import Embedder
    from memstack.longterm.turns import Turn
    from memstack.storage import RecordStore

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


_embedder_option = click.option(
    "--embedder",
    "embedder_kind",
    type=click.Choice(["local", "hash"]),
    default="local",
    show_default=True,
    help="local = all-MiniLM-L6-v2 (the default), or the model folder MEMSTACK_LOCAL_MODEL "
    "names; hash = the deterministic test embedder.",
)
_out_option = click.option(
    "--out", type=click.Path(path_type=Path, dir_okay=False), help="Write the JSON report here."
)
_postgres_option = click.option(
    "--postgres-url", envvar="MEMSTACK_POSTGRES_URL", help="[env MEMSTACK_POSTGRES_URL]"
)


def _stores_option(default: str) -> Callable[[_F], _F]:
    """The ``--stores`` option of the commands that run on several backends."""
    return click.option(
        "--stores",
        default=default,
        show_default=True,
        help="Comma-separated backends: sqlite, memory, postgres (postgres needs --postgres-url).",
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
@_embedder_option
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
    "--url",
    help="Also run it through the REST API of the memstack server at URL, beside the "
    "in-process run: the same turns posted with add_turns, the same questions recalled. "
    "Start that server with MEMSTACK_MEMORY_MAX_ITEMS=0 (no eviction, else the rankings "
    "cannot match), the same embedder, and freshly started (it caches recent texts' "
    "vectors, so a rerun's timings are too good). Needs --api-key.",
)
@click.option(
    "--via",
    type=click.Choice(["rest", "mem0"]),
    default="rest",
    show_default=True,
    help="With --url: memstack's own client over the REST API, or mem0's Python client "
    "(pip install mem0ai) over memstack's mem0 routes: each session one add(..., "
    "infer=False), each question one search, timed against memstack's client on the same "
    "server.",
)
@click.option(
    "--api-key",
    help="With --url: a key with long-term memory (`memstack keys create --long-term`, or "
    "MEMSTACK_MEMORY_ENABLED=1 on the server). No environment default: never a server by "
    "accident.",
)
@_out_option
def locomo(
    data: Path,
    store_kind: Literal["sqlite", "postgres", "memory"],
    db: Path | None,
    postgres_url: str | None,
    embedder_kind: Literal["local", "hash"],
    max_samples: int | None,
    ablate: str,
    url: str | None,
    via: Literal["rest", "mem0"],
    api_key: str | None,
    out: Path | None,
) -> None:
    """Recall quality of long-term memory on LoCoMo, beside plain BM25 and pure vector;
    with --url, through a server's REST API (or mem0's client, --via mem0) as well."""
    from memstack.bench.locomo_data import load_locomo
    from memstack.bench.locomo_mem0 import run_via_mem0
    from memstack.bench.locomo_remote import run_against
    from memstack.bench.locomo_report import locomo_text, mem0_text, remote_text
    from memstack.bench.report import write_json
    from memstack.bench.setup import open_bench_embedder, open_bench_store

    if bool(url) != bool(api_key):
        raise click.UsageError("--url and --api-key go together (neither may be empty).")
    if via == "mem0" and url is None:
        raise click.UsageError("--via mem0 needs the server: give --url and --api-key.")
    ablations = _ablations(ablate)
    samples, stats = load_locomo(data)
    samples = samples[:max_samples] if max_samples else samples
    embedder = open_bench_embedder(embedder_kind)
    with open_bench_store(store_kind, db=db, postgres_url=postgres_url) as store:
        report = _locomo_runs(samples, stats, store, store_kind, embedder, ablations)
    remote = via_mem0 = None
    if url and api_key and via == "rest":
        remote = run_against(url, api_key, samples, embedder, report)
    elif url and api_key:
        via_mem0 = run_via_mem0(url, api_key, samples, report)
    click.echo(locomo_text(report, conversations=len(samples), data_name=data.name))
    if remote:
        click.echo(remote_text(remote, report))
    if via_mem0:
        click.echo(mem0_text(via_mem0, report))
    if out:
        extra = {"remote": remote.to_json()} if remote else {}
        extra |= {"via_mem0": via_mem0.to_json()} if via_mem0 else {}
        write_json(out, {"benchmark": "locomo", **report.to_json(), **extra})
        click.echo(f"wrote {out}")


@bench.command("calibrate")
@_locomo_data("Any JSON file of the LoCoMo schema, with at least two conversations.")
@click.option("--store", "store_kind", type=click.Choice(["sqlite", "memory"]), default="sqlite")
@_embedder_option
@_out_option
def calibrate(
    data: Path, store_kind: str, embedder_kind: Literal["local", "hash"], out: Path | None
) -> None:
    """The calibrated relevance (min_score's scale) fitted on LoCoMo's first half and
    checked on the second: precision and recall of evidence at each threshold."""
    from memstack.bench.calibrate import calibrate_file
    from memstack.bench.docs_kinds import calibrate_tables
    from memstack.bench.report import write_json

    payload = calibrate_file(data, store_kind=store_kind, embedder_kind=embedder_kind)
    click.echo("\n".join(calibrate_tables(payload)))
    if out:
        write_json(out, payload)
        click.echo(f"wrote {out}")


def _ablations(text: str) -> list[str]:
    """The mechanisms ``--ablate`` names, each switched off in a run of its own."""
    from memstack.bench.locomo import MECHANISMS

    ablations = list(dict.fromkeys(name.strip() for name in text.split(",") if name.strip()))
    unknown = sorted(set(ablations) - set(MECHANISMS))
    if unknown:
        raise click.BadParameter(
            f"unknown {', '.join(unknown)}; choose from {', '.join(MECHANISMS)}",
            param_hint="--ablate",
        )
    return ablations


def _locomo_runs(
    samples: list[Sample],
    stats: LoadStats,
    store: RecordStore,
    store_kind: str,
    embedder: Embedder,
    ablations: list[str],
) -> LocomoReport:
    """The run with every mechanism on, holding the runs with one off each."""
    from memstack.bench.locomo import run_locomo, scored_questions, switched
    from memstack.clock import SystemClock

    total = sum(len(scored_questions(s)) for s in samples)
    runs = {}
    for name in ["", *ablations]:
        with progress_bar(total, switched(name) if name else "recalling") as bar:
            run = run_locomo(
                samples,
                stats,
                store=store,
                store_name=store_kind,
                embedder=embedder,
                clock=SystemClock(),
                progress=bar.update,
                off=[name] if name else [],
            )
            runs[name] = asyncio.run(run)
    report = runs.pop("")
    report.ablations = {name: run.memstack for name, run in runs.items()}
    report.ablation_halves = {name: run.halves for name, run in runs.items()}
    return report


@bench.command("recall")
@_stores_option("sqlite,memory")
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
@_postgres_option
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
    embedding plus an exact numpy scan), right after each load and once the indexes are
    ready (and the seconds until they serve), after writes, ANN recall@10, ingest and RSS."""
    from memstack.bench.plot import MISSING_MATPLOTLIB, plots_available
    from memstack.bench.proc import rss_mb
    from memstack.bench.recall_report import recall_payload, recall_table, storage_table
    from memstack.bench.report import write_json
    from memstack.bench.setup import open_bench_embedder
    from memstack.bench.synth import embed_phrases, synth_fidelity

    steps = _ints(sizes, "--sizes", least=10, example="1000,10000")
    backends = _stores(stores, postgres_url)
    plotting = plots_available()
    if not plotting:
        click.echo(f"{MISSING_MATPLOTLIB}; the JSON report is written all the same", err=True)
    before_model = rss_mb()
    embedder = open_bench_embedder(embedder_kind)
    phrases = embed_phrases(embedder)
    model_mb = rss_mb() - before_model
    setup = _recall_setup(embedder, phrases, steps, shape, n_queries, writes, seed)
    runs = [_recall_run(setup, backend, postgres_url) for backend in backends]
    click.echo(
        f"recall of 10, {n_queries} queries, {writes} after writes; embedder {embedder.model_id}"
    )
    click.echo(recall_table(runs))
    if any(point.storage for run in runs for point in run.points):
        click.echo("storage once ready (bytes per memory):\n" + storage_table(runs))
    fidelity = synth_fidelity(embedder, phrases, seed=seed)
    payload = recall_payload(
        setup,
        runs,
        model_rss_mb=model_mb,
        rss_before_model_mb=before_model,
        synth_fidelity=fidelity,
    )
    write_json(out, {"benchmark": "recall", **payload})
    _plot_recall(runs, out, plotting)


def _recall_setup(
    embedder: Embedder,
    phrases: Phrases,
    steps: list[int],
    shape: Literal["one-namespace", "many-namespaces"],
    n_queries: int,
    writes: int,
    seed: int,
) -> RecallBench:
    """What every store is measured with, from the command's options."""
    from memstack.bench.scale import RecallBench
    from memstack.bench.synth import synth_queries, synth_sentences
    from memstack.clock import SystemClock

    return RecallBench(
        embedder=embedder,
        phrases=phrases,
        sizes=tuple(sorted(set(steps))),
        shape=shape,
        queries=tuple(synth_queries(n_queries, seed=seed + 92)),
        writes=tuple(f"{t} (written)" for t in synth_sentences(writes, seed=seed + 1)),
        clock=SystemClock(),
        seed=seed,
    )


def _recall_run(setup: RecallBench, backend: str, postgres_url: str | None) -> RecallRun:
    """One store's run, its memory released first so one run's leftovers weigh on no
    other's RSS."""
    from memstack.bench.proc import release_memory
    from memstack.bench.scale import run_recall
    from memstack.bench.setup import open_bench_store

    sizes = setup.sizes
    work = max(sizes) + len(sizes) * (4 * len(setup.queries) + len(setup.writes))
    release_memory()
    with (
        open_bench_store(backend, postgres_url=postgres_url) as store,
        progress_bar(work, f"{backend} {setup.shape}") as bar,
    ):
        run = run_recall(
            setup,
            store=store,
            store_name=backend,
            cleanup=backend == "postgres",
            progress=bar.update,
            footprint=_footprint(postgres_url) if backend == "postgres" else None,
        )
        return asyncio.run(run)


def _footprint(postgres_url: str | None) -> Callable[[Sequence[str]], dict[str, float]] | None:
    """What a PostgreSQL run's rows weigh, read from the server at ``postgres_url``."""
    if not postgres_url:
        return None
    from memstack.bench.footprint import postgres_footprint

    return lambda namespaces: postgres_footprint(postgres_url, namespaces)


def _plot_recall(runs: list[RecallRun], out: Path, plotting: bool) -> None:
    """The PNG beside the JSON, or a word on why there is none."""
    from memstack.bench.plot import MISSING_MATPLOTLIB, plot_recall

    if not plotting:
        click.echo(f"wrote {out} ({MISSING_MATPLOTLIB})")
        return
    png = out.with_suffix(".png")
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


def _ints(
    text: str, option: str, *, least: int, most: int | None = None, example: str
) -> list[int]:
    """A comma list of whole numbers from ``least`` (to ``most``), in the order given; a
    usage error naming ``option`` and an ``example`` otherwise."""
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError as exc:
        raise click.BadParameter(
            f"{text!r} is not a comma list of whole numbers, e.g. {example}", param_hint=option
        ) from exc
    if not values or min(values) < least or (most is not None and max(values) > most):
        span = f"from {least} to {most}" if most is not None else f"of at least {least}"
        raise click.BadParameter(f"give whole numbers {span}, e.g. {example}", param_hint=option)
    return values


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
@_stores_option("sqlite")
@_postgres_option
@_out_option
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
    from memstack.bench.ingest_report import ingest_payload, ingest_text
    from memstack.bench.report import write_json
    from memstack.bench.setup import open_bench_embedder

    sets, turns = _ingest_texts(text_sets, data, n)
    backends = _stores(stores, postgres_url)
    embedder = open_bench_embedder(embedder_kind)
    embedder.embed_batch(["warm up"])
    results = {
        backend: _ingest_runs(backend, postgres_url, sets, turns, embedder, batch)
        for backend in backends
    }
    click.echo(ingest_text(results, embedder=embedder.model_id, batch=batch))
    if out:
        write_json(out, ingest_payload(results, embedder=embedder.model_id, batch=batch))
        click.echo(f"wrote {out}")


def _ingest_texts(
    text_sets: Literal["locomo", "short", "both"], data: Path, n: int
) -> tuple[dict[str, list[str]], dict[str, list[Turn]]]:
    """The sets of texts by name, and for LoCoMo the same texts as the turns they were."""
    from memstack.bench.locomo_data import load_locomo
    from memstack.bench.synth import synth_sentences
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
    return sets, turns


def _ingest_runs(
    backend: str,
    postgres_url: str | None,
    sets: dict[str, list[str]],
    turns: dict[str, list[Turn]],
    embedder: Embedder,
    batch: int,
) -> list[IngestResult]:
    """Every set of texts on one store (the runs' collections deleted from PostgreSQL)."""
    from memstack.bench.ingest import UPSERT_ROWS, run_ingest
    from memstack.bench.setup import open_bench_store
    from memstack.clock import SystemClock

    results = []
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
                results.append(asyncio.run(run))
    return results


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
    "--postgres-read-url",
    "postgres_read_urls",
    multiple=True,
    help="A hot standby of --postgres-url (repeatable): each worker count is run twice, "
    "without and then with reads on the standbys, and compared (not read from "
    "MEMSTACK_POSTGRES_READ_URL).",
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
@_out_option
def server(
    spawn: bool,
    url: str | None,
    durable: bool,
    postgres_url: str | None,
    postgres_read_urls: tuple[str, ...],
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
    and deleted afterwards; --postgres-url, --postgres-read-url, --redis-url and
    --workers shape it, and several configurations (--workers 1,2; with and without
    standbys) are compared: requests/s, p99 and CPU per request as ratios to the first,
    with the CPU every part spent (server, embedder, PostgreSQL, Redis, load generator)
    and which part saturates first. With --url it drives that server, as agents named
    after a random run id, and deletes every memory it stored when done."""
    from memstack.bench.serverbench import LoadOptions

    _refuse_server_flags(spawn=spawn, url=url, api_key=api_key, durable=durable, pid=server_pid)
    shapes = _shapes(url, durable, postgres_url, postgres_read_urls, redis_url, workers_text)
    if not url and _given("api_key"):
        click.echo("note: --api-key is used with --url only; spawning a throwaway server", err=True)
    options = LoadOptions(
        clients=clients, duration=duration, max_requests=max_requests, mix=_mix(mix)
    )
    runs = [
        _server_run(options, embedder_kind, url, api_key, server_pid, durable, shape)
        for shape in shapes
    ]
    if len(runs) == 1:
        _echo_server_run(runs[0], label, out)
    else:
        _echo_comparison(runs, label, out)


def _server_run(
    options: LoadOptions,
    embedder_kind: str,
    url: str | None,
    api_key: str | None,
    server_pid: int | None,
    durable: bool,
    shape: ServerShape | None,
) -> dict[str, object]:
    """One run of the load, its failures told as the command's errors."""
    import httpx

    from memstack.bench.server_run import run_server_bench
    from memstack.errors import MemstackError

    try:
        return run_server_bench(
            options,
            embedder_kind=embedder_kind,
            url=url,
            api_key=api_key,
            server_pid=server_pid,
            durable=durable,
            shape=shape,
        )
    except MemstackError as exc:
        raise click.ClickException(str(exc)) from exc
    except httpx.HTTPError as exc:
        raise click.ClickException(f"the server at {url} failed: {exc!r}") from exc


def _refuse_server_flags(
    *, spawn: bool, url: str | None, api_key: str | None, durable: bool, pid: int | None
) -> None:
    """The flag combinations that make no sense, each refused with what to do instead."""
    refused = (
        (spawn and url, "give --spawn or --url, not both"),
        (url and not api_key, "--url needs --api-key KEY (or MEMSTACK_API_KEY)"),
        (url and durable, "--durable goes with a spawned server; start yours with it"),
        (
            not url and pid is not None,
            "--server-pid goes with --url; a spawned server is measured anyway",
        ),
    )
    for wrong, message in refused:
        if wrong:
            raise click.UsageError(message)


def _given(name: str) -> bool:
    """Whether the option of parameter ``name`` was given on the command line."""
    source = click.get_current_context().get_parameter_source(name)
    return source == click.core.ParameterSource.COMMANDLINE


def _echo_server_run(summary: dict[str, object], label: str, out: Path | None) -> None:
    from memstack.bench.report import write_json
    from memstack.bench.server_report import server_table

    click.echo(server_table(summary, label or str(summary["url"])))
    if out:
        write_json(out, {"benchmark": "server", "label": label, **summary})
        click.echo(f"wrote {out}")


def _echo_comparison(runs: list[dict[str, object]], label: str, out: Path | None) -> None:
    """Each run's table, then the comparison; the JSON holds both."""
    from memstack.bench.report import write_json
    from memstack.bench.server_report import (
        compare_runs,
        comparison_table,
        configuration,
        server_table,
    )

    for run in runs:
        click.echo(server_table(run, f"{label or run['store']}, {configuration(run)}") + "\n")
    rows = compare_runs(runs)
    first = runs[0]
    click.echo(
        f"configurations compared ({first['store']}, short-term tier {first['short_term']}):"
    )
    click.echo(comparison_table(rows))
    if out:
        payload: dict[str, object] = {"benchmark": "server", "label": label}
        payload |= {k: first[k] for k in ("mode", "embedder", "store", "short_term", "mix")}
        payload |= {"workers": list(dict.fromkeys(run["workers"] for run in runs))}
        payload |= {"replicas": max(int(str(run.get("replicas", 0))) for run in runs)}
        payload |= {"comparison": rows}
        write_json(out, {**payload, "runs": runs})
        click.echo(f"wrote {out}")


_SHAPE_FLAGS = {
    "postgres_url": "--postgres-url",
    "postgres_read_urls": "--postgres-read-url",
    "redis_url": "--redis-url",
    "workers_text": "--workers",
}
"""The options that shape a spawned server, by parameter name."""


def _shapes(
    url: str | None,
    durable: bool,
    postgres_url: str | None,
    postgres_read_urls: tuple[str, ...],
    redis_url: str | None,
    workers_text: str,
) -> list[ServerShape | None]:
    """One spawned server's shape per worker count, each then with the standbys when
    there are any; ``[None]`` with --url."""
    from memstack.bench.spawn import ServerShape

    given = [flag for name, flag in _SHAPE_FLAGS.items() if _given(name)]
    if url:
        if given:
            names = ", ".join(given)
            raise click.UsageError(f"{names} shape a spawned server; drop them with --url")
        return [None]
    counts = _ints(workers_text, "--workers", least=1, most=256, example="1,2")
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
    if postgres_read_urls and not postgres_url:
        raise click.UsageError(
            "--postgres-read-url names a hot standby of --postgres-url; add --postgres-url "
            "URL of its primary."
        )
    reads = [()] + ([tuple(postgres_read_urls)] if postgres_read_urls else [])
    return [
        ServerShape(
            postgres_url=postgres_url,
            postgres_read_urls=standbys,
            redis_url=redis_url,
            workers=n,
        )
        for n in dict.fromkeys(counts)
        for standbys in reads
    ]


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
@_out_option
def updates(
    embedder_kind: Literal["local", "hash"],
    n_conversations: int,
    seed: int,
    modes: str,
    out: Path | None,
) -> None:
    """Changed facts: is the top recalled memory the current value, and with as_of the
    value valid then? On generated conversations whose facts change, per mode."""
    from memstack.bench.report import write_json
    from memstack.bench.setup import open_bench_embedder, open_bench_store
    from memstack.bench.updates import run_updates
    from memstack.bench.updates_data import conversations
    from memstack.bench.updates_report import updates_text

    chosen = _modes(modes)
    data = conversations(seed=seed, n=n_conversations)
    questions = [q for c in data for q in c.questions]
    embedder = open_bench_embedder(embedder_kind)
    with (
        open_bench_store("sqlite") as store,
        progress_bar(len(questions) * len(chosen), "updates") as bar,
    ):
        run = run_updates(
            data, store=store, embedder=embedder, modes=chosen, seed=seed, progress=bar.update
        )
        report = asyncio.run(run)
    click.echo(updates_text(report, questions))
    if out:
        write_json(out, {"benchmark": "updates", **report.to_json()})
        click.echo(f"wrote {out}")


def _modes(text: str) -> list[str]:
    """The modes ``--modes`` names, each once, in the order given."""
    from memstack.bench.updates import MODES

    chosen = list(dict.fromkeys(m.strip() for m in text.split(",") if m.strip()))
    unknown = sorted(set(chosen) - set(MODES))
    if unknown or not chosen:
        raise click.BadParameter(
            f"unknown {', '.join(unknown) or '(none)'}; choose from {', '.join(MODES)}",
            param_hint="--modes",
        )
    return chosen


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
    """Write the benchmarks document (tables, plots) from every JSON under --results, and
    the scaling page (scaling.md beside it) from the runs it reads."""
    import os

    from memstack.bench.docs_report import read_results, render
    from memstack.bench.scaling_doc import missing_sources, render_scaling

    found = read_results(results)
    text = render(found, folder=results, out=out, root=Path.cwd())
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    unknown = sum(r.kind is None for r in found)
    click.echo(f"wrote {out} from {len(found)} JSON files ({unknown} not recognised)")
    scaling = out.parent / "scaling.md"
    missing = missing_sources(results)
    if missing:
        click.echo(f"left {scaling} as it is: its runs are missing ({', '.join(missing)})")
        return
    prefix = Path(os.path.relpath(results.resolve(), scaling.resolve().parent)).as_posix()
    scaling.write_text(render_scaling(results, link_prefix=prefix), encoding="utf-8")
    click.echo(f"wrote {scaling}")


@bench.command("knowledge")
@click.option(
    "--mb",
    "megabytes",
    default="1,10",
    show_default=True,
    help="Document sizes in MiB, comma-separated (at most 10: the route's limit).",
)
@_embedder_option
@_out_option
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


@bench.command("ablation")
@click.argument(
    "runs", nargs=-1, required=True, type=click.Path(path_type=Path, exists=True, dir_okay=False)
)
@click.option(
    "--compare",
    "comparisons",
    multiple=True,
    required=True,
    help="NAME=BENCH:WITH/WITHOUT[:FIGURE], e.g. 'hot routes=server:base/nohot' "
    "(repeat for each mechanism).",
)
@click.option(
    "--decision",
    "decisions",
    multiple=True,
    help="NAME=TEXT: what was decided for a mechanism and why (kept in the JSON).",
)
@_out_option
def ablation_command(
    runs: tuple[Path, ...],
    comparisons: tuple[str, ...],
    decisions: tuple[str, ...],
    out: Path | None,
) -> None:
    """What each mechanism buys: medians of alternating runs with and without it.

    RUNS are the JSON files bench server or bench recall wrote, named
    <bench>-<variant>-<round>.json; a mechanism is kept at a gain of at least 1.10 on
    the figure it was built for."""
    from memstack.bench.ablation import ablation_payload, kept, parse_comparison
    from memstack.bench.report import format_table, write_json
    from memstack.errors import InvalidInput

    try:
        decided = dict(d.partition("=")[::2] for d in decisions)
        payload = ablation_payload(list(runs), [parse_comparison(c) for c in comparisons], decided)
    except InvalidInput as exc:
        raise click.UsageError(str(exc)) from exc
    headers = ("mechanism", "figure", "with", "without", "gain", "kept")
    rows = [
        [r["mechanism"], r["figure"], r["median_with"], r["median_without"], r["gain"], kept(r)]
        for r in payload["rows"]
    ]
    click.echo(format_table(headers, rows))
    if out:
        write_json(out, payload)
        click.echo(f"wrote {out}")


@bench.command("secrets")
@_locomo_data("LoCoMo-schema JSON whose turns are the writes timed.")
@click.option(
    "--mb",
    "megabytes",
    type=click.FloatRange(min=0.001, max=16),
    default=1.0,
    show_default=True,
    help="Size of each adversarial input, in MiB.",
)
@click.option(
    "--rounds",
    type=click.IntRange(min=1, max=50),
    default=5,
    show_default=True,
    help="Alternating rounds of the per-write layers (the median round is reported).",
)
@click.option(
    "--corpus",
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    help="A Python file defining CREDENTIALS, LOOKALIKES and halves() (such as "
    "tests/security/fresh_corpus.py): what the filter catches, per kind and per half.",
)
@_out_option
def secrets_command(
    data: Path, megabytes: float, rounds: int, corpus: Path | None, out: Path | None
) -> None:
    """The secret filter's cost a write, layer by layer, and on adversarial input."""
    from memstack.bench.locomo_data import load_locomo
    from memstack.bench.report import write_json
    from memstack.bench.secret_filter import (
        adversarial_runs,
        corpus_figures,
        corpus_table,
        cost_table,
        write_costs,
    )
    from memstack.errors import InvalidInput

    try:
        samples, _ = load_locomo(data)
    except InvalidInput as exc:
        raise click.BadParameter(str(exc), param_hint="--data") from exc
    texts = [turn.memory_text for sample in samples for turn in sample.turns]
    if not texts:
        raise click.BadParameter(f"{data} holds no turns", param_hint="--data")
    writes = write_costs(texts, rounds)
    adversarial = adversarial_runs(int(megabytes * (1 << 20)))
    click.echo(f"{len(texts):,} writes (LoCoMo turns), {rounds} rounds\n")
    click.echo(cost_table(writes, adversarial))
    figures = None
    if corpus:
        try:
            figures = corpus_figures(corpus)
        except (ImportError, SyntaxError) as exc:
            raise click.BadParameter(
                f"cannot read the corpus: {exc}", param_hint="--corpus"
            ) from exc
        click.echo("\n" + corpus_table(figures))
    if out:
        payload = {
            "benchmark": "secrets",
            "writes": len(texts),
            "rounds": rounds,
            "megabytes": megabytes,
            "layers": writes,
            "adversarial": adversarial,
            "corpus": None if corpus is None else corpus.as_posix(),
            "figures": figures,
        }
        write_json(out, payload)
        click.echo(f"wrote {out}")


@bench.command("catalog")
@click.option(
    "--postgres-url",
    envvar="MEMSTACK_POSTGRES_URL",
    required=True,
    help="The server to measure (a throwaway schema is made and dropped) "
    "[env MEMSTACK_POSTGRES_URL].",
)
@click.option(
    "--namespaces",
    default="100,1000,10000",
    show_default=True,
    help="Comma-separated counts of indexed namespaces to measure at, each at least 1.",
)
@click.option(
    "--rows",
    type=click.IntRange(min=1),
    default=2,
    show_default=True,
    help="Rows of each namespace (the one queried holds 200): each gets its own index.",
)
@click.option(
    "--repeats", type=click.IntRange(min=2), default=30, show_default=True, help="Recalls a count."
)
@_out_option
def catalog_command(
    postgres_url: str, namespaces: str, rows: int, repeats: int, out: Path | None
) -> None:
    """Where one partial IVFFlat index per large namespace stops scaling: the catalog,
    planning, a fresh connection, builds, inserts and ANALYZE as indexed namespaces grow."""
    from memstack.bench.catalog import CatalogOptions, run_catalog
    from memstack.bench.catalog_report import catalog_text
    from memstack.bench.report import write_json
    from memstack.errors import MemstackError

    counts = sorted(set(_ints(namespaces, "--namespaces", least=1, example="100,1000")))
    options = CatalogOptions(counts=counts, rows=rows, repeats=repeats)
    try:
        with progress_bar(options.counts[-1], "namespaces indexed") as bar:
            payload = run_catalog(postgres_url, options, bar.update)
    except MemstackError as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(catalog_text(payload))
    if out:
        write_json(out, payload)
        click.echo(f"wrote {out}")
