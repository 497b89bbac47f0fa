"""Move the shipped rule set to another gitleaks release:
``python -m memstack.secret_rules.update v8.31.0``.

Downloads the release's ``config/gitleaks.toml``, checks that every rule compiles with re2
and that the file parses, then writes it beside this module and records the version, the
commit the tag names and the file's SHA-256 in ``SOURCE.json``. Run the secret filter's
tests afterwards (``tests/security``, ``tests/longterm/test_secret_*``): a new release may
change what is caught.
"""

from __future__ import annotations

import json
import sys
import tomllib
import urllib.request
from pathlib import Path
from typing import Final

import re2

from memstack.secret_rules import RULES_FILE, SOURCE_FILE, sha256

_RAW: Final = "https://raw.githubusercontent.com/gitleaks/gitleaks/{version}/config/gitleaks.toml"
_TAG: Final = "https://api.github.com/repos/gitleaks/gitleaks/commits/{version}"
_HERE: Final = Path(__file__).parent


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=30) as response:
        body: bytes = response.read()
        return body


def checked(data: bytes) -> int:
    """How many rules ``data`` holds; raises ``ValueError`` naming a rule re2 refuses."""
    config = tomllib.loads(data.decode())
    rules = config.get("rules", [])
    for rule in rules:
        if "regex" in rule:
            try:
                re2.compile(rule["regex"])
            except re2.error as exc:
                raise ValueError(f"rule {rule.get('id')!r}: re2 refuses its regex: {exc}") from exc
    return len(rules)


def update(version: str) -> dict[str, str]:
    """Fetch ``version``'s rules, write them here with their ``SOURCE.json``; the record."""
    data = _get(_RAW.format(version=version))
    count = checked(data)
    commit = json.loads(_get(_TAG.format(version=version)))["sha"]
    record: dict[str, str] = json.loads((_HERE / SOURCE_FILE).read_text())
    record.update(
        version=version,
        commit=commit,
        url=_RAW.format(version=version),
        sha256=sha256(data),
    )
    (_HERE / RULES_FILE).write_bytes(data)
    (_HERE / SOURCE_FILE).write_text(json.dumps(record, indent=2) + "\n")
    print(f"gitleaks {version} ({commit[:12]}): {count} rules, sha256 {record['sha256']}")
    return record


if __name__ == "__main__":
    if len(sys.argv) != 2 or not sys.argv[1].startswith("v"):
        sys.exit("usage: python -m memstack.secret_rules.update vX.Y.Z (a gitleaks release tag)")
    update(sys.argv[1])
