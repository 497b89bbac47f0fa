"""``memstack bench report``: the benchmarks document, written from the benchmarks' JSON.

Every ``*.json`` under the results folder is read in path order and recognised by its
``benchmark`` field (or, for files written before it, by the keys its kind always has);
each kind gets a section from ``bench.docs_kinds``. Files that are not recognised are
listed, not dropped. Nothing depends on the clock or the machine, so the same files give
byte-identical markdown, which a test compares with the committed document.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from memstack.bench.docs_kinds import KINDS, Kind

__all__ = ["DEFAULT_OUT", "DEFAULT_RESULTS", "Result", "detect_kind", "read_results", "render"]

DEFAULT_RESULTS: Final = Path("bench-results")
DEFAULT_OUT: Final = Path("docs/benchmarks.md")
_BY_NAME: Final = {kind.name: kind for kind in KINDS}


@dataclass(frozen=True, kw_only=True)
class Result:
    """One JSON file: its path, its contents, and the kind it was recognised as (None
    with the reason when it was not)."""

    path: Path
    name: str
    """The path under the results folder, with ``/``: what the document sorts and shows."""
    payload: Mapping[str, Any]
    kind: Kind | None
    problem: str = ""


def detect_kind(payload: Mapping[str, Any]) -> tuple[Kind | None, str]:
    """The kind that wrote ``payload``, or None and why not."""
    named = payload.get("benchmark")
    if named is not None:
        kind = _BY_NAME.get(str(named))
        return (kind, "") if kind else (None, f"unknown benchmark {named!r}")
    matches = [kind for kind in KINDS if kind.keys <= payload.keys()]
    if len(matches) == 1:
        return matches[0], ""
    return None, "no benchmark field, and its keys match no known benchmark"


def read_results(folder: Path) -> list[Result]:
    """Every ``*.json`` under ``folder`` (recursively), sorted by path."""
    results = []
    for path in sorted(folder.rglob("*.json"), key=lambda p: p.relative_to(folder).as_posix()):
        name = path.relative_to(folder).as_posix()
        try:
            payload = json.loads(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            results.append(Result(path=path, name=name, payload={}, kind=None, problem=str(exc)))
            continue
        if not isinstance(payload, dict):
            problem = f"a JSON {type(payload).__name__}, not an object"
            results.append(Result(path=path, name=name, payload={}, kind=None, problem=problem))
            continue
        kind, problem = detect_kind(payload)
        results.append(Result(path=path, name=name, payload=payload, kind=kind, problem=problem))
    return results


@dataclass(frozen=True, kw_only=True)
class _Place:
    """Where the document goes and what paths in it are shown relative to."""

    out: Path
    root: Path
    """The folder the command is run from (the repository root): commands name paths
    relative to it."""

    def link(self, path: Path) -> str:
        """``path`` relative to the document, for a markdown link."""
        return Path(os.path.relpath(path.resolve(), self.out.resolve().parent)).as_posix()

    def shown(self, path: Path) -> str:
        """``path`` as a command run from ``root`` names it."""
        absolute = path.resolve()
        if absolute.is_relative_to(self.root.resolve()):
            return absolute.relative_to(self.root.resolve()).as_posix()
        return absolute.as_posix()


def render(results: Sequence[Result], *, folder: Path, out: Path, root: Path) -> str:
    """The markdown document: intro, one section per kind present, the unrecognised files."""
    place = _Place(out=out, root=root)
    results = sorted(results, key=lambda r: r.name)
    lines = _intro(place, folder)
    unknown = [r for r in results if r.kind is None]
    for kind in KINDS:
        mine = [r for r in results if r.kind is kind]
        if mine:
            section, failed = _section(kind, mine, place)
            lines += section
            unknown += failed
    missing = [k for k in KINDS if not any(r.kind is k for r in results)]
    if missing:
        names = ", ".join(f"`memstack bench {k.name}`" for k in missing)
        where = place.shown(folder)
        lines += ["## Not run yet", "", f"No results under `{where}/` yet from {names}.", ""]
    if unknown:
        lines += ["## Files not recognised", ""]
        for r in sorted(unknown, key=lambda r: r.name):
            lines.append(f"- [{r.name}]({place.link(r.path)}): {r.problem}")
        lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"


def _intro(place: _Place, folder: Path) -> list[str]:
    results, out = place.shown(folder), place.shown(place.out)
    command = "memstack bench report"
    if results != DEFAULT_RESULTS.as_posix():
        command += f" --results {results}"
    if out != DEFAULT_OUT.as_posix():
        command += f" --out {out}"
    return [
        "# Benchmarks",
        "",
        f"Generated by `memstack bench report` from the JSON files under `{results}/`: do "
        "not edit by hand. Each benchmark writes its JSON with `--out` (and a PNG plot "
        f"beside it where it has one); to regenerate this page, run `{command}` from the "
        "repository root. A test fails when this page differs from what that command writes.",
        "",
    ]


def _section(
    kind: Kind, results: Sequence[Result], place: _Place
) -> tuple[list[str], list[Result]]:
    """A kind's section, and the files that turned out not to have its shape."""
    notes = next((str(r.payload["notes"]) for r in results if r.payload.get("notes")), "")
    lines = [f"## {kind.title} (`memstack bench {kind.name}`)", "", kind.about, ""]
    lines += [notes, ""] if notes else []
    failed = []
    for result in results:
        try:
            body = _file(kind, result, place, shared_notes=notes)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            why = f"field {exc.args[0]!r} is missing" if isinstance(exc, KeyError) else repr(exc)
            problem = f"looks like `{kind.name}` output but cannot be read as it: {why}"
            failed.append(
                Result(path=result.path, name=result.name, payload={}, kind=None, problem=problem)
            )
            continue
        lines += body
    return lines, failed


def _file(kind: Kind, result: Result, place: _Place, *, shared_notes: str) -> list[str]:
    lines = [f"### [{result.name}]({place.link(result.path)})", ""]
    lines += ["```sh", kind.command(result.payload, place.shown(result.path)), "```", ""]
    notes = str(result.payload.get("notes") or "")
    lines += [notes, ""] if notes and notes != shared_notes else []
    lines += [*kind.tables(result.payload), ""]
    png = result.path.with_suffix(".png")
    if png.is_file():
        lines += [f"![{png.name}]({place.link(png)})", ""]
    return lines
