"""The secret filter against a corpus of realistic credentials and near-miss benign facts
(issue 11 and issue 30 targets: >= 97% of credentials caught, <= 1 benign fact in 30
refused). The corpus is split in two halves (``halves``): the filter was tuned looking at
``tune`` only, so ``held`` measures it on cases it was not tuned on; both must meet the
targets, and the figures are printed per half and per shape family."""

import pytest

from memstack.longterm import secret_kind
from tests.longterm.secret_corpus import ALL_BENIGN, ALL_SECRETS, family, halves

SECRET_HALVES = halves(ALL_SECRETS)
BENIGN_HALVES = halves(ALL_BENIGN)


def test_corpus_is_big_enough():
    assert len(ALL_SECRETS) >= 120
    assert len(ALL_BENIGN) >= 90
    per_family: dict[str, int] = {}
    for label, _ in ALL_SECRETS:
        per_family[family(label)] = per_family.get(family(label), 0) + 1
    assert min(per_family.values()) >= 3, per_family


@pytest.mark.parametrize("half", ["tune", "held"])
def test_at_least_97_percent_of_credentials_are_caught(half: str):
    cases = SECRET_HALVES[half]
    missed = [label for label, text in cases if secret_kind(text) is None]
    caught = len(cases) - len(missed)
    print(f"\n{half} half: caught {caught}/{len(cases)} ({caught / len(cases):.1%})")
    for name, (hit, total) in _per_family(cases).items():
        print(f"  {name:26} {hit}/{total}")
    assert caught / len(cases) >= 0.97, f"missed: {missed}"


@pytest.mark.parametrize("half", ["tune", "held"])
def test_at_most_one_benign_fact_in_30_is_refused(half: str):
    cases = BENIGN_HALVES[half]
    refused = [(label, secret_kind(text)) for label, text in cases if secret_kind(text)]
    print(f"\n{half} half: benign refused {len(refused)}/{len(cases)} {refused}")
    assert len(refused) * 30 <= len(cases), refused


def _per_family(cases: list[tuple[str, str]]) -> dict[str, tuple[int, int]]:
    counts: dict[str, tuple[int, int]] = {}
    for label, text in cases:
        hit, total = counts.get(family(label), (0, 0))
        counts[family(label)] = (hit + (secret_kind(text) is not None), total + 1)
    return counts
