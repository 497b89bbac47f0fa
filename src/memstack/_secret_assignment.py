"""Is ``<name> = <value>`` a credential? (the judge of the secret filter's assignment
shape: the pattern finds a credential word in a name, an operator and a value; this says
what the name holds and whether the value counts).

The name. It is split into words (``DB_PASSWORD``, ``clientSecret``, ``X-API-Key``,
``aws_secret_access_key``); trailing value words (``_hash``, ``_b64``, ``_value``...)
are dropped, and the last word left, the head, decides its role:

- ``password``: a password word (``password``, ``passwd``, ``passphrase``, ``passcode``,
  ``pwd``, ``pass``), also at the end of a word (``PGPASSWORD``).
- ``credential``: ``secret``, ``token``, ``apikey``, ``credential(s)``, ``bearer``, also at
  the end of a word (``accesstoken``), and ``key``/``auth`` qualified by a credential word
  (``api key``, ``secret_key``, ``private_key``, ``basic_auth``); unless the qualifier
  makes the value a count, cursor or name (``next_page_token``, ``max_token``,
  ``Kubernetes secret``).
- ``weak``: ``key`` or ``auth`` alone or after another word (``key``, ``OPENAI_KEY``).
- none: ``key`` after a word saying it is not a credential (``S3 key``, ``cache key``,
  ``idempotency key``, ``partition_key``, ``primary key``, ``public_key``,
  ``publishable_key``...), and words that merely end like one (``monkey``, ``compass``).

The qualifier is the word before the head in the name, or the prose word just before the
name ("Cache key: ...") when the name is one word.

The value. A ``password`` or ``credential`` name refuses any value that is not a
placeholder (``memstack._tokenness``: empty, ``<redacted>``, ``***``, ``${VAR}``,
``$VAR``, ``{{var}}``, ``None``, ``null``, ``true``...) when written as an assignment:
``=``, ``:=``, ``=>`` (spaced alike on both sides), a quoted key or value, ``key:value``,
or ``key: value`` ending its line or clause, where the name is a password's, an
identifier or not after a prose word (``password: letmein``, ``token: abc``, ``has
api_key: abc``; not "GitHub token: abc", prose). In prose (``is``, ``was``, or a value
followed by more words) a password name refuses what looks like a password and a
credential name what looks like a token; a value that says something about the credential
("missing", "changed", "weak") is not one. A ``weak`` name refuses only what looks like a
token. A value followed by ``(`` or ``[`` is a call or a lookup (``get_token()``,
``config["key"]``), ``pass`` followed by digits a count (``pass=120 fail=3``), ``pwd``
followed by a path the working directory: none is refused.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final, Literal

from memstack._tokenness import passes

__all__ = ["VALUE_WORDS", "Groups", "Role", "judge_assignment", "key_role"]

Role = Literal["password", "credential", "weak"]

Groups = Mapping[str, str | None]
"""A match's named groups; ``None`` for a group that took no part in the match."""

VALUE_WORDS: Final = (
    "value",
    "hash",
    "salt",
    "b64",
    "base64",
    "hex",
    "base",
    "str",
    "string",
    "raw",
    "plain",
    "plaintext",
    "enc",
    "encrypted",
    "data",
    "digest",
    "bytes",
)
"""Words after a credential word that still name its value (``SECRET_KEY_BASE``,
``password_hash``); the assignment pattern accepts these after the noun, no others."""

_PASSWORD_ENDINGS: Final = ("password", "passwd", "passphrase", "passcode")
_PASSWORD_WORDS: Final = frozenset({"pwd", "pass"})
_CREDENTIAL_ENDINGS: Final = ("secret", "token", "apikey", "credential", "credentials", "bearer")
_QUALIFIED: Final = frozenset({"key", "auth"})

_CREDENTIAL_QUALIFIERS: Final = frozenset(
    {
        "api", "access", "secret", "private", "signing", "sign", "signature", "encryption",
        "encrypt", "decryption", "decrypt", "master", "account", "shared", "auth", "client",
        "ssh", "deploy", "app", "application", "consumer", "subscription", "service",
        "license", "licence", "webhook", "session", "admin", "root", "gpg", "pgp", "hmac",
        "jwt", "crypto", "cipher", "aes", "rsa", "ecdsa", "ed25519", "storage", "sas",
        "host", "function", "basic", "http", "proxy", "server", "cookie", "csrf", "mac",
        "kms", "vault", "recovery", "backup", "unlock", "wallet", "seed", "bearer", "token",
        "password",
    }
)  # fmt: skip
"""Words before ``key``/``auth`` that make it a credential (``api key``, ``basic_auth``)."""

_NOT_CREDENTIAL_KEYS: Final = frozenset(
    {
        "s3", "cache", "cached", "idempotency", "idempotence", "partition", "primary",
        "secondary", "sort", "foreign", "object", "map", "dict", "dictionary", "hash", "range",
        "row", "column", "composite", "unique", "natural", "surrogate", "candidate",
        "compound", "cluster", "clustering", "distribution", "shard", "sharding", "routing",
        "lookup", "index", "search", "join", "group", "grouping", "bucket", "redis",
        "memcache", "memcached", "json", "yaml", "toml", "config", "registry", "public",
        "publishable", "keyboard", "piano", "music", "musical", "house", "home", "car",
        "door", "room", "hotel", "locker", "answer", "translation", "i18n", "locale",
        "message", "label", "field", "attribute", "property", "prop", "react", "list",
        "table", "cell", "entry", "record", "item", "dedup", "dedupe", "event", "metadata",
        "order", "idempotent", "escape", "enter", "shift", "control", "ctrl", "alt", "tab",
        "space", "arrow", "hot", "shortcut",
    }
)  # fmt: skip
"""Words before ``key`` that say it is not a credential (``S3 key``, ``partition_key``)."""

