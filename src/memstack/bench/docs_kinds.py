"""One markdown renderer per benchmark kind, for ``memstack bench report``.

Each kind reads the JSON its bench command writes with ``--out`` and gives back the
figures as markdown tables (ratios to the floor beside the milliseconds) and the
command that reproduces the run. The document around them is ``bench.docs_report``.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from memstack.bench.ablation import kept
from memstack.bench.catalog_report import catalog_headline
from memstack.bench.catalog_report import catalog_tables as catalog_figures
from memstack.bench.footprint import STORAGE_HEADERS, storage_row
from memstack.bench.locomo import switched
from memstack.bench.metrics import METRIC_NAMES
from memstack.bench.server_report import SATURATION_HEADERS, saturation_rows

__all__ = ["KINDS", "Kind", "md_table", "num"]

Payload = Mapping[str, Any]


@dataclass(frozen=True, kw_only=True)
class Kind:
    """A benchmark kind: its bench command, what it measures, the keys its JSON always
    has (to recognise files written before the ``benchmark`` field), and its renderers."""

    name: str
    title: str
    about: str
    keys: frozenset[str]
    tables: Callable[[Payload], list[str]]
    command: Callable[[Payload, str], str]
    """The command line that reproduces the run, given the JSON's path to write."""


def num(value: object) -> str:
    """A JSON value as a table cell: thousands grouped, small floats as the JSON has them."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if abs(value) >= 1000:
            return f"{value:,.0f}"
        text = f"{round(value, 4):g}"
        return text if "." in text or "e" in text else f"{text}.0"
    return str(value).replace("|", "\\|")


def md_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    """A markdown table: columns of text left-aligned, columns with numbers right-aligned."""
    align = [
        "---:" if any(_is_number(row[i]) for row in rows) else "---" for i in range(len(headers))
    ]
    lines = [_row(headers), _row(align)]
    return lines + [_row([num(v) for v in row]) for row in rows]


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _embedder(model_id: str) -> str:
    """``local:all-MiniLM-L6-v2`` -> ``local``: the ``--embedder`` choice that made it."""
    return model_id.split(":", 1)[0]


def _postgres(stores: Sequence[str]) -> list[str]:
    return ["--postgres-url URL"] if "postgres" in stores else []


def recall_tables(p: Payload) -> list[str]:
    headline = (
        f"Embedder `{p['embedder']}` ({p['dim']} dimensions), {p['queries']} queries, "
        f"{p['writes']} recalls after writes, seed {p['seed']}; synthesized vectors' "
        f"fidelity {num(p['synth_fidelity'])}; the model takes {num(p['model_rss_mb'])} MB."
    )
    if p.get("variant"):  # a run kept to compare, made by other code than the command's
        headline = f"**Variant: {p['variant']}.** {headline}"
    headers: tuple[str, ...] = (
        "store",
        "size",
        "namespaces",
        "p50 ms",
        "floor p50 ms",
        "ratio p50",
    )
    headers += ("p95 ms", "floor p95 ms", "ratio p95", "after-write p95 ms", "ratio")
    headers += ("ANN R@10", "ingest/s", "RSS MB", "RSS ratio")
    rows = [
        [run["store"], pt["size"], pt["namespaces"]]
        + [pt[f] for f in ("recall_p50_ms", "floor_p50_ms", "ratio_p50")]
        + [pt[f] for f in ("recall_p95_ms", "floor_p95_ms", "ratio_p95")]
        + [pt["after_write_p95_ms"], pt["after_write_ratio_p95"], pt["ann_recall_at_10"]]
        + [pt["ingest_per_s"], pt["rss_mb"], pt["rss_ratio"]]
        for run in p["runs"]
        for pt in run["points"]
    ]
    return [headline, "", *md_table(headers, rows), *_after_load_table(p)]


def _after_load_table(p: Payload) -> list[str]:
    """The same recalls right after each load, and the seconds until the index served and
    the store was ready (the table above is taken after that): for runs that measured it."""
    points = [(run, pt) for run in p["runs"] for pt in run["points"] if "index_serves_s" in pt]
    if not points:
        return []
    headers: tuple[str, ...] = ("store", "size", "p50 ms", "floor p50 ms", "ratio p50", "p95 ms")
    headers += ("floor p95 ms", "ratio p95", "ANN R@10", "index serves s", "ready s")
    fields: tuple[str, ...] = (
        "after_load_p50_ms",
        "after_load_floor_p50_ms",
        "after_load_ratio_p50",
    )
    fields += ("after_load_p95_ms", "after_load_floor_p95_ms", "after_load_ratio_p95")
    fields += ("after_load_ann_recall_at_10", "index_serves_s", "index_wait_s")
    rows = [[run["store"], pt["size"], *(pt[f] for f in fields)] for run, pt in points]
    note = (
        "Right after the load returned (before anything waited for an index); index "
        "serves s: from the end of the load until the approximate index served searches; "
        "ready s: until the store was ready, polled once these recalls were done."
    )
    return ["", note, "", *md_table(headers, rows), *_storage_table(p)]


def _storage_table(p: Payload) -> list[str]:
    """What the rows weighed in PostgreSQL once the store was ready: for runs that read it."""
    points = [(run, pt) for run in p["runs"] for pt in run["points"] if pt.get("storage")]
    if not points:
        return []
    rows = [storage_row(run["store"], pt["size"], pt["storage"]) for run, pt in points]
    note = (
        "Storage once the store was ready: the records table (heap and TOAST) and its "
        "indexes whole, per row of the table; the namespace's approximate index per row of "
        "the namespace."
    )
    return ["", note, "", *md_table(STORAGE_HEADERS, rows)]


def recall_command(p: Payload, out: str) -> str:
    stores = [run["store"] for run in p["runs"]]
    return " ".join(
        [
            "memstack bench recall",
            f"--stores {','.join(stores)}",
            f"--sizes {','.join(str(s) for s in p['sizes'])}",
            f"--shape {p['shape']}",
            f"--queries {p['queries']} --writes {p['writes']}",
            f"--embedder {_embedder(p['embedder'])} --seed {p['seed']}",
            *_postgres(stores),
            f"--out {shlex.quote(out)}",
        ]
    )


def ingest_tables(p: Payload) -> list[str]:
    headline = (
        f"Embedder `{p['embedder']}`, batches of {p['batch']}; memories/s. The floor is the "
        "embedder alone on the same texts: ratio = rate / embedder alone (1.0: no overhead)."
    )
    headers: tuple[str, ...] = (
        "store",
        "texts",
        "n",
        "chars",
        "remember/s",
        "remember_many/s",
        "embed/s",
    )
    headers += ("ratio", "remember_turns/s", "embed turns/s", "ratio", "upsert/s")
    fields: tuple[str, ...] = ("texts", "n", "mean_chars", "remember_per_s", "remember_many_per_s")
    fields += ("embed_per_s", "remember_many_to_embed", "remember_turns_per_s")
    fields += ("turns_embed_per_s", "remember_turns_to_embed", "upsert_per_s")
    rows = [
        [store, *(r.get(f) for f in fields)]
        for store, runs in _ingest_stores(p).items()
        for r in runs
    ]
    return [headline, "", *md_table(headers, rows)]


def _ingest_stores(p: Payload) -> Mapping[str, Sequence[Payload]]:
    """Runs per store; files written before ``stores`` was added hold SQLite's only."""
    stores: Mapping[str, Sequence[Payload]] = p.get("stores") or {"sqlite": p["runs"]}
    return stores


