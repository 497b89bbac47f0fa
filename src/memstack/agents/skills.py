"""Skills: SKILL.md files whose instructions join an agent's system prompt.

A skill is a directory holding a ``SKILL.md``: front matter with a ``name`` and a
``description``, then the instructions::

    ---
    name: data-analysis
    description: Analyze CSV datasets and produce summary statistics
    ---
    When working with data analysis tasks: ...

Discovery searches, in order: the caller's ``skill_dirs``, the paths in
``MEMSTACK_AGENT_SKILL_DIRS`` (``os.pathsep``-separated), ``./.claude/skills``,
``~/.claude/skills`` and ``~/.codex/skills``. In each, a directory with a ``SKILL.md``
is a skill (the searched directory itself included); other subdirectories are
searched a few levels down, so skills may be grouped in folders. The first skill
found under a name wins, so earlier directories shadow later ones.

Resolution: explicit names (the ``skills`` argument, else ``MEMSTACK_AGENT_SKILLS=a,b``)
load exactly those skills, and a name that is not found raises ``InvalidInput``
listing the available ones. Without explicit names, skills are chosen by matching
the objective's words against each skill's description and name (stop words and
words shorter than four letters ignored); ``MEMSTACK_AGENT_AUTO_SKILLS=0`` turns that
off.

A ``SKILL.md`` that cannot be used (malformed front matter, a missing name or
description, no instructions, too large, not UTF-8) is skipped, not fatal: one broken
file in ``~/.claude/skills`` must not stop every agent. The reasons are kept as
``SkillProblem``s by ``scan_skills``, and asking for a broken skill by name raises
``InvalidInput`` with its file and what is wrong with it.

The front matter is read without a YAML library: ``key: value`` lines, values plain
or quoted, indented continuation lines, and ``>``/``|`` block values. Other keys
(``license``, ``allowed-tools``, ``metadata``...) are accepted and ignored.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from memstack._env import setting
from memstack.errors import InvalidInput

__all__ = [
    "AUTO_SKILLS_ENV",
    "MAX_SKILL_BYTES",
    "SKILLS_ENV",
    "SKILL_DIRS_ENV",
    "Skill",
    "SkillProblem",
    "SkillScan",
    "discover_skills",
    "load_skill",
    "render_skills",
    "scan_skills",
    "select_skills",
    "skill_search_dirs",
    "skills_for_run",
    "skills_section",
]

SKILL_FILE: Final = "SKILL.md"
SKILL_DIRS_ENV: Final = "MEMSTACK_AGENT_SKILL_DIRS"
SKILLS_ENV: Final = "MEMSTACK_AGENT_SKILLS"
AUTO_SKILLS_ENV: Final = "MEMSTACK_AGENT_AUTO_SKILLS"
MAX_SKILL_BYTES: Final = 256 * 1024
MAX_NAME_CHARS: Final = 64
MAX_DESCRIPTION_CHARS: Final = 1024
MAX_SEARCH_DEPTH: Final = 3
"""How many directory levels below a search directory are looked at."""
MIN_WORD_CHARS: Final = 4

_NAME = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
_XML_TAG = re.compile(r"<[^>]+>")
_WORD = re.compile(r"[a-z0-9]+")
_FALSE = frozenset({"0", "false", "no", "off"})
_BLOCK = re.compile(r"^[>|][+-]?$")
_STOP_WORDS: Final = frozenset(
    """
    about above after again against also because been before being below between both
    cannot could does doing done down during each either every from further have having
    here into just like make many more most much must need only other over please same
    should some such than that their them then there these they this those through under
    until upon using very want were what when where which while will with within without
    would your yours task tasks help thing things
    """.split()
)

RENDER_HEADER: Final = (
    "# Agent Skills\nUse these Skill instructions when relevant to the objective:"
)


@dataclass(frozen=True, kw_only=True)
class Skill:
    name: str
    description: str
    instructions: str
    path: Path
    """The SKILL.md the skill was read from."""


@dataclass(frozen=True, kw_only=True)
class SkillProblem:
    """A SKILL.md (or a search directory) that could not be used, and why."""

    path: Path
    reason: str
    name: str | None = None
    """The skill's name as far as it is known: its front matter ``name``, else its
    directory's name."""