_NOT_CREDENTIAL_TOKENS: Final = frozenset(
    {
        "page", "next", "prev", "previous", "continuation", "cursor", "sync", "pagination",
        "max", "min", "num", "total", "input", "output", "prompt", "completion", "special",
        "eos", "bos", "pad", "unk", "cls", "sep", "mask", "start", "end", "stop", "design",
        "kubernetes", "k8s", "sealed",
    }
)  # fmt: skip
"""Words before ``token``/``secret`` that make the value a count, cursor or name
(``next_page_token``, ``max_token``, ``Kubernetes secret``)."""

_WORD: Final = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


def key_role(name: str, before: str | None = None) -> tuple[Role, str] | None:
    """What ``name`` holds, and its head word (see the module docstring); ``before`` is
    the prose word just before the name, if any. ``name`` is at most a few dozen
    characters (the pattern bounds it)."""
    words = [w.lower() for w in _WORD.findall(name)]
    while len(words) > 1 and words[-1] in VALUE_WORDS:
        words.pop()
    if not words:
        return None
    head = words[-1]
    qualifier = words[-2] if len(words) > 1 else (before or "").lower() or None
    role = _head_role(head, qualifier)
    return None if role is None else (role, head)


def _head_role(head: str, qualifier: str | None) -> Role | None:
    if head.endswith(_PASSWORD_ENDINGS) or head in _PASSWORD_WORDS:
        return "password"
    if head.endswith(_CREDENTIAL_ENDINGS):
        return None if qualifier in _NOT_CREDENTIAL_TOKENS else "credential"
    if head.endswith("key") and head[:-3] in _CREDENTIAL_QUALIFIERS:
        return "credential"  # apikey, secretkey, privatekey
    if head not in _QUALIFIED:
        return None
    if qualifier in _CREDENTIAL_QUALIFIERS:
        return "credential"
    if qualifier in _NOT_CREDENTIAL_KEYS:
        return None
    return "weak"


def judge_assignment(groups: Groups) -> bool:
    """Is the matched ``<name> <op> <value>`` a credential? The groups: ``pre`` (a prose
    word before the name), ``k``, ``n``, ``s`` (the name: before the credential word, the
    word, value words after it), ``q`` (a quote closing the key), ``o`` (the operator),
    ``sp`` (spaces after it), ``vq`` (a quote opening the value), ``v`` (the value) and
    ``t`` (a peek at what follows it)."""
    found = key_role("".join(groups[g] or "" for g in ("k", "n", "s")), groups["pre"])
    value, after = groups["v"] or "", groups["t"] or ""
    if found is None or after.startswith(("(", "[")):  # a call or a lookup: a reference
        return False
    role, head = found
    if role == "weak":
        return passes(value, "token")
    if (head == "pass" and value.isdigit()) or (head == "pwd" and value.startswith(("/", "~"))):
        return False  # a count ("pass=120 fail=3"), the working directory
    if _assigned(groups, role, head):
        return passes(value, "present")
    return passes(value, "password" if role == "password" else "token")


_CODE_OPS: Final = frozenset({"=", ":=", "=>"})
_CLAUSE_ENDS: Final = ",;)]}#&|"


def _assigned(groups: Groups, role: Role, head: str) -> bool:
    """Written as an assignment (any value counts) rather than said in prose?"""
    op, value, after = (groups["o"] or "").strip().lower(), groups["v"] or "", groups["t"] or ""
    if groups["q"] or groups["vq"] or (op == ":" and not groups["sp"]):
        return True  # "password": ..., token: "abc", pwd:qwerty
    if op in _CODE_OPS:  # a = b and a=b, not "pass api_key= or set it"
        return (groups["o"] or "")[:1].isspace() == bool(groups["sp"])
    if head == "pass" or _said_of(value) or not _ends_clause(value, after):
        return False  # "boarding pass: B12", "API key: missing", "secret: the launch is..."
    if op != ":":  # "my password is letmein." (not "the token is abc.")
        return role == "password"
    # "password: letmein", "token: abc", "has api_key: abc", "API key: abc" (but
    # "GitHub token: abc" is prose: a word before a one-word name)
    before, identifier = groups["pre"], bool(groups["k"] or groups["s"])
    return (
        role == "password"
        or identifier
        or before is None
        or before.lower() in _CREDENTIAL_QUALIFIERS
    )


def _ends_clause(value: str, after: str) -> bool:
    """The value ends its line, clause or sentence (what follows is not more prose)."""
    rest = after.lstrip(" \t\"'`")
    return not rest or rest[0] in _CLAUSE_ENDS or value.endswith((".", "!", "?"))


def _said_of(value: str) -> bool:
    """A word that says something about a credential rather than being one ("changed",
    "expiring", "reset", "missing", "weak")."""
    word = value.rstrip(".!?").lower()
    return word.isalpha() and (word.endswith(("ed", "ing")) or word in _STATEMENT_WORDS)


_STATEMENT_WORDS: Final = frozenset(
    {
        "reset", "set", "required", "correct", "incorrect", "wrong", "weak", "strong",
        "secure", "insecure", "valid", "invalid", "missing", "blank", "lost", "known",
        "unknown", "new", "old", "same", "different", "long", "short", "fine", "ok", "okay",
        "good", "bad", "safe", "unsafe", "there", "here", "gone", "forgotten", "hidden",
    }
)  # fmt: skip
