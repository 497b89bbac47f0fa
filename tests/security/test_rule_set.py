"""The maintained rule set under the secret filter (issue 43): gitleaks' default rules,
shipped unchanged from the release ``SOURCE.json`` names, every one compiled by re2, run
only when one of its keywords is in the text."""

from __future__ import annotations

import tomllib

import pytest
import re2

from memstack._gitleaks import GITLEAKS, REPLACED, RuleSet, shannon_entropy
from memstack.secret_rules import rules_text, sha256, source
from memstack.secret_rules.update import checked
from memstack.secrets import secret_kind

CONFIG = tomllib.loads(rules_text().decode())
RULES = [rule for rule in CONFIG["rules"] if "regex" in rule]


def test_the_shipped_rules_are_the_release_source_json_names():
    record = source()
    assert record["version"].startswith("v") and len(record["commit"]) == 40
    assert record["version"] in record["url"]
    assert sha256(rules_text()) == record["sha256"]


@pytest.mark.parametrize("rule", RULES, ids=[rule["id"] for rule in RULES])
def test_re2_compiles_every_rule(rule: dict[str, str]):
    re2.compile(rule["regex"])


def test_the_update_check_names_a_rule_re2_refuses():
    assert checked(rules_text()) == len(CONFIG["rules"])
    broken = b"[[rules]]\nid = \"lookbehind\"\nregex = '''(?<=x)y'''\n"
    with pytest.raises(ValueError, match="lookbehind"):
        checked(broken)


def test_every_rule_but_the_replaced_ones_is_loaded():
    kinds = {rule.kind for rule in GITLEAKS.rules}
    assert kinds == {r["id"].replace("-", "_") for r in RULES if r["id"] not in REPLACED}


def test_a_rule_runs_only_when_one_of_its_keywords_is_in_the_text():
    key = "AGE-SECRET-KEY-1" + "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L" * 2
    key = key[: len("AGE-SECRET-KEY-1") + 58]
    assert "age_secret_key" in {r.kind for r in GITLEAKS.candidates(key.encode())}
    assert GITLEAKS.candidates(b"we met in Lisbon last spring") == []
    assert secret_kind(f"my age identity is {key}") == "age_secret_key"


def test_the_entropy_floor_and_allowlists_are_applied_as_gitleaks_applies_them():
    config = {
        "allowlist": {"regexes": ["^EXAMPLE"]},
        "rules": [
            {
                "id": "demo",
                "regex": r"demo_([A-Za-z0-9]{12})",
                "keywords": ["demo_"],
                "entropy": 3.0,
                "allowlists": [{"stopwords": ["fixture"]}],
            }
        ],
    }
    rules = RuleSet(config)
    assert rules.first(b"demo_a8Fk3jD9sLq0", 10) == "demo"
    assert rules.first(b"demo_aaaaaaaaaaaa", 10) is None  # entropy 0, under the floor
    assert rules.first(b"demo_EXAMPLEabcde", 10) is None  # the global allowlist
    assert rules.first(b"demo_fixtureAbc12", 10) is None  # the rule's stopword
    assert shannon_entropy("aaaa") == 0.0 and shannon_entropy("ab") == 1.0
