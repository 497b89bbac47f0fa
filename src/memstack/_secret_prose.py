"""Credentials said in a sentence rather than assigned: the secret filter's prose shapes
and their judges.

- ``said_password``: a password word (``password``, ``passphrase``, ``passcode``, ``pw``),
  a few words about it ("at the office", "for the shared drive"), then ``is``, ``was``,
  ``:``, ``=``, ``to`` or nothing, then a value that looks like a password ("the wifi
  password at the office is purple-elephant-42", "ssh root@host with password Tr0ub4dor").
- ``said_code``: a PIN, PUK, OTP, passcode or combination, or a ``code`` qualified as one
  that opens something (verification, security, one-time, login, 2FA, door, keypad...),
  then 4 to 10 digits, spaced or not ("my debit card PIN is 4921", "your verification code
  is 839201"); a zip, error or promo code is not one.
- ``token_beside_word``: a credential word (token, secret, key, credentials...), a few
  words, then a random-looking token: mixed case and digits, at least 16 characters, at
  least ``MIN_ENTROPY`` bits a character ("the deploy token Ll9h5... expires Friday").

Spaces are bounded (at most 4 between words), so no match runs long: a capture over a
megabyte of spaces would cost what the scan saves.

In every shape, a word right after the credential word or among the words between that
makes it something said about the credential (``manager``, ``policy``, ``reset``, ``id``,
``fingerprint``, ``expires``...) means no value follows.
"""

from __future__ import annotations

import re
from typing import Final

from memstack._gitleaks import shannon_entropy
from memstack._secret_assignment import Groups
from memstack._tokenness import passes

__all__ = [
    "CODE",
    "MIN_ENTROPY",
    "PASSWORD",
    "TOKEN",
    "judge_code",
    "judge_password",
    "judge_token",
]

MIN_ENTROPY: Final = 3.5
"""Bits a character under which a token beside a credential word is not taken for one
(gitleaks' floor for generic keys; 16 random base62 characters carry about 3.8)."""

_GAP: Final = r"(?P<gap>(?:,?[ \t]{1,4}[^\s.!?;:=]{1,20}){0,6}?)"
_SAY: Final = (
    r"(?P<o>[ \t]{0,4}[:=]|,?[ \t]{1,4}(?:is|was|to|are)(?:[ \t]{1,4}(?:now|still|just|actually))?)"
)
# ``(?:gap say)?`` is greedy: "<word> <a few words> is <value>" is tried before the value
# right after the word, so "password at the office is x" is judged as x, not as "at".

PASSWORD: Final = (
    r"(?i)\b(?P<n>pass(?:word|phrase|code)|pw)\b(?:" + _GAP + _SAY + r")?[ \t]{1,4}"
    r"(?P<v>[\"'`][^\"'`\n]{1,64}[\"'`]|[^\s\"'`]{1,64})"
)
CODE: Final = (
    r"(?i)\b(?:(?P<q>[a-z0-9-]{2,12})[ \t]+)?(?P<n>pin|puk|otp|passcode|code|combination)\b"
    r"(?:" + _GAP + _SAY + r")?[ \t]{1,4}(?P<v>[0-9](?:[0-9]|[ -][0-9]){3,11}#?)(?:[^0-9A-Za-z]|$)"
)
TOKEN: Final = (
    r"(?i)\b(?P<n>tokens?|secrets?|keys?|credentials?|apikey)\b(?:"
    + _GAP
    + r"(?:[ \t]{0,4}(?:[:=,]|->|=>)|[ \t]{1,4}(?:is|was))?)?"
    r"[ \t]{1,4}(?P<v>[A-Za-z0-9+/_-]{16,64})\b"
)

_NOT_THE_VALUE: Final = frozenset(
    {
        "manager", "managers", "policy", "policies", "reset", "resets", "hint", "hints",
        "length", "rule", "rules", "requirement", "requirements", "strength", "field",
        "fields", "prompt", "expiry", "expiration", "expires", "expired", "rotation",
        "id", "ids", "name", "names", "fingerprint", "hash", "checksum", "digest", "size",
        "type", "format", "limit", "limits", "endpoint", "url", "uri", "file", "path",
        "prefix", "suffix", "version", "count", "label", "protected", "change", "changes",
        "changed", "must", "should", "needs", "forgot", "forgotten", "revoked", "missing",
        "of", "vault",
    }
)  # fmt: skip
"""Words that say something about the credential: after them no value follows."""

_CODE_QUALIFIERS: Final = frozenset(
    {
        "verification", "security", "one-time", "login", "log-in", "sign-in", "signin",
        "2fa", "mfa", "sms", "otp", "auth", "authentication", "authorization", "access",
        "door", "keypad", "alarm", "gate", "unlock", "backup", "recovery", "pairing",
        "confirm", "entry", "lock", "safe", "locker", "garage",
    }
)  # fmt: skip
"""Words before ``code`` that make it one that opens something (not a zip or error code)."""

_ALWAYS_CODES: Final = frozenset({"pin", "puk", "otp", "passcode", "combination"})


_CODE_VALUE: Final = re.compile(r"[0-9]{4,10}#?")


def _gap_words(groups: Groups) -> list[str]:
    return [w.strip(",").lower() for w in (groups["gap"] or "").split()]


def _about(groups: Groups) -> bool:
    """A word between the credential word and the value says something about it."""
    return any(word in _NOT_THE_VALUE for word in _gap_words(groups))


def judge_password(groups: Groups) -> bool:
    value = groups["v"] or ""
    if _about(groups) or value.lower() in _NOT_THE_VALUE:
        return False
    if not groups["o"] and not (set(value) - set("abcdefghijklmnopqrstuvwxyz-_.'")):
        return False  # no operator: "password manager", "password for it"
    if (groups["n"] or "").lower() == "passcode" and _CODE_VALUE.fullmatch(value):
        return True  # "passcode for the alarm panel: 7403"
    return passes(value, "password") and not value.lower().startswith(("http", "www."))


def judge_code(groups: Groups) -> bool:
    noun = (groups["n"] or "").lower()
    words = _gap_words(groups)
    qualifier = (groups["q"] or "").strip().lower()
    if _about(groups):
        return False
    if noun in _ALWAYS_CODES:
        return True
    return qualifier in _CODE_QUALIFIERS or any(w in _CODE_QUALIFIERS for w in words)


def judge_token(groups: Groups) -> bool:
    value = groups["v"] or ""
    if _about(groups):
        return False
    return passes(value, "random") and shannon_entropy(value) >= MIN_ENTROPY
