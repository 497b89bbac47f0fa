"""looks_like_secret(): the trust boundary in front of every long-term write (spec 001).

Each pattern is a bounded character class with no nested quantifiers, so a scan is
linear in the text (no ReDoS). False positives are preferable to persisting a key.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["SECRET_PATTERNS", "looks_like_secret", "secret_kind"]

_I = re.IGNORECASE

SECRET_PATTERNS: Final[tuple[tuple[str, re.Pattern[str]], ...]] = (
    ("anthropic_key", re.compile(r"\bsk-ant-[A-Za-z0-9_-]{16,}")),
    ("openai_key", re.compile(r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}")),
    ("github_token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})")),
    ("stripe_key", re.compile(r"\b(?:sk|pk|rk)_(?:live|test)_[A-Za-z0-9]{10,}")),
    ("aws_access_key", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("aws_secret", re.compile(r"\baws_secret_access_key\b\s{0,5}[:=]", _I)),
    ("slack_token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}")),
    ("google_api_key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}")),
    ("authorization_header", re.compile(r"\bauthorization\s{0,5}:\s{0,5}\S", _I)),
    ("bearer_token", re.compile(r"\bbearer\s{1,5}[A-Za-z0-9._~+/=-]{12,}", _I)),
    ("private_key", re.compile(r"-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY( BLOCK)?-----")),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_-]{6,}\.[A-Za-z0-9_-]{6,}\.[A-Za-z0-9_-]{6,}")),
    (
        "jwt_like",
        re.compile(r"\b[A-Za-z0-9_-]{20,}\.[A-Za-z0-9_-]{20,}\.[A-Za-z0-9_-]{20,}\b"),
    ),
    (
        "credential_assignment",
        re.compile(
            r"\b(?:api[_-]?key|apikey|access[_-]?key|secret[_-]?key|access[_-]?token|"
            r"auth[_-]?token|refresh[_-]?token|client[_-]?secret|token|password|passwd|pwd|"
            r"passphrase|secret)\b[\"']?\s{0,5}(?:=|:|=>)\s{0,5}[\"']?[^\s\"',;]{3,}",
            _I,
        ),
    ),
    (
        "password_statement",
        re.compile(
            r"\b(?:password|passcode|passphrase|pin code)\s{1,5}(?:is|was)\s{1,5}\S{3,}", _I
        ),
    ),
    (
        "connection_string",
        re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]{1,30}://[^\s:/@]{1,200}:[^\s@/]{1,200}@[^\s]"),
    ),
)


def secret_kind(text: str) -> str | None:
    """The name of the first credential shape ``text`` matches, or ``None``."""
    for name, pattern in SECRET_PATTERNS:
        if pattern.search(text):
            return name
    return None


def looks_like_secret(text: str) -> bool:
    """True when ``text`` contains anything shaped like a credential."""
    return secret_kind(text) is not None
