"""No input makes the secret filter slow (issue 11: the old filter took seconds on
``"a-" * 50000``, and one request stalled the server).

1 MB of each adversarial shape is scanned within ``DEADLINE_S``: a deadline, not a
speed figure (a linear scan takes a few milliseconds; backtracking takes minutes to
hours at this size, so no machine is slow enough to fail a linear scan or fast enough
to pass a quadratic one). Each time is printed; speed belongs in ``memstack bench``.
"""

import time

import pytest

from memstack.bench.secret_filter import ADVERSARIAL as SHAPES
from memstack.bench.secret_filter import MB
from memstack.longterm import secret_kind
from memstack.secrets import MAX_CANDIDATES, TOO_MANY_CANDIDATES

DEADLINE_S = 5.0
ADVERSARIAL = {name: make(MB) for name, make in SHAPES.items()}


@pytest.mark.parametrize("text", ADVERSARIAL.values(), ids=ADVERSARIAL.keys())
def test_one_megabyte_of_adversarial_input_scans_within_the_deadline(text: str):
    secret_kind(text[:1000])  # compile-time and first-use costs are not the figure
    started = time.perf_counter()
    secret_kind(text)
    elapsed = time.perf_counter() - started
    print(f"\n{len(text) / MB:.2f} MB scanned in {elapsed * 1000:.1f} ms")
    assert elapsed < DEADLINE_S


def test_a_flood_of_harmless_frames_is_refused_not_scanned_forever():
    flood = "key: value " * (MAX_CANDIDATES + 1)
    assert secret_kind(flood) == TOO_MANY_CANDIDATES
    assert secret_kind("key: value " * (MAX_CANDIDATES - 1)) is None


MODEL_REPLIES = {
    "fence then spaces": "```" + " " * MB + "x",
    "fence json then spaces": "```json" + " \n" * (MB // 2),
    "spaces then fence": " " * MB + "```",
}


@pytest.mark.parametrize("reply", MODEL_REPLIES.values(), ids=MODEL_REPLIES.keys())
def test_a_megabyte_model_reply_is_unfenced_and_refused_within_the_deadline(reply: str):
    """Extraction and reconciliation replies come from the model, whose size nobody
    bounds; taking a code fence off used a pattern that backtracked quadratically
    (20,000 spaces after a fence: over 10 s)."""
    from memstack.longterm import parse_candidates
    from memstack.longterm.reconcile import ReconcileError, parse_decisions

    start = time.perf_counter()
    assert parse_candidates(reply) == []
    with pytest.raises(ReconcileError):
        parse_decisions(reply, 1, [[]])
    elapsed = time.perf_counter() - start
    print(f"\n{len(reply):,} characters: {elapsed * 1000:.1f} ms")
    assert elapsed < DEADLINE_S