def ingest_command(p: Payload, out: str) -> str:
    texts = sorted({r["texts"] for r in p["runs"]})
    stores = list(_ingest_stores(p))
    return " ".join(
        [
            "memstack bench ingest",
            f"--texts {'both' if len(texts) > 1 else texts[0]}",
            f"--n {max(r['n'] for r in p['runs'])} --batch {p['batch']}",
            f"--embedder {_embedder(p['embedder'])}",
            f"--stores {','.join(stores)}",
            *_postgres(stores),
            f"--out {shlex.quote(out)}",
        ]
    )


def server_tables(p: Payload) -> list[str]:
    """One run's tables; a comparison of configurations (``--workers 1,2``, with and
    without standbys) first sets the runs side by side, as ratios to the first, with
    what each saturated, then gives each run's tables."""
    if "comparison" not in p:
        return _server_run(p)
    rows = p["comparison"]
    extended = all("p99_ms" in row for row in rows)
    headers: tuple[str, ...] = ("configuration" if extended else "workers",)
    headers += ("requests", "errors", "requests/s", "p95 ms")
    headers += ("p99 ms",) if extended else ()
    headers += ("server CPU ms/request", "floor CPU ms/request", "requests/s ratio")
    headers += ("p99 ratio",) if extended else ()
    headers += ("CPU/request ratio",)
    headers += ("saturates first", "machine utilization") if extended else ()
    fields: tuple[str, ...] = ("configuration" if extended else "workers",)
    fields += ("requests", "errors", "requests_per_s", "p95_ms")
    fields += ("p99_ms",) if extended else ()
    fields += ("server_cpu_ms_per_request", "floor_cpu_ms_per_request", "requests_per_s_ratio")
    fields += ("p99_ratio",) if extended else ()
    fields += ("cpu_per_request_ratio",)
    fields += ("saturates_first", "machine_utilization") if extended else ()
    lines = md_table(headers, [[row.get(f) for f in fields] for row in rows])
    for run, row in zip(p["runs"], rows, strict=True):
        named = row.get("configuration") or f"{run['workers']} workers"
        lines += ["", f"With {named}:", "", *_server_run(run)]
    return lines


