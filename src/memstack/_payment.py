"""Payment data: card numbers and IBANs, the secret filter's own kinds (``payment_card``,
``iban``), refused by default; ``MEMSTACK_ALLOW_PAYMENT_DATA=1`` lets them through for a
deployment that must store them (``docs/long-term-memory.md``).

A card number is 13 to 19 digits, whole or in groups of three or more split by single
spaces or dashes (not after a ``+``: a phone number),
with a card scheme's prefix and length and a valid Luhn check digit; the test numbers card
schemes publish (``4242 4242 4242 4242``...) are not cards. An IBAN is a country code, two
check digits and 11 to 30 letters or digits, whole or in groups of four, whose ISO 7064
mod-97 check holds.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Final

from memstack._secret_assignment import Groups

__all__ = [
    "ALLOW_PAYMENT_DATA",
    "CARD",
    "IBAN",
    "allowed",
    "is_card",
    "is_iban",
    "judge_card",
    "judge_iban",
]

ALLOW_PAYMENT_DATA: Final = "MEMSTACK_ALLOW_PAYMENT_DATA"
"""The setting that lets card numbers and IBANs be stored (``1``, ``true``, ``yes``)."""

CARD: Final = r"(?:^|[^0-9A-Za-z+_.-])(?P<v>[0-9](?:[ -]?[0-9]){12,18})\b"
IBAN: Final = r"\b(?P<v>[A-Z]{2}[0-9]{2}(?:[ ]?[A-Z0-9]{4}){2,7}(?:[ ]?[A-Z0-9]{1,4})?)\b"

_TEST_CARDS: Final = frozenset(
    {
        "4242424242424242", "4111111111111111", "4012888888881881", "4000056655665556",
        "5555555555554444", "5105105105105100", "2223003122003222", "378282246310005",
        "371449635398431", "6011111111111117", "6011000990139424", "3056930009020004",
        "36227206271667", "3566002020360505", "6200000000000005", "4000000000000002",
        "4000000000009995", "4000000000000077",
    }
)  # fmt: skip


def allowed(env: Mapping[str, str] = os.environ) -> bool:
    """Does this deployment allow payment data (``MEMSTACK_ALLOW_PAYMENT_DATA``)?"""
    return env.get(ALLOW_PAYMENT_DATA, "").strip().lower() in {"1", "true", "yes", "on"}


def _luhn(digits: str) -> bool:
    total = 0
    for i, d in enumerate(reversed(digits)):
        n = int(d) * (2 if i % 2 else 1)
        total += n - 9 if n > 9 else n
    return total % 10 == 0


def _scheme_length(digits: str) -> bool:
    """A card scheme's prefix with one of that scheme's lengths."""
    n, two, four = len(digits), int(digits[:2]), int(digits[:4])
    if digits[0] == "4":
        return n in (13, 16, 19)  # Visa
    if 51 <= two <= 55 or 2221 <= four <= 2720:
        return n == 16  # Mastercard
    if two in (34, 37):
        return n == 15  # American Express
    if digits.startswith(("6011", "65")) or 644 <= int(digits[:3]) <= 649:
        return 16 <= n <= 19  # Discover
    if 3528 <= four <= 3589:
        return 16 <= n <= 19  # JCB
    if two in (36, 38, 39) or 300 <= int(digits[:3]) <= 305:
        return 14 <= n <= 19  # Diners Club
    if digits.startswith("62"):
        return 16 <= n <= 19  # UnionPay
    return False


def is_card(text: str) -> bool:
    """A card number: consistent separators, a scheme's prefix and length, Luhn-valid,
    not a published test number."""
    separators = {c for c in text if not c.isdigit()}
    if len(separators) > 1 or any(len(g) < 3 for g in text.replace("-", " ").split(" ")):
        return False  # mixed separators, or digits split at random ("8 336 817")
    digits = "".join(c for c in text if c.isdigit())
    if not 13 <= len(digits) <= 19 or digits in _TEST_CARDS:
        return False
    return _scheme_length(digits) and _luhn(digits)


def is_iban(text: str) -> bool:
    """An IBAN whose mod-97 check holds."""
    compact = text.replace(" ", "")
    if not 15 <= len(compact) <= 34:
        return False
    moved = compact[4:] + compact[:4]
    return int("".join(str(int(c, 36)) for c in moved)) % 97 == 1


def judge_card(groups: Groups) -> bool:
    return not allowed() and is_card(groups["v"] or "")


def judge_iban(groups: Groups) -> bool:
    return not allowed() and is_iban(groups["v"] or "")
