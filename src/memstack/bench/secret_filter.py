"""``memstack bench secrets``: what the secret filter costs a write and on adversarial
input, layer by layer, and (with a corpus) what it catches.

Per write: every LoCoMo turn, as the benchmark stores it, through the filter's layers in
alternating rounds: memstack's own tiers (the filter before issue 43), then with the prose
and payment tiers, then with gitleaks' rules, then whole (with decoding). The median round
of each layer, per write, and its ratio to the first: the cost of each layer in the same
run. Adversarial: megabytes of each shape in ``ADVERSARIAL`` through the whole filter.
Corpus: a Python file holding ``CREDENTIALS`` and ``LOOKALIKES`` (kind -> texts) and
``halves``, such as ``tests/security/fresh_corpus.py``: caught and refused per kind and per half.
"""

from __future__ import annotations

import base64
import importlib.util
import statistics
import time
import tomllib
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Final

from memstack.bench.report import format_table, ratio
from memstack.secret_rules import rules_text

__all__ = [
    "ADVERSARIAL",
    "LAYERS",
    "adversarial_runs",
    "corpus_figures",
    "corpus_table",
    "cost_table",
    "load_corpus",
    "write_costs",
]

MB: Final = 1 << 20


def _fill(unit: str, size: int, prefix: str = "") -> str:
    return prefix + unit * ((size - len(prefix)) // len(unit))


def _keywords() -> str:
    config = tomllib.loads(rules_text().decode())
    return " ".join(sorted({k for r in config["rules"] for k in r.get("keywords", ())})) + " "


ADVERSARIAL: Final[dict[str, Callable[[int], str]]] = {
    "a-": lambda n: _fill("a-", n),  # the old jwt_like pattern's quadratic case
    "a.": lambda n: _fill("a.", n),
    "A": lambda n: _fill("A", n),
    "x=": lambda n: _fill("x=", n),
    "sk- repeated": lambda n: _fill("sk-", n),
    "eyJ and dots": lambda n: _fill("eyJ.", n),
    "eyJ segments": lambda n: _fill("eyJabcdef.", n),
    "spaces after password": lambda n: "password" + " " * n + "is",
    "url userinfo": lambda n: "x://" + "a" * (n // 2) + ":" + "b" * (n // 2),
    "bearer padding": lambda n: "Bearer " + "=" * n,
    "harmless assignments": lambda n: _fill("password=changeme ", n),
    "harmless headers": lambda n: _fill("Authorization: " + "a" * 300 + " ", n),
    "random base64ish": lambda n: "".join(chr(33 + (i * 7919) % 94) for i in range(n)),
    "pypi- repeated": lambda n: _fill("pypi-", n),
    "pypi-Ag repeated": lambda n: _fill("pypi-Ag", n),
    "AC and hex repeated": lambda n: _fill("AC" + "0123456789abcdef", n),
    "AC and 31 hex repeated": lambda n: _fill("AC" + "a" * 31 + " ", n),
    "dop_v1_ repeated": lambda n: _fill("dop_v1_", n),
    "telegram id repeated": lambda n: _fill("123456789:A", n),
    ":APA91b repeated": lambda n: _fill(":APA91b", n),
    "EAAA repeated": lambda n: _fill("EAAA ", n),
    ".atlasv1. repeated": lambda n: _fill(".atlasv1.", n),
    "dotted segments": lambda n: _fill("a" * 20 + ".", n),
    "password= repeated": lambda n: _fill("password=", n),
    "password= and spaces": lambda n: _fill("password= ", n),
    "spaces before the operator": lambda n: "password" + " " * n + "=x",
    "identifier before the noun": lambda n: _fill("a_", n) + "password=x",
    "prose words": lambda n: _fill("word ", n),
    "non-credential keys": lambda n: _fill("S3 key: reports/2024/q3/summary.csv ", n),
    "placeholders": lambda n: _fill("token=${GITHUB_TOKEN} ", n),
    # issue 43: the prose, payment, decoding and rule-set layers
    "password and gap words": lambda n: _fill("password for the office at the ", n),
    "code words and digits": lambda n: _fill("verification code 12 ", n),
    "token and long words": lambda n: _fill("token configurationmanagement ", n),
    "digits": lambda n: _fill("4", n),
    "digits in groups": lambda n: _fill("4111 ", n),
    "iban-like": lambda n: _fill("GB82 WEST ", n),
    "base64 of prose": lambda n: base64.b64encode(
        _fill("password is ", n * 3 // 4).encode()
    ).decode(),
    "percent escapes": lambda n: _fill("%41", n),
    "runs that could be base64 text": lambda n: _fill("IAAAIAAAIAAAIAAA ", n),
    "every gitleaks keyword": lambda n: _fill(_keywords(), n),
    "escaped quotes, three levels": lambda n: _fill('\\\\\\"pwd\\\\\\": \\\\\\"x\\\\\\" ', n),
    "backslashes": lambda n: _fill("\\", n),
    "backslashes and control bytes": lambda n: _fill("\\", n, "".join(map(chr, range(32)))),
}
"""Shapes that would make a backtracking or a quadratic scan slow, by size in bytes."""


def _own(text: str) -> object:
    from memstack.secrets import _TIERS

    data = text.encode("utf-8", "surrogatepass")
    budget = 512
    for tier in _TIERS[:3]:
        kind, budget = tier.first(data, budget)
        if kind is not None:
            return kind
    return None


def _with_prose(text: str) -> object:
    from memstack.secrets import _TIERS

    data = text.encode("utf-8", "surrogatepass")
    budget = 512
    for tier in _TIERS:
        kind, budget = tier.first(data, budget)
        if kind is not None:
            return kind
    return None


def _with_rules(text: str) -> object:
    from memstack.secrets import _kind

    return _kind(text.encode("utf-8", "surrogatepass"))


def _whole(text: str) -> object:
    from memstack.secrets import secret_kind

    return secret_kind(text)


LAYERS: Final[dict[str, Callable[[str], object]]] = {
    "own tiers (before issue 43)": _own,
    "+ prose and payment tiers": _with_prose,
    "+ gitleaks rules": _with_rules,
    "whole filter (+ decoding)": _whole,
}


def write_costs(texts: Sequence[str], rounds: int = 5) -> list[dict[str, Any]]:
    """Per layer: the median round's microseconds a write, and its ratio to the first."""
    times: dict[str, list[float]] = defaultdict(list)
    for _ in range(rounds):
        for name, layer in LAYERS.items():  # alternating: each round runs every layer
            started = time.perf_counter()
            for text in texts:
                layer(text)
            times[name].append((time.perf_counter() - started) / len(texts) * 1e6)
    floor = statistics.median(times[next(iter(LAYERS))])
    return [
        {
            "layer": name,
            "us_per_write": round(statistics.median(runs), 2),
            "ratio": ratio(statistics.median(runs), floor),
        }
        for name, runs in times.items()
    ]


def adversarial_runs(size: int, rounds: int = 3) -> list[dict[str, Any]]:
    """Each shape of ``size`` bytes through the whole filter: the median of ``rounds``."""
    from memstack.secrets import secret_kind

    runs = []
    for name, make in ADVERSARIAL.items():
        text = make(size)
        secret_kind(text[:1000])  # first-use costs are not the figure
        elapsed = []
        for _ in range(rounds):
            started = time.perf_counter()
            kind = secret_kind(text)
            elapsed.append(time.perf_counter() - started)
        runs.append(
            {
                "shape": name,
                "bytes": len(text.encode("utf-8")),
                "ms": round(statistics.median(elapsed) * 1000, 2),
                "kind": kind,
            }
        )
    return runs


def load_corpus(path: Path) -> Any:
    """The corpus module at ``path`` (a Python file defining ``CREDENTIALS``,
    ``LOOKALIKES`` and ``halves``)."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"{path} is not a Python file")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for name in ("CREDENTIALS", "LOOKALIKES", "halves"):
        if not hasattr(module, name):
            raise ImportError(f"{path} defines no {name}")
    return module


def corpus_figures(path: Path) -> dict[str, Any]:
    """Per half of the corpus at ``path``: credentials caught and look-alikes refused,
    in all and per kind, and the items that went wrong (credentials by kind and their
    first characters; never a whole value)."""
    from memstack.secrets import secret_kind

    corpus = load_corpus(path)
    out: dict[str, Any] = {}
    for half in ("tuned", "held_out"):
        kinds: dict[str, dict[str, int]] = defaultdict(lambda: {"n": 0, "flagged": 0})
        wrong: list[str] = []
        for role, cases in (("credential", corpus.CREDENTIALS), ("lookalike", corpus.LOOKALIKES)):
            for kind, text in corpus.halves(cases)[half]:
                row = kinds[f"{role}: {kind}"]
                row["n"] += 1
                found = secret_kind(text)
                row["flagged"] += found is not None
                if (found is None) == (role == "credential"):
                    wrong.append(f"{role} {kind}: {text[:24]!r}... -> {found}")
        creds = [r for k, r in kinds.items() if k.startswith("credential")]
        looks = [r for k, r in kinds.items() if k.startswith("lookalike")]
        out[half] = {
            "credentials": sum(r["n"] for r in creds),
            "caught": sum(r["flagged"] for r in creds),
            "lookalikes": sum(r["n"] for r in looks),
            "refused": sum(r["flagged"] for r in looks),
            "kinds": dict(kinds),
            "wrong": wrong,
        }
    return out


def cost_table(writes: Sequence[dict[str, Any]], adversarial: Sequence[dict[str, Any]]) -> str:
    first = format_table(
        ["layer", "us/write", "x own tiers"],
        [[w["layer"], w["us_per_write"], w["ratio"]] for w in writes],
    )
    second = format_table(
        ["adversarial shape", "bytes", "ms", "kind"],
        [[a["shape"], a["bytes"], a["ms"], a["kind"] or "-"] for a in adversarial],
    )
    return f"{first}\n\n{second}"


def corpus_table(figures: dict[str, Any]) -> str:
    halves = [figures["tuned"], figures["held_out"]]
    rows = [
        [kind, *(f"{h['kinds'][kind]['flagged']}/{h['kinds'][kind]['n']}" for h in halves)]
        for kind in figures["tuned"]["kinds"]
    ]
    rows.append(["credentials caught", *(f"{h['caught']}/{h['credentials']}" for h in halves)])
    rows.append(["look-alikes refused", *(f"{h['refused']}/{h['lookalikes']}" for h in halves)])
    return format_table(["kind (flagged/n)", "tuned", "held out"], rows)