def _server_run(p: Payload) -> list[str]:
    shape = [f for f in ("store", "workers", "short_term") if f in p]
    totals = ("mode", *shape, "clients", "seconds", "requests", "errors", "requests/s")
    first = [p.get("mode"), *(p[f] for f in shape), p["clients"], p["seconds"], p["requests"]]
    first += [p["errors"], p["requests_per_s"]]
    cpu: tuple[str, ...] = (
        "server CPU ms/request",
        "floor CPU ms/request",
        "ratio",
        "load generator CPU ms",
    )
    cpu += ("cores", "bound requests/s")
    second = [p["server_cpu_ms_per_request"], p["floor_cpu_ms_per_request"], p["cpu_ratio"]]
    second += [p["client_cpu_ms_per_request"], p["cores"], p["requests_per_s_bound"]]
    ops = ("operation", "count", "p50 ms", "p95 ms", "p99 ms", "floor CPU ms")
    by_op = [
        [op, s["count"], s["p50"], s["p95"], s["p99"], s.get("floor_cpu_ms")]
        for op, s in sorted(p["by_operation"].items())
    ]
    overall = p["latency_ms"]
    by_op.append(["all", p["requests"], overall["p50"], overall["p95"], overall["p99"], None])
    tables = [md_table(totals, [first]), md_table(cpu, [second]), md_table(ops, by_op)]
    tables += [_saturation(p["saturation"])] if "saturation" in p else []
    return [line for table in tables for line in [*table, ""]][:-1]


def _saturation(found: Payload) -> list[str]:
    """The CPU each part of the deployment used during the load, and which led."""
    lead = f"Saturates first: {found['saturates_first']}; the machine at "
    lead += f"{found['machine_utilization']} of its cores."
    return [*md_table(SATURATION_HEADERS, saturation_rows(found)), "", lead]


def server_command(p: Payload, out: str) -> str:
    run = p["runs"][0] if "comparison" in p else p
    parts = ["memstack bench server"]
    if run.get("mode") == "url":
        parts.append("--url URL --api-key KEY")
        parts += ["--server-pid PID"] if run.get("server_cpu_ms_per_request") else []
    parts += ["--postgres-url URL"] if run.get("store") == "postgres" else []
    parts += ["--postgres-read-url URL"] * int(p.get("replicas", 0) or 0)
    parts += ["--redis-url URL"] if run.get("short_term") == "redis" else []
    workers = p["workers"] if "comparison" in p else [run.get("workers", 1)]
    parts += [f"--workers {','.join(str(w) for w in workers)}"] if workers != [1] else []
    parts.append(f"--clients {run['clients']} --duration {round(run['seconds'])}")
    mix = run.get("mix") or {}
    if mix:
        parts.append(f"--mix {','.join(num(mix[k]) for k in ('store', 'search', 'list'))}")
    parts.append(f"--embedder {_embedder(str(run.get('embedder', 'local')))}")
    parts += ["--durable"] if run.get("durable") else []
    parts += [f"--label {shlex.quote(p['label'])}"] if p.get("label") else []
    return " ".join([*parts, f"--out {shlex.quote(out)}"])


