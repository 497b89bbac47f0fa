"""Is a value a credential, or prose, a template or a placeholder? (the secret filter's
second half: the patterns find where a value sits, these checks judge the value).

Four levels, strictest first:

- ``random``: what a run of random base64 looks like: at least 16 characters holding
  lower case, upper case and digits (``memstack.storage.vector_search`` does not).
- ``token``: what an API key looks like: at least 16 characters, at least two of
  lower case / upper case / digits, and a digit unless both cases appear (so hex digests
  and base64 pass, ``db-credentials`` and ``the`` do not).
- ``password``: what someone types as a password: at least 6 characters and a digit, a
  symbol other than ``-_.``, a case change inside the word, or at least 16 characters
  (a passphrase). ``changed`` and ``created_at`` are not passwords; ``hunter22`` is.
- ``present``: anything that is not a placeholder (a URL's password, as in
  ``postgres://user:pass@host``).

No level accepts a placeholder: ``<...>``, ``{...}``, ``{{var}}``, ``[...]``, ``$VAR``,
``${VAR}``, ``%s``, an empty query parameter (``&...``), an all-capitals name (``USER``,
``PASSWORD``, ``YOUR_TOKEN``), masks (``xxx``, ``***``, ``...``), hint words
(``changeme``, ``redacted``, ``placeholder``, ``dummy``, ``none``, ``null``, ``nil``,
``undefined``, ``todo``, ``tbd``, ``empty``, ``unset``, ``true``, ``false``, ``yes``,
``no``, ``on``, ``off``), ``your-key-here``-style hints, and references to where the
value lives (``os.environ``, ``process.env``, ``settings.``, ``config.``, ``self.``...).
Nor a key that is public by design: Stripe's publishable test keys (``pk_test_``; a
live publishable key, ``pk_live_``, is still dropped).
Only the first ``MAX_JUDGED_CHARS`` characters of a value are judged, so the work per
value is bounded.
"""

from __future__ import annotations

import re
import string
from typing import Final, Literal

__all__ = ["MAX_JUDGED_CHARS", "Level", "is_placeholder", "passes"]

Level = Literal["random", "token", "password", "present"]

MAX_JUDGED_CHARS: Final = 64
_TRIM: Final = "\"'`.,;:!?"
_ALL_CAPS_NAME: Final = re.compile(r"[A-Z][A-Z_-]*")
_MASK: Final = re.compile(r"x{3,}|\*{3,}|\.{3,}|•{3,}", re.IGNORECASE)
_HINT_WORDS: Final = frozenset(
    {
        "changeme", "redacted", "placeholder", "dummy", "none", "null", "nil", "undefined",
        "todo", "tbd", "empty", "unset", "true", "false", "yes", "no", "on", "off",
    }
)  # fmt: skip
_LOWER: Final = frozenset(string.ascii_lowercase)
_UPPER: Final = frozenset(string.ascii_uppercase)
_DIGITS: Final = frozenset(string.digits)
_WORDISH: Final = _LOWER | _UPPER | _DIGITS | frozenset("-_.")
_LOOKUPS: Final = (
    "os.environ",
    "os.getenv",
    "process.env",
    "env.",
    "getenv",
    "secrets.",
    "settings.",
    "config.",
    "self.",
    "this.",
)
_PUBLIC: Final = ("pk_test_",)


def passes(value: str, level: Level) -> bool:
    """True when ``value`` is credential-like at ``level`` (see the module docstring)."""
    raw = value[:MAX_JUDGED_CHARS]
    value = raw.strip(_TRIM)
    if not value or is_placeholder(value) or raw.endswith("..."):  # elided: "msk_..."
        return False
    if level == "present":
        return True
    chars = frozenset(value)
    lower, upper, digit = bool(chars & _LOWER), bool(chars & _UPPER), bool(chars & _DIGITS)
    if level == "random":
        return len(value) >= 16 and lower and upper and digit
    if level == "token":
        return len(value) >= 16 and lower + upper + digit >= 2 and (digit or (lower and upper))
    symbol = bool(chars - _WORDISH)
    inner_case = lower and bool(_UPPER.intersection(value[1:]))
    return len(value) >= 6 and (digit or symbol or inner_case or len(value) >= 16)


def is_placeholder(value: str) -> bool:
    """A value that stands for a credential without being one, or a public key (see the
    module docstring)."""
    low = value.lower()
    return (
        value[0] in "<{[$%&="
        or value[-1] in ">}]"
        or _ALL_CAPS_NAME.fullmatch(value) is not None
        or _MASK.search(value) is not None
        or low in _HINT_WORDS
        or low.startswith(("your", *_LOOKUPS))
        or value.startswith(_PUBLIC)
        or low.endswith("here")
    )