@dataclass(frozen=True, kw_only=True)
class SkillScan:
    skills: tuple[Skill, ...]
    problems: tuple[SkillProblem, ...]


class _Malformed(Exception):
    def __init__(self, reason: str, name: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.name = name


# -- reading one SKILL.md -------------------------------------------------------------


def load_skill(path: Path) -> Skill:
    """The skill in the SKILL.md at ``path``; ``InvalidInput`` names the file and the fault."""
    try:
        return _load(path)
    except _Malformed as exc:
        raise InvalidInput(f"{path}: {exc.reason}", field="skills") from None


def _load(path: Path) -> Skill:
    try:
        with path.open("rb") as file:
            data = file.read(MAX_SKILL_BYTES + 1)
    except OSError as exc:
        raise _Malformed(f"cannot be read ({exc.strerror or exc})") from None
    if len(data) > MAX_SKILL_BYTES:
        raise _Malformed(f"is larger than {MAX_SKILL_BYTES} bytes; shorten it")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise _Malformed("is not UTF-8 text") from None
    header, body = _split_front_matter(text)
    fields = _parse_front_matter(header)
    name = fields.get("name", "").strip()
    _check_name(name)
    description = " ".join(fields.get("description", "").split())
    _check_description(description, name)
    instructions = body.strip()
    if not instructions:
        raise _Malformed("has no instructions after the front matter", name)
    return Skill(name=name, description=description, instructions=instructions, path=path)


def _split_front_matter(text: str) -> tuple[list[str], str]:
    lines = text.splitlines()
    if not lines or lines[0].rstrip() != "---":
        raise _Malformed(
            "does not start with front matter: the first line must be '---', followed by "
            "'name: ...' and 'description: ...' lines and a closing '---'"
        )
    for index, line in enumerate(lines[1:], start=1):
        if line.rstrip() == "---":
            return lines[1:index], "\n".join(lines[index + 1 :])
    raise _Malformed("has front matter that is never closed: add a '---' line after it")


def _parse_front_matter(lines: list[str]) -> dict[str, str]:
    """``key: value`` pairs; indented lines continue the value of the key before them."""
    raw: dict[str, list[str]] = {}
    current: list[str] | None = None
    for number, line in enumerate(lines, start=2):
        if not line.strip() or line.startswith("#"):
            if current is not None:
                current.append("")
            continue
        if line[0] in " \t" or line.startswith("- "):
            if current is None:
                raise _Malformed(f"line {number}: an indented line must follow a 'key:' line")
            current.append(line.strip())
            continue
        key, colon, value = line.partition(":")
        if not colon or not key.strip():
            raise _Malformed(f"line {number}: expected 'key: value', got {line.strip()!r}")
        current = raw[key.strip()] = [value.strip()]
    return {key: _value(key, parts) for key, parts in raw.items()}


def _value(key: str, parts: list[str]) -> str:
    first, rest = parts[0], parts[1:]
    if _BLOCK.match(first):
        joiner = "\n" if first.startswith("|") else " "
        return joiner.join(rest).strip()
    text = " ".join(part for part in [first, *rest] if part)
    if text[:1] in ("'", '"'):
        return _unquote(key, text)
    comment = text.find(" #")
    return (text[:comment] if comment >= 0 else text).strip()


def _unquote(key: str, text: str) -> str:
    quote = text[0]
    if len(text) < 2 or not text.endswith(quote):
        raise _Malformed(f"the value of '{key}' opens a {quote} quote but does not close it")
    if quote == "'":
        return text[1:-1].replace("''", "'")
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        raise _Malformed(f"the double-quoted value of '{key}' has an invalid escape") from None
    return str(value)


def _check_name(name: str) -> None:
    if not name:
        raise _Malformed("has no 'name' in its front matter")
    if len(name) > MAX_NAME_CHARS or not _NAME.match(name):
        raise _Malformed(
            f"has an invalid name {name!r}: use at most {MAX_NAME_CHARS} lowercase letters, "
            "digits and single hyphens, e.g. 'data-analysis'",
            name,
        )


def _check_description(description: str, name: str) -> None:
    if not description:
        raise _Malformed("has no 'description' in its front matter", name)
    if len(description) > MAX_DESCRIPTION_CHARS:
        raise _Malformed(
            f"has a description longer than {MAX_DESCRIPTION_CHARS} characters; shorten it", name
        )
    if _XML_TAG.search(description):
        raise _Malformed("has XML tags in its description; remove them", name)


# -- discovery ------------------------------------------------------------------------


def skill_search_dirs(
    *, skill_dirs: Sequence[Path] = (), env: Mapping[str, str], cwd: Path, home: Path
) -> list[Path]:
    """The directories searched for skills, in order, without repeats.

    Relative directories are taken from ``cwd``; a leading ``~`` means ``home``.
    """
    defaults = [cwd / ".claude" / "skills", home / ".claude" / "skills", home / ".codex" / "skills"]
    listed = _listed_dirs(skill_dirs, env, cwd, home)
    return list(dict.fromkeys([*listed, *(_normal(d) for d in defaults)]))


def _listed_dirs(
    skill_dirs: Sequence[Path], env: Mapping[str, str], cwd: Path, home: Path
) -> list[Path]:
    """The directories the caller named: ``skill_dirs``, then ``MEMSTACK_AGENT_SKILL_DIRS``."""
    raw = setting(env, SKILL_DIRS_ENV)[1] or ""
    from_env = [part.strip() for part in raw.split(os.pathsep)]
    listed = [Path(d) for d in skill_dirs] + [Path(part) for part in from_env if part]
    return [_normal(_expand(d, cwd, home)) for d in listed]


def _expand(directory: Path, cwd: Path, home: Path) -> Path:
    if directory.parts[:1] == ("~",):
        return home.joinpath(*directory.parts[1:])
    return cwd / directory


def _normal(directory: Path) -> Path:
    return Path(os.path.normpath(directory))


def scan_skills(
    *, skill_dirs: Sequence[Path] = (), env: Mapping[str, str], cwd: Path, home: Path
) -> SkillScan:
    """Every usable skill in the search directories (first name wins), and the problems met.

    A directory the caller named (in ``skill_dirs`` or ``MEMSTACK_AGENT_SKILL_DIRS``) that
    does not exist is a problem; a missing default directory is not.
    """
    named = set(_listed_dirs(skill_dirs, env, cwd, home))
    found: dict[str, Skill] = {}
    problems: list[SkillProblem] = []
    for directory in skill_search_dirs(skill_dirs=skill_dirs, env=env, cwd=cwd, home=home):
        if not directory.is_dir():
            if directory in named:
                problems.append(SkillProblem(path=directory, reason="is not a directory"))
            continue
        for skill_file in _skill_files(directory, MAX_SEARCH_DEPTH):
            try:
                skill = _load(skill_file)
            except _Malformed as exc:
                name = exc.name or skill_file.parent.name
                problems.append(SkillProblem(path=skill_file, reason=exc.reason, name=name))
                continue
            found.setdefault(skill.name, skill)
    return SkillScan(skills=tuple(found.values()), problems=tuple(problems))


def discover_skills(
    *, skill_dirs: Sequence[Path] = (), env: Mapping[str, str], cwd: Path, home: Path
) -> list[Skill]:
    """Every usable skill in the search directories; see ``scan_skills`` for the problems."""
    return list(scan_skills(skill_dirs=skill_dirs, env=env, cwd=cwd, home=home).skills)


def _skill_files(directory: Path, depth: int) -> Iterator[Path]:
    """SKILL.md files in ``directory`` or below it, in name order; a skill's own
    subdirectories (its resources) and hidden directories are not searched."""
    candidate = directory / SKILL_FILE
    if candidate.is_file():
        yield candidate
        return
    if depth == 0:
        return
    try:
        children = sorted(directory.iterdir())
    except OSError:
        return
    for child in children:
        if child.is_dir() and not child.name.startswith("."):
            yield from _skill_files(child, depth - 1)


# -- selection and rendering ----------------------------------------------------------


def select_skills(
    objective: str,
    available: Sequence[Skill],
    *,
    explicit: Sequence[str] | None,
    auto: bool,
    problems: Sequence[SkillProblem] = (),
) -> list[Skill]:
    """The skills for ``objective``.

    ``explicit`` names (even an empty list) choose exactly those skills, in that order;
    a name not in ``available`` raises ``InvalidInput``, with the file and the fault
    when ``problems`` holds a broken skill of that name. Otherwise, when ``auto``,
    the skills whose description or name shares a word with the objective.
    """
    if explicit is not None:
        by_name = {skill.name: skill for skill in available}
        return [_explicit(name, by_name, problems) for name in dict.fromkeys(explicit)]
    if not auto:
        return []
    wanted = _words(objective)
    return [skill for skill in available if wanted & _words(f"{skill.name} {skill.description}")]


def _explicit(name: str, by_name: Mapping[str, Skill], problems: Sequence[SkillProblem]) -> Skill:
    skill = by_name.get(name)
    if skill is not None:
        return skill
    broken = next((p for p in problems if p.name == name and p.path.name == SKILL_FILE), None)
    if broken is not None:
        raise InvalidInput(
            f"skill {name!r} cannot be loaded: {broken.path} {broken.reason}.", field="skills"
        )
    known = ", ".join(sorted(by_name)) or "none were found"
    raise InvalidInput(
        f"unknown skill {name!r}; available skills: {known}. Add a <dir>/{name}/{SKILL_FILE}, "
        f"or pass its directory in skill_dirs or {SKILL_DIRS_ENV}.",
        field="skills",
    )


def _words(text: str) -> set[str]:
    words: set[str] = set()
    for word in _WORD.findall(text.lower()):
        if len(word) >= MIN_WORD_CHARS and word not in _STOP_WORDS:
            words.add(word[:-1] if word.endswith("s") and not word.endswith("ss") else word)
    return words


def render_skills(skills: Sequence[Skill]) -> str:
    """The ``# Agent Skills`` section of a system prompt; ``""`` when there are none."""
    if not skills:
        return ""
    sections = [RENDER_HEADER, *(f"\n## {skill.name}\n{skill.instructions}" for skill in skills)]
    return "\n".join(sections)


def skills_section(
    objective: str,
    *,
    skills: Sequence[str] | None = None,
    skill_dirs: Sequence[Path] = (),
    env: Mapping[str, str],
    cwd: Path,
    home: Path,
) -> str:
    """Discover, select and render the skills for ``objective`` in one call.

    Explicit names come from ``skills``, else from ``MEMSTACK_AGENT_SKILLS``; without
    them skills are auto-selected unless ``MEMSTACK_AGENT_AUTO_SKILLS`` is ``0``
    (or ``false``, ``no``, ``off``).
    """
    explicit = list(skills) if skills is not None else _env_names(env)
    auto = (setting(env, AUTO_SKILLS_ENV)[1] or "1").strip().lower() not in _FALSE
    if explicit is None and not auto:
        return ""
    scan = scan_skills(skill_dirs=skill_dirs, env=env, cwd=cwd, home=home)
    chosen = select_skills(
        objective, scan.skills, explicit=explicit, auto=auto, problems=scan.problems
    )
    return render_skills(chosen)


def _env_names(env: Mapping[str, str]) -> list[str] | None:
    raw = setting(env, SKILLS_ENV)[1] or ""
    names = [name.strip() for name in raw.split(",") if name.strip()]
    return names or None


def skills_for_run(
    objective: str,
    *,
    skills: Sequence[str] | None,
    skill_dirs: Sequence[Path],
    env: Mapping[str, str] | None,
) -> str:
    """``skills_section`` for an agent about to run: the process environment, working
    directory and home unless the agent was given an ``env``."""
    return skills_section(
        objective,
        skills=skills,
        skill_dirs=skill_dirs,
        env=os.environ if env is None else env,
        cwd=Path.cwd(),
        home=Path.home(),
    )
