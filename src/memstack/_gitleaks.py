"""gitleaks' default rules (``memstack.secret_rules``) applied as gitleaks applies them,
to one text instead of a file: the secret filter's maintained base.

For each rule: its keywords are the prefilter (one ``re2.Set`` pass over the lowered text
says which keywords occur; a rule without one of its keywords in the text is not run), its
regex is searched, the secret is its ``secretGroup`` or else the first non-empty capture
group, a secret whose Shannon entropy is at or under the rule's floor is skipped, and so is
one an allowlist allows (the global one, then the rule's: regexes against the secret, the
whole match or its line; stopwords contained in the lowered secret; ``condition = "AND"``
needing every check). Path and commit allowlists are about files and commits, which a memory
has none of: an ``OR`` one never allows by them, an ``AND`` one that needs them never holds.
gitleaks' rules are RE2 syntax (Go's engine), so google-re2 runs them as written, in time
linear in the text.
"""

from __future__ import annotations

import math
import tomllib
from collections import Counter
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import re2

from memstack.secret_rules import rules_text

__all__ = [
    "GITLEAKS",
    "REPLACED",
    "RuleSet",
    "documentation_example",
    "load_rules",
    "shannon_entropy",
]

_LINE: Final = 1024


_EXAMPLE: Final = re2.compile(rb"EXAMPLE|x{6}|X{6}")


def documentation_example(secret: bytes) -> bool:
    """A secret written as documentation writes one (``AKIAIOSFODNN7EXAMPLE``,
    ``sk_live_xxxxxxxxxxxx``), which memstack adds to every rule's allowlist (gitleaks'
    own allows ``...EXAMPLE`` for AWS keys and all-``x`` secrets)."""
    return _EXAMPLE.search(secret) is not None


def shannon_entropy(text: str) -> float:
    """Bits per character of ``text`` (gitleaks' ``shannonEntropy``)."""
    if not text:
        return 0.0
    n = len(text)
    return -sum(c / n * math.log2(c / n) for c in Counter(text).values())


def _alternation(patterns: Sequence[str]) -> Any:
    return re2.compile("|".join(f"(?:{p})" for p in patterns).encode())


@dataclass(frozen=True, kw_only=True)
class _Allowlist:
    target: str  # "secret", "match" or "line"
    regex: Any | None
    stopwords: Any | None
    every: bool  # condition AND
    never: bool  # AND on a path or a commit: cannot hold for a memory

    @classmethod
    def parse(cls, raw: Mapping[str, Any]) -> _Allowlist:
        every = raw.get("condition", "OR").upper() == "AND"
        words = [re2.escape(w.lower()) for w in raw.get("stopwords", ())]
        return cls(
            target=raw.get("regexTarget", "secret"),
            regex=_alternation(raw["regexes"]) if raw.get("regexes") else None,
            stopwords=_alternation(words) if words else None,
            every=every,
            never=every and bool(raw.get("paths") or raw.get("commits")),
        )

    def allows(self, secret: bytes, match: bytes, line: bytes) -> bool:
        if self.never:
            return False
        target = {"match": match, "line": line}.get(self.target, secret)
        checks = []
        if self.regex is not None:
            checks.append(self.regex.search(target) is not None)
        if self.stopwords is not None:
            checks.append(self.stopwords.search(secret.lower()) is not None)
        return all(checks) if self.every else any(checks)


@dataclass(frozen=True, kw_only=True)
class _Rule:
    kind: str
    regex: Any
    entropy: float
    group: int
    allowlists: tuple[_Allowlist, ...]

    def secret(self, match: Any) -> tuple[int, int]:
        """The span of the secret in ``match``."""
        if self.group:
            return int(match.start(self.group)), int(match.end(self.group))
        for i in range(1, self.regex.groups + 1):
            start, end = match.start(i), match.end(i)
            if end > start:
                return int(start), int(end)
        return int(match.start()), int(match.end())