def locomo_tables(p: Payload) -> list[str]:
    rows: dict[str, Mapping[str, Any]] = {"memstack": p["overall"]}
    rows |= {name: b["overall"] for name, b in sorted(p["baselines"].items())}
    rows |= {f"category {c}": m for c, m in sorted(p["per_category"].items())}
    rows |= {switched(n): a["overall"] for n, a in sorted(p["ablations"].items())}
    rows |= {f"checked on {n}": h["overall"] for n, h in sorted(p["halves"].items())}
    metrics = md_table(
        ("retrieval", *METRIC_NAMES),
        [[name, *(m.get(k) for k in METRIC_NAMES)] for name, m in rows.items()],
    )
    recall, embed = p["recall_ms"], p["embed_ms"]
    latency = md_table(
        ("recall p50 ms", "recall p95 ms", "query embedding p50 ms", "ratio p50", "ingest/s"),
        [[recall["p50"], recall["p95"], embed["p50"], p["recall_over_embed"], p["ingest_per_s"]]],
    )
    headline = (
        f"{p['questions']} questions, store {p['store']}, embedder `{p['embedder']}`; "
        "categories 1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop."
    )
    floor = "Latency against its floor, the query's embedding alone:"
    remote = _remote_tables(p["remote"]) if p.get("remote") else []
    via_mem0 = _mem0_tables(p["via_mem0"]) if p.get("via_mem0") else []
    return [headline, "", *metrics, "", floor, "", *latency, *remote, *via_mem0]


def _remote_tables(r: Payload) -> list[str]:
    """The same run through the REST API (``--url``), beside the one in process."""
    same = r["identical_rankings"]
    quality = md_table(
        ("through REST", *METRIC_NAMES, "identical rankings"),
        [
            [
                "REST",
                *(r["overall"].get(k) for k in METRIC_NAMES),
                f"{same['identical']} of {same['compared']}",
            ]
        ],
    )
    recall, here = r["recall_ms"], r["inprocess_recall_ms"]
    latency = md_table(
        ("recall p50 ms, REST", "in process", "overhead ms", "ratio", "REST p95", "in process p95"),
        [
            [
                recall["p50"],
                here["p50"],
                r["overhead_ms"],
                r["overhead_ratio"],
                recall["p95"],
                here["p95"],
            ]
        ],
    )
    ingest = md_table(
        ("ingest turns/s, REST", "in process", "embedder alone", "REST / embedder alone"),
        [
            [
                r["ingest_per_s"],
                r["inprocess_ingest_per_s"],
                r["embed_alone_per_s"],
                r["ingest_over_embed"],
            ]
        ],
    )
    said = (
        f"The same questions through the REST API ({r['questions']} recalls, "
        f"{r['requests']} writes):"
    )
    return ["", said, "", *quality, "", *latency, "", *ingest]


def _mem0_tables(r: Payload) -> list[str]:
    """The same run through mem0's Python client (``--via mem0``), beside the one in
    process, and what mem0's calls cost beyond memstack's client on the same server."""
    same, held = r["identical_rankings"], r["same_results"]
    quality = md_table(
        ("through mem0's client", *METRIC_NAMES, "identical rankings", "same ten turns"),
        [
            [
                "mem0 client",
                *(r["overall"].get(k) for k in METRIC_NAMES),
                f"{same['identical']} of {same['compared']}",
                f"{held['same']} of {held['compared']}",
            ]
        ],
    )
    calls = md_table(
        ("call", "mem0 p50 ms", "memstack p50 ms", "added ms", "ratio", "mem0 p95", "memstack p95"),
        [
            [
                name,
                r[f"{mine}_ms"]["p50"],
                r[f"{theirs}_ms"]["p50"],
                r[f"{mine}_added_ms"],
                r[f"{mine}_over_{theirs}"],
                r[f"{mine}_ms"]["p95"],
                r[f"{theirs}_ms"]["p95"],
            ]
            for name, mine, theirs in (
                ("search / recall", "search", "recall"),
                ("add / add_turns", "add", "add_turns"),
            )
        ],
    )
    said = (
        f"The same questions through mem0's Python client ({r['questions']} searches, "
        f"{r['requests']} adds), each call beside memstack's client on the same server:"
    )
    return ["", said, "", *quality, "", *calls]


