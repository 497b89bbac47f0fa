"""The secret filter against a corpus of realistic credentials and near-miss benign facts
(issue 11 targets: >= 97% of secrets caught, <= 1 benign fact refused)."""

from memstack.longterm import secret_kind
from tests.longterm.secret_corpus import BENIGN, SECRETS


def test_corpus_is_big_enough():
    assert len(SECRETS) >= 40
    assert len(BENIGN) >= 30


def test_at_least_97_percent_of_credentials_are_caught():
    missed = [label for label, text in SECRETS if secret_kind(text) is None]
    rate = 1 - len(missed) / len(SECRETS)
    print(f"\nsecret corpus: caught {len(SECRETS) - len(missed)}/{len(SECRETS)} ({rate:.1%})")
    assert rate >= 0.97, f"missed: {missed}"


def test_at_most_one_benign_fact_is_refused():
    refused = [(label, secret_kind(text)) for label, text in BENIGN if secret_kind(text)]
    print(f"\nbenign corpus: refused {len(refused)}/{len(BENIGN)} {refused}")
    assert len(refused) <= 1, refused