class RuleSet:
    """A gitleaks configuration, compiled: ``first`` and ``spans`` scan a text."""

    def __init__(self, config: Mapping[str, Any], *, skip: Collection[str] = ()) -> None:
        rules = [r for r in config["rules"] if "regex" in r and r["id"] not in skip]
        self.rules = tuple(
            _Rule(
                kind=r["id"].replace("-", "_"),
                regex=re2.compile(r["regex"].encode()),
                entropy=float(r.get("entropy", 0.0)),
                group=int(r.get("secretGroup", 0)),
                allowlists=tuple(_Allowlist.parse(a) for a in r.get("allowlists", ())),
            )
            for r in rules
        )
        glob = config.get("allowlist")
        self.global_allowlists = () if glob is None else (_Allowlist.parse(glob),)
        keywords = sorted({k.lower() for r in rules for k in r.get("keywords", ())})
        self._keywords = re2.Set.SearchSet(re2.Options())
        for keyword in keywords:
            self._keywords.Add(re2.escape(keyword).encode())
        self._keywords.Compile()
        self._rules_of = [
            [j for j, r in enumerate(rules) if k in {w.lower() for w in r.get("keywords", ())}]
            for k in keywords
        ]
        self._keywordless = [j for j, r in enumerate(rules) if not r.get("keywords")]

    def candidates(self, data: bytes) -> list[_Rule]:
        """The rules one of whose keywords ``data`` holds, in the file's order."""
        found = set(self._keywordless)
        for k in self._keywords.Match(data.lower()) or ():
            found.update(self._rules_of[k])
        return [self.rules[j] for j in sorted(found)]

    def spans(self, data: bytes, budget: int) -> Iterator[tuple[int, int, str]]:
        """Each secret the rules find in ``data``: its byte span and the rule's kind.
        At most ``budget`` matches are judged in all (each rule's scan is linear; the
        budget bounds the Python work per text)."""
        for rule in self.candidates(data):
            pos = 0
            while budget > 0 and (match := rule.regex.search(data, pos)) is not None:
                budget -= 1
                start, end = rule.secret(match)
                pos = max(match.end(), pos + 1)
                if self._found(rule, data, match, start, end):
                    yield start, end, rule.kind

    def first(self, data: bytes, budget: int) -> str | None:
        """The kind of the first secret found in ``data``, or ``None``."""
        return next((kind for _, _, kind in self.spans(data, budget)), None)

    def _found(self, rule: _Rule, data: bytes, match: Any, start: int, end: int) -> bool:
        secret = data[start:end]
        if rule.entropy and shannon_entropy(secret.decode("utf-8", "replace")) <= rule.entropy:
            return False
        if documentation_example(secret):
            return False
        # The match's line, at most _LINE bytes either side (the work per match is bounded)
        low, high = max(0, match.start() - _LINE), min(len(data), match.end() + _LINE)
        line_start = data.rfind(b"\n", low, match.start()) + 1 or low
        line_end = data.find(b"\n", match.end(), high)
        line = data[line_start : high if line_end < 0 else line_end]
        whole = data[match.start() : match.end()]
        return not any(
            allowlist.allows(secret, whole, line)
            for allowlist in (*self.global_allowlists, *rule.allowlists)
        )


REPLACED: Final = ("generic-api-key",)
"""Rules memstack's own tiers stand in for: gitleaks' generic ``<credential word> = <value>``
rule judges the value by entropy alone and its stopwords by the value, so ``cache_key =
3f9a8b7c6d5e4f3a2b1c`` is a key to it; the filter's assignment tier
(``memstack._secret_assignment``) knows the names that are not credentials."""


def load_rules() -> RuleSet:
    """The shipped rule set (``memstack.secret_rules``), compiled, less ``REPLACED``."""
    return RuleSet(tomllib.loads(rules_text().decode()), skip=REPLACED)


GITLEAKS: Final = load_rules()
"""The shipped rules, compiled once when the filter is imported."""