def locomo_command(p: Payload, out: str) -> str:
    ablate = ",".join(sorted(p["ablations"]))
    remote = ["--url URL --api-key KEY"] if p.get("remote") else []
    remote = ["--url URL --via mem0 --api-key KEY"] if p.get("via_mem0") else remote
    folder = "@" in str(p["embedder"])  # a model folder's id: local:<folder>@<hash>
    return " ".join(
        [
            *(["MEMSTACK_LOCAL_MODEL=FOLDER"] if folder else []),
            f"memstack bench locomo --store {p['store']}",
            f"--embedder {_embedder(p['embedder'])}",
            *([f"--ablate {ablate}"] if ablate else []),
            *_postgres([p["store"]]),
            *remote,
            f"--out {shlex.quote(out)}",
        ]
    )


def calibrate_tables(p: Payload) -> list[str]:
    """The fitted constants, the cut at each threshold on both halves, and the chances
    beside what is observed on the half not fitted on."""
    halves, questions = p["halves"], p["questions"]
    headline = (
        f"The {p['k']} memories recalled for each question, store {p['store']}, embedder "
        f"`{p['embedder']}`; fitted on {', '.join(halves['tuned'])} ({questions['tuned']} "
        f"questions), checked on {', '.join(halves['other'])} ({questions['other']})."
    )
    names = ("intercept", "relevance", "coverage")
    constants = md_table(
        ("constants", *names, "log loss, second half"),
        [
            [name, *(p[name][k] for k in names), p["log_loss_other"][name]]
            for name in ("shipped", "fitted")
        ],
    )
    default = p["context_min_score"]
    cut = md_table(
        ("half", "min_score", "kept", "precision", "recall", "hit", "empty", "irrelevant"),
        [
            [
                r["half"],
                f"{num(r['min_score'])}{' (default)' if r['min_score'] == default else ''}",
                *(r[k] for k in ("kept", "precision", "recall", "hit", "empty", "irrelevant")),
            ]
            for r in p["thresholds"]
        ],
    )
    legend = (
        "kept: share of the recalled memories at or above min_score; precision: of those, "
        "the evidence; recall: of the evidence recalled, the share kept; hit: questions "
        "keeping some evidence; empty: questions keeping nothing; irrelevant: questions "
        "about another conversation keeping anything. Default threshold of the prompt "
        f"blocks: {num(default)}; picked on the first half: {num(p['picked_min_score'])} (the "
        f"lowest at which at most {num(p['irrelevant_at_most'])} of the questions about "
        "another conversation keep anything)."
    )
    bands = md_table(
        ("calibrated from", "to", "memories", "mean calibrated", "evidence observed"),
        [
            [r["from"], r["to"], r["memories"], r["predicted"], r["observed"]]
            for r in p["reliability_other"]
        ],
    )
    said = "On the second half, the chance given against the share of evidence observed:"
    return [headline, "", *constants, "", *cut, "", legend, "", said, "", *bands]


def calibrate_command(p: Payload, out: str) -> str:
    return (
        f"memstack bench calibrate --store {p['store']} --embedder {_embedder(p['embedder'])} "
        f"--out {shlex.quote(out)}"
    )


def updates_tables(p: Payload) -> list[str]:
    headline = (
        f"{p['conversations']} generated conversations, seed {p['seed']}, SQLite, embedder "
        f"`{p['embedder']}`; shares of questions whose top recalled memory is the gold one."
    )
    headers = ("mode", "current", "past", "overall", "hit@3", "recall p50 ms", "updates")
    fields = ("current", "past", "overall", "hit3", "recall_ms_p50")
    rows = [
        [name, *(m[f] for f in fields), f"{m['updates']}/{m['changes']}"]
        for name, m in p["modes"].items()
    ]
    return [headline, "", *md_table(headers, rows)]


def updates_command(p: Payload, out: str) -> str:
    return " ".join(
        [
            f"memstack bench updates --embedder {_embedder(p['embedder'])}",
            f"--conversations {p['conversations']} --seed {p['seed']}",
            f"--modes {','.join(p['modes'])}",
            f"--out {shlex.quote(out)}",
        ]
    )


