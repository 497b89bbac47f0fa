"""Reading settings from the environment: the spec's ``NODETOOL_*`` names as aliases of
memstack's own, and ``.env`` files.

Every ``MEMSTACK_*`` variable in ``ALIASES`` also answers to the ``NODETOOL_*`` name the
specification uses; when both are set, the ``MEMSTACK_*`` one wins. Blank values count
as unset.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from memstack.errors import ConfigError

__all__ = ["ALIASES", "read_dotenv", "setting", "with_dotenv"]

ALIASES: Final[Mapping[str, str]] = {
    "MEMSTACK_MEMORY_ENABLED": "NODETOOL_MEMORY_ENABLED",
    "MEMSTACK_MEMORY_MAX_ITEMS": "NODETOOL_MEMORY_MAX_ITEMS",
    "MEMSTACK_MEMORY_EMBEDDING_MODEL": "NODETOOL_MEMORY_EMBEDDING_MODEL",
    "MEMSTACK_MEMORY_EMBEDDING_PROVIDER": "NODETOOL_MEMORY_EMBEDDING_PROVIDER",
    "MEMSTACK_VECTOR_PROVIDER": "NODETOOL_VECTOR_PROVIDER",
    "MEMSTACK_AGENT_SKILL_DIRS": "NODETOOL_AGENT_SKILL_DIRS",
    "MEMSTACK_AGENT_SKILLS": "NODETOOL_AGENT_SKILLS",
    "MEMSTACK_AGENT_AUTO_SKILLS": "NODETOOL_AGENT_AUTO_SKILLS",
}
"""memstack's variable -> the specification's name for it."""


def setting(env: Mapping[str, str], name: str) -> tuple[str, str | None]:
    """``(variable, value)``: ``name`` when it is set, else its ``NODETOOL_*`` alias when
    that is set, else ``(name, None)``. The variable is the one to name in an error."""
    for variable in (name, ALIASES.get(name)):
        if variable is not None and env.get(variable, "").strip():
            return variable, env[variable]
    return name, None


_LINE: Final = re.compile(
    r"""^\s*(?:export\s+)?(?P<key>[A-Za-z_][A-Za-z0-9_]*)\s*=\s*
    (?:"(?P<double>(?:[^"\\]|\\.)*)"|'(?P<single>[^']*)'|(?P<bare>[^#]*?))\s*(?:\#.*)?$""",
    re.VERBOSE,
)


def read_dotenv(path: Path) -> dict[str, str]:
    """The ``KEY=value`` lines of a ``.env`` file ({} when there is none): ``export``
    prefixes, ``#`` comments and single or double quotes as shells write them."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    values: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        found = _LINE.match(line)
        if found is None:
            raise ConfigError(
                f"{path}, line {number}: {line.strip()[:60]!r} is not KEY=value; "
                "fix or remove the line."
            )
        double = found["double"]
        if double is not None:
            values[found["key"]] = re.sub(r"\\(.)", _unescape, double)
        else:
            values[found["key"]] = found["single"] if found["single"] is not None else found["bare"]
    return values


def _unescape(match: re.Match[str]) -> str:
    return {"n": "\n", "t": "\t"}.get(match[1], match[1])


def with_dotenv(env: Mapping[str, str], path: Path | None) -> Mapping[str, str]:
    """``env`` over the values of the ``.env`` file at ``path``: the environment wins."""
    if path is None:
        return env
    file_values = read_dotenv(path)
    if not file_values:
        return env
    return {**file_values, **env}
