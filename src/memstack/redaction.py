"""Redaction: a credential replaced in place by ``[REDACTED:<kind>]``, for the one write
path that must keep going rather than refuse (an Agents SDK session's history: a run never
breaks on a key a user pasted or a tool returned). What counts as a credential is the one
secret filter's (``memstack.secrets``); ``kind`` is its shape's name.
"""

from __future__ import annotations

from typing import Any, Final

import re2

from memstack._json import JSON
from memstack._tokenness import passes
from memstack.secrets import (
    EXACT,
    _assignment,
    _names_credential,
    _options,
    secret_kind,
    secret_spans,
)

__all__ = ["REDACTED", "redact", "redact_secrets"]

REDACTED: Final = "[REDACTED:{kind}]"
"""What ``redact`` puts where a credential was; ``kind`` is its shape's name."""
_MAX_PASSES: Final = 3


def redact(text: str) -> str:
    """``text`` with every credential replaced by ``[REDACTED:<kind>]`` (for a path that
    must keep going, such as an agent's session history, rather than refuse).

    Each credential's span runs over its whole token (a known shape matches only a key's
    first characters; a PEM block runs to its END line). In a text that holds one, every
    other token-like run goes too: a second key beside the first ("account AC... with
    auth token 5f3a...") is often in a shape the filter does not know alone. What is left
    is scanned again; text that still holds a credential after a few passes is replaced
    whole."""
    for _ in range(_MAX_PASSES):
        kind = secret_kind(text)
        if kind is None:
            return text
        data = text.encode("utf-8", "surrogatepass")
        found = secret_spans(data)
        found += _token_runs(data)
        cuts = _merged(data, found)
        if not cuts:
            break
        out, at = bytearray(), 0
        for start, end, name in cuts:
            out += data[at:start] + REDACTED.format(kind=name).encode()
            at = end
        text = (out + data[at:]).decode("utf-8", "surrogatepass")
    kind = secret_kind(text)
    return text if kind is None else REDACTED.format(kind=kind)


def redact_secrets(value: JSON) -> JSON:
    """A copy of ``value`` with every string redacted (``redact``), dict keys too, and
    the value under a credential's name (``{"password": "letmein"}``) replaced whole."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list):
        return [redact_secrets(item) for item in value]
    if isinstance(value, dict):
        out: dict[str, JSON] = {}
        for key, item in value.items():
            name = redact(key)
            while name in out:  # two redacted keys stay two entries
                name += "'"
            if isinstance(item, str) and _names_credential(key):
                kind = secret_kind(_assignment(key, item))
                item = item if kind is None else REDACTED.format(kind=kind)
            out[name] = redact_secrets(item)
        return out
    return value


_TOKEN_END: Final = frozenset(b" \t\r\n\"'`,;<>()[]{}@\\")
_PEM_END: Final[Any] = re2.compile(
    rb"-----END [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----", options=_options()
)


_EXACT_NAMES: Final = frozenset(shape.name for shape in EXACT)
_WORD: Final = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
_RUN: Final[Any] = re2.compile(rb"[A-Za-z0-9_-]{16,}", options=_options())
_HEX: Final = frozenset("0123456789abcdefABCDEF")


def _token_runs(data: bytes) -> list[tuple[int, int, str]]:
    """The runs of ``data`` that look like a random token: 16 characters or more mixing
    both cases and digits, or 32 hex digits and more (names such as
    ``DefaultEndpointsProtocol`` or ``acme-analytics-prod`` are neither)."""
    return [
        (found.start(), found.end(), "random_token")
        for found in _RUN.finditer(data)
        if _random(found.group().decode("ascii"))
    ]


def _random(run: str) -> bool:
    if passes(run, "random"):
        return True
    digits = sum(ch.isdigit() for ch in run)
    return len(run) >= 32 and _HEX.issuperset(run) and 0 < digits < len(run)


def _merged(data: bytes, spans: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """The spans widened to whole tokens and whole characters, overlaps joined, in order.

    Linear in ``data`` however many spans one token holds: spans are taken by their start,
    and a span never widens over bytes an earlier one already covers."""
    merged: list[tuple[int, int, str]] = []
    pem_from, pem_end = -1, len(data)  # the last END line found, and where it was sought
    for start, end, name in sorted(spans, key=lambda span: (span[0], span[2] == "random_token")):
        reach = merged[-1][1] if merged else 0
        if name == "private_key" and end > reach:
            if end > pem_end or pem_from < 0:
                found = _PEM_END.search(data, end)
                pem_from, pem_end = end, len(data) if found is None else found.end()
            end = pem_end
        if end > reach:
            end = max(end, reach)
            while end < len(data) and data[end] not in _TOKEN_END:
                end += 1
        while start > reach and name in _EXACT_NAMES and data[start - 1] in _WORD:
            start -= 1  # a known shape found inside its token ("<id>.atlasv1.<key>")
        while start > reach and 0x80 <= data[start] < 0xC0:  # not inside a character
            start -= 1
        if merged and start <= reach:
            last = merged[-1]
            merged[-1] = (last[0], max(reach, end), last[2])
        else:
            merged.append((start, end, name))
    return merged