def knowledge_tables(p: Payload) -> list[str]:
    headers = ["document MB", "answer", "passages", "ready s", "passages/s"]
    headers += ["/healthz max ms", "RSS before MB", "RSS peak MB", "growth / document"]
    fields = ("passages", "ready_s", "passages_per_s", "healthz_max_ms", "rss_before_mb")
    rows = [
        [
            r["document_mb"],
            f"{r['status_code']} in {r['answered_s']} s",
            *(r[f] for f in fields),
            r["rss_peak_mb"],
            r["rss_growth_to_document"],
        ]
        for r in p["runs"]
    ]
    return [f"A throwaway SQLite server, embedder `{p['embedder']}`.", "", *md_table(headers, rows)]


def knowledge_command(p: Payload, out: str) -> str:
    sizes = ",".join(f"{r['document_mb']:g}" for r in p["runs"])
    return (
        f"memstack bench knowledge --mb {sizes} --embedder {p['embedder']} --out {shlex.quote(out)}"
    )


def secrets_tables(p: Payload) -> list[str]:
    layers = md_table(
        ["layer", "us / write", "x own tiers"],
        [[r["layer"], r["us_per_write"], r["ratio"]] for r in p["layers"]],
    )
    worst = max(p["adversarial"], key=lambda r: r["ms"])
    lines = [
        f"{p['writes']:,} writes (LoCoMo turns), median of {p['rounds']} alternating rounds.",
        "",
        *layers,
        "",
        f"{len(p['adversarial'])} adversarial shapes of {num(p['megabytes'])} MiB each, "
        f"the slowest `{worst['shape']}` at {num(worst['ms'])} ms:",
        "",
        *md_table(
            ["shape", "ms", "kind"],
            [[r["shape"], r["ms"], r["kind"] or "-"] for r in p["adversarial"]],
        ),
    ]
    figures = p.get("figures")
    if figures:
        halves = [figures["tuned"], figures["held_out"]]
        rows = [
            [kind, *(f"{h['kinds'][kind]['flagged']}/{h['kinds'][kind]['n']}" for h in halves)]
            for kind in figures["tuned"]["kinds"]
        ]
        rows.append(["credentials caught", *(f"{h['caught']}/{h['credentials']}" for h in halves)])
        rows.append(["look-alikes refused", *(f"{h['refused']}/{h['lookalikes']}" for h in halves)])
        lines += ["", f"Corpus `{p['corpus']}`, flagged / items:", ""]
        lines += md_table(["kind", "tuned", "held out"], rows)
    return lines


def secrets_command(p: Payload, out: str) -> str:
    corpus = f" --corpus {shlex.quote(p['corpus'])}" if p.get("corpus") else ""
    return (
        f"memstack bench secrets --mb {num(p['megabytes'])} --rounds {p['rounds']}{corpus} "
        f"--out {shlex.quote(out)}"
    )


def ablation_tables(p: Payload) -> list[str]:
    headline = (
        "Each mechanism measured with and without it in alternating runs (medians of the "
        "runs' values, listed in the JSON). Gain = with / without, inverted where lower is "
        f"better; a mechanism is kept at a gain of at least {num(p['keep_at'])} on the figure "
        "it was built for (marked *)."
    )
    headers = ("mechanism", "bench", "figure", "with", "without", "gain", "kept")
    rows = [
        [
            r["mechanism"],
            r["bench"],
            f"{r['figure']}{' *' if r['built_for'] else ''}",
            r["median_with"],
            r["median_without"],
            r["gain"],
            kept(r),
        ]
        for r in p["rows"]
    ]
    decided = [f"- **{name}**: {text}" for name, text in p.get("decisions", {}).items()]
    return [headline, "", *md_table(headers, rows), *(["", *decided] if decided else [])]


def ablation_command(p: Payload, out: str) -> str:
    seen: dict[str, str] = {}
    for r in p["rows"]:
        if r["built_for"]:
            spec = f"{r['mechanism']}={r['bench']}:{r['with']}/{r['without']}:{r['figure']}"
            seen[r["mechanism"]] = f"--compare {shlex.quote(spec)}"
    return " ".join(
        ["memstack bench ablation RUNS...", *seen.values(), f"--out {shlex.quote(out)}"]
    )


def catalog_tables(p: Payload) -> list[str]:
    lines = [catalog_headline(p)]
    for headers, rows in catalog_figures(p):
        lines += ["", *md_table(headers, rows)]
    return lines


def catalog_command(p: Payload, out: str) -> str:
    counts = ",".join(str(c) for c in p["counts"])
    return (
        f"memstack bench catalog --postgres-url URL --namespaces {counts} --rows {p['rows']} "
        f"--repeats {p['repeats']} --out {shlex.quote(out)}"
    )


KINDS: Final = (
    Kind(
        name="recall",
        title="Recall latency against stored memories",
        about="Hybrid recall p50/p95 as the number of stored memories grows, beside its "
        "floor (the query's embedding plus an exact numpy scan of the namespace).",
        keys=frozenset({"floor_k", "sizes", "runs", "shape"}),
        tables=recall_tables,
        command=recall_command,
    ),
    Kind(
        name="ingest",
        title="Ingest rate",
        about="Memories per second through remember, remember_many, remember_turns and "
        "upsert, beside the embedder alone on the same texts.",
        keys=frozenset({"batch", "runs", "embedder"}),
        tables=ingest_tables,
        command=ingest_command,
    ),
    Kind(
        name="server",
        title="Server under load",
        about="Requests/s and p50/p95/p99 per operation under concurrent HTTP clients, and "
        "the server's CPU per request beside the same calls in process (the floor).",
        keys=frozenset({"by_operation", "requests_per_s", "latency_ms"}),
        tables=server_tables,
        command=server_command,
    ),
    Kind(
        name="locomo",
        title="LoCoMo retrieval quality",
        about="Recall quality of long-term memory on LoCoMo conversations (R@k, Hit@k, MRR), "
        "beside plain BM25 and pure vector search.",
        keys=frozenset({"overall", "per_category", "baselines"}),
        tables=locomo_tables,
        command=locomo_command,
    ),
    Kind(
        name="calibrate",
        title="Calibrated relevance (min_score)",
        about="The calibrated relevance that min_score cuts at, fitted on the first half of "
        "LoCoMo and checked on the second: at each threshold, the precision and recall of "
        "'this memory holds evidence for the question', and how often a question about "
        "another conversation keeps anything.",
        keys=frozenset({"shipped", "fitted", "thresholds"}),
        tables=calibrate_tables,
        command=calibrate_command,
    ),
    Kind(
        name="updates",
        title="Changed facts",
        about="Whether the top recalled memory is a fact's current value (and, with as_of, "
        "the value valid then) on generated conversations whose facts change.",
        keys=frozenset({"modes", "conversations"}),
        tables=updates_tables,
        command=updates_command,
    ),
    Kind(
        name="knowledge",
        title="Large knowledge documents",
        about="One document a size posted to a server and followed to ready: the answer "
        "(202 for a large one), passages/s, /healthz meanwhile, and the server's RSS growth "
        "as a multiple of the document's size.",
        keys=frozenset({"runs", "embedder", "benchmark"}),
        tables=knowledge_tables,
        command=knowledge_command,
    ),
    Kind(
        name="secrets",
        title="The secret filter's cost and reach",
        about="What the one secret filter costs a write, layer by layer in alternating "
        "rounds (ratio to memstack's own tiers, the filter before issue 43), how long a "
        "megabyte of each adversarial shape takes, and what it catches of a corpus, per kind "
        "and per half (tuned on one, measured on both).",
        keys=frozenset({"layers", "adversarial"}),
        tables=secrets_tables,
        command=secrets_command,
    ),
    Kind(
        name="ablation",
        title="Ablations: what each mechanism buys",
        about="Each mechanism beyond the plain design measured end to end with and without "
        "it, in alternating runs on one machine at one time; kept only where it buys at least "
        "10% on the figure it was built for.",
        keys=frozenset({"keep_at", "rows", "runs"}),
        tables=ablation_tables,
        command=ablation_command,
    ),
    Kind(
        name="catalog",
        title="One partial index per large namespace: the catalog at scale",
        about="PostgreSQL gives each namespace past exact_limit an IVFFlat index of its own, "
        "partial on the namespace. As the count of such indexes grows: the catalog's size, the "
        "planning and execution time of memstack's recall query on one namespace (and whether "
        "it still reads that namespace's index), a fresh connection's first query, the build "
        "of one more index, inserts/s and ANALYZE, with ratios to the smallest count.",
        keys=frozenset({"benchmark", "steps", "counts"}),
        tables=catalog_tables,
        command=catalog_command,
    ),
)
