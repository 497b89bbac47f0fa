"""The one secret filter: the trust boundary in front of every durable write.

``secret_kind(text)`` names the first credential shape found in ``text`` (or ``None``);
``looks_like_secret(text)`` says whether there is one; ``find_secret(fields)`` walks
structured input (metadata included, keys and values, recursively) and says which field
holds one. Every write path of memstack calls these, and nothing else decides.

Linear time by construction: the shapes are RE2 regular expressions (google-re2: an
automaton, no backtracking), so a scan is linear in the text whatever it holds. The shapes
are grouped in three tiers, each compiled into one alternation and scanned once, most
specific first, so a key inside an assignment is reported as the key:

1. ``exact``: a known vendor prefix followed by a run of the vendor's alphabet
   (``ghp_``, ``AKIA``, ``pypi-AgE``, ``dop_v1_``, ``AC`` + 32 hex, a PEM header...): a
   match is a secret.
2. ``framed``: a frame that says "credential here" (``AccountKey=``, ``sig=``, a URL's
   ``user:pass@``, ``Authorization:``, ``Bearer``, three dotted base64 runs): the value in
   the frame must also pass a token-ness check.
3. ``assignment``: a name holding a credential word (``password``, ``DB_PASSWORD``,
   ``api key``, ``clientSecret``, ``refresh_token``...) followed by ``=``, ``:``, ``:=``,
   ``=>``, ``is`` or ``was``, then a value; ``memstack._secret_assignment`` judges it.
   A password or credential name written as an assignment (``password = letmein``,
   ``token: abc``, ``{"api_key": "x"}``) refuses any value but a placeholder; in prose
   ("my password is hunter2") a value that looks like a password or a token; a bare
   ``key``/``auth`` (``OPENAI_KEY=``) a value that looks like a token; a name that is not
   a credential's (``S3 key``, ``cache key``, ``partition_key``, ``next_page_token``)
   nothing.

The token-ness checks (``memstack._tokenness``) keep prose, templates and
placeholders out: "The password was changed", ``postgres://USER:PASSWORD@HOST/DB``,
``Bearer <api key>``, ``password: ${DB_PASSWORD}``, ``token = get_token()``. A frame
whose value fails is skipped and the scan goes on after its value, so the number of
candidates, and the Python work, stays linear too. False positives are preferable to
persisting a real key.

Structured input: a dict key that names a credential (``{"password": "letmein"}``,
``{"clientSecret": "x"}``) is judged with its value as the assignment it stands for, and a
quote escaped by JSON inside a string (a tool's arguments: ``{\"token\": \"abc\"}``)
counts as a quote. ``memstack.redaction`` replaces what this finds, for the one
path that must not refuse.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

import re2

from memstack._gitleaks import GITLEAKS, documentation_example
from memstack._json import JSON
from memstack._payment import CARD, IBAN, judge_card, judge_iban
from memstack._secret_assignment import VALUE_WORDS, Groups, judge_assignment, key_role
from memstack._secret_prose import CODE, PASSWORD, TOKEN, judge_code, judge_password, judge_token
from memstack._tokenness import Level, passes
from memstack.errors import InvalidInput

__all__ = [
    "KINDS",
    "MAX_CANDIDATES",
    "SECRET_PATTERNS",
    "TOO_MANY_CANDIDATES",
    "SecretFound",
    "SecretShape",
    "find_secret",
    "looks_like_secret",
    "refuse_secrets",
    "secret_kind",
    "secret_spans",
]


@dataclass(frozen=True, kw_only=True)
class SecretShape:
    """One credential shape: ``pattern`` is RE2 syntax over bytes; for framed and
    assignment shapes, ``judge`` says whether the captured value is a credential."""

    name: str
    pattern: str
    judge: Callable[[Groups], bool] | None = None


def _level(level: Level) -> Callable[[Groups], bool]:
    return lambda groups: passes(groups["v"] or "", level)


def _header(groups: Groups) -> bool:
    # With a scheme (``Basic dXNl...``) the password level; without one, only a real
    # token (not "Authorization: pending approval").
    return passes(groups["v"] or "", "password" if groups["scheme"] else "token")


def _keyed_value(groups: Groups) -> bool:
    # The key names what the value is: a credential's name refuses any value but a
    # placeholder, a bare "key" or "auth" only a token.
    found = key_role(groups["k"] or "")
    if found is None:
        return False
    return passes(groups["v"] or "", "token" if found[0] == "weak" else "present")


MAX_CANDIDATES: Final = 512
"""How many framed values one scan judges before it refuses the text as a whole."""
TOO_MANY_CANDIDATES: Final = "too_many_candidates"

_VALUE: Final = r"""[^\s"'`,;<>()\[\]{}\\]{1,64}"""

EXACT: Final = (
    SecretShape(
        name="private_key", pattern=r"-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----"
    ),
    SecretShape(name="anthropic_key", pattern=r"\bsk-ant-[A-Za-z0-9_-]{16}"),
    SecretShape(
        name="openai_key",
        pattern=r"\bsk-(?:(?:proj|svcacct|admin)-[A-Za-z0-9_-]{20}|[A-Za-z0-9]{20})",
    ),
    SecretShape(
        name="github_token", pattern=r"\b(?:gh[pousr]_[A-Za-z0-9]{30}|github_pat_[A-Za-z0-9_]{22})"
    ),
    SecretShape(  # Stripe's live keys and test secret keys (a pk_test_ key is public by design)
        name="stripe_key", pattern=r"\b(?:(?:sk|rk|pk)_live|(?:sk|rk)_test)_[A-Za-z0-9]{10}"
    ),
    SecretShape(name="aws_access_key", pattern=r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    SecretShape(name="slack_token", pattern=r"\bxox[abposr]-[A-Za-z0-9-]{10}"),
    SecretShape(
        name="slack_webhook",
        pattern=r"hooks\.slack\.com/services/T[A-Za-z0-9]+/B[A-Za-z0-9]+/[A-Za-z0-9]{16}",
    ),
    SecretShape(name="google_api_key", pattern=r"\bAIza[0-9A-Za-z_-]{35}"),
    SecretShape(name="huggingface_token", pattern=r"\bhf_[A-Za-z0-9]{30}"),
    SecretShape(name="npm_token", pattern=r"\bnpm_[A-Za-z0-9]{36}"),
    SecretShape(name="gitlab_token", pattern=r"\bglpat-[A-Za-z0-9_-]{20}"),
    SecretShape(name="sendgrid_key", pattern=r"\bSG\.[A-Za-z0-9_-]{16,32}\.[A-Za-z0-9_-]{16}"),
    SecretShape(name="jwt", pattern=r"\beyJ[A-Za-z0-9_-]{6,}\.[A-Za-z0-9_-]{6,}\.[A-Za-z0-9_-]{6}"),
    SecretShape(name="twilio_sid", pattern=r"\b(?:AC|SK)[0-9a-f]{32}"),
    SecretShape(name="pypi_token", pattern=r"\bpypi-AgE[A-Za-z0-9_-]{16}"),
    SecretShape(name="digitalocean_token", pattern=r"\bdo[opr]_v1_[0-9a-f]{32}"),
    SecretShape(name="shopify_token", pattern=r"\bshp(?:at|ca|pa|ss)_[0-9a-fA-F]{32}"),
    SecretShape(name="databricks_token", pattern=r"\bdapi[0-9a-f]{32}"),
    SecretShape(name="mailgun_key", pattern=r"\bkey-[0-9a-f]{32}"),
    SecretShape(name="telegram_bot_token", pattern=r"[0-9]{6,12}:AA[A-Za-z0-9_-]{30}"),
    SecretShape(name="terraform_token", pattern=r"\.atlasv1\.[A-Za-z0-9_-]{20}"),
    SecretShape(
        name="square_token",
        pattern=r"\b(?:EAAA[A-Za-z0-9_-]{40}|sq0(?:atp|csp|idp)-[A-Za-z0-9_-]{20})",
    ),
    SecretShape(name="firebase_key", pattern=r":APA91b[A-Za-z0-9_-]{40}"),
    SecretShape(
        name="gcp_service_account",
        pattern=r"\btype(?:\\?[\"'])?[ \t]*[:=][ \t]*(?:\\?[\"'])?service_account\b"
        r"|\bprivate_key_id(?:\\?[\"'])?[ \t]*[:=][ \t]*(?:\\?[\"'])?[0-9a-f]{40}",
    ),
)

FRAMED: Final = (
    SecretShape(
        name="aws_secret",
        pattern=r"(?i)aws_secret_access_key(?:\\?[\"'])?\s*[:=]\s*(?:\\?[\"'])?(?P<v>"
        + _VALUE
        + ")",
        judge=_level("password"),
    ),
    SecretShape(
        name="azure_key",
        pattern=r"(?i)(?:AccountKey|SharedAccessKey)\s*=\s*(?P<v>[A-Za-z0-9+/=%]{1,64})",
        judge=_level("token"),
    ),
    SecretShape(
        name="azure_sas", pattern=r"[?&]sig=(?P<v>[A-Za-z0-9%+/=]{1,64})", judge=_level("token")
    ),
    SecretShape(
        name="npm_token",
        pattern=r"(?i)_authToken\s*=\s*(?:\\?[\"'])?(?P<v>" + _VALUE + ")",
        judge=_level("password"),
    ),
    SecretShape(
        name="connection_string",
        pattern=r"\b[A-Za-z][A-Za-z0-9+.-]{0,30}://[^\s:/@]{0,64}:(?P<v>[^\s@/]{1,64})@[^\s/@]",
        judge=_level("present"),
    ),
    SecretShape(
        name="authorization_header",
        pattern=r"(?i)\bauthorization(?:\\?[\"'])?\s*:\s*(?:\\?[\"'])?"
        r"(?:(?P<scheme>bearer|basic|token|bot|digest|ssws|apikey|key)\s+)?(?P<v>[A-Za-z0-9._~+/=-]{1,64})",
        judge=_header,
    ),
    SecretShape(
        name="bearer_token",
        pattern=r"(?i)\bbearer\s+(?P<v>[A-Za-z0-9._~+/=-]{1,64})",
        judge=_level("token"),
    ),
    SecretShape(  # .NET appSettings and the like: <add key="ApiToken" value="..." />
        name="keyed_value",
        pattern=r"(?i)\bkey\s*=\s*\\?[\"'](?P<k>[A-Za-z0-9_.:-]{1,64})\\?[\"']\s+value\s*=\s*\\?[\"']"
        r"(?P<v>[^\"'\\\s]{1,64})",
        judge=_keyed_value,
    ),
    SecretShape(  # JWTs without their header, Discord bot tokens, signed cookies
        name="dotted_token",
        pattern=r"\b(?P<v>[A-Za-z0-9_-]{20,}\.[A-Za-z0-9_-]{6,}\.[A-Za-z0-9_-]{20})",
        judge=_level("random"),
    ),
)

_NOUN: Final = r"pass(?:word|wd|phrase|code)?|pwd|secret|token|apikey|auth|credentials?|bearer|key"

ASSIGNMENT: Final = (
    SecretShape(
        name="credential_assignment",
        # [prose word] name (a credential word, what comes before it in the identifier,
        # value words after it), [quote], operator, [quote], value, and a peek at what
        # follows (a call? the end of the clause?). The scan resumes after the value.
        pattern=r"(?i)(?:(?P<pre>\b[A-Za-z0-9]{1,20})[ \t]{1,16})?"
        r"(?P<k>[A-Za-z0-9_.-]{0,40}?)(?P<n>" + _NOUN + r")"
        r"(?P<s>(?:[_.-]?(?:" + "|".join(VALUE_WORDS) + r"))*)(?P<q>(?:\\?[\"'])?)"
        r"(?P<o>[ \t]{0,16}(?::=|=>|=|:)|[ \t]{1,16}(?:is|was)(?:[ \t]{0,16}:)?)(?P<sp>[ \t]{0,16})"
        r"(?P<vq>(?:\\?[\"'`])?)(?P<v>" + _VALUE + r")(?P<t>[^\r\n]{0,16})",
        judge=judge_assignment,
    ),
)

PROSE: Final = (
    SecretShape(name="password_in_prose", pattern=PASSWORD, judge=judge_password),
    SecretShape(name="code_in_prose", pattern=CODE, judge=judge_code),
    SecretShape(name="token_beside_word", pattern=TOKEN, judge=judge_token),
)
"""Credentials said in a sentence (``memstack._secret_prose``)."""

PAYMENT: Final = (
    SecretShape(name="payment_card", pattern=CARD, judge=judge_card),
    SecretShape(name="iban", pattern=IBAN, judge=judge_iban),
)
"""Payment data (``memstack._payment``): refused unless ``MEMSTACK_ALLOW_PAYMENT_DATA``."""

SECRET_PATTERNS: Final[tuple[SecretShape, ...]] = (
    *EXACT,
    *FRAMED,
    *ASSIGNMENT,
    *PROSE,
    *PAYMENT,
)
"""Every shape the filter knows, in the order they are tried."""


KINDS: Final = frozenset(
    {shape.name for shape in SECRET_PATTERNS}
    | {rule.kind for rule in GITLEAKS.rules}
    | {"basic_credentials"}
)
"""Every kind ``secret_kind`` can name but ``too_many_candidates``."""


def _options() -> Any:
    options = re2.Options()
    options.encoding = re2.Options.Encoding.LATIN1  # bytes in, one byte per character
    return options


class _Tier:
    """Shapes compiled into one alternation. Each alternative is wrapped in a marker
    group ``_<i>`` so a match says which shape it is; named groups are renamed per shape."""

    def __init__(self, shapes: tuple[SecretShape, ...]) -> None:
        self.shapes = shapes
        parts = [f"(?P<_{i}>{_rename(s.pattern, i)})" for i, s in enumerate(shapes)]
        self.regex: Any = re2.compile("|".join(parts).encode(), options=_options())
        names = {name.decode(): index for name, index in self.regex.groupindex.items()}
        self.markers = [names[f"_{i}"] for i in range(len(shapes))]
        self.groups = [
            {
                name.removesuffix(f"_{i}"): index
                for name, index in names.items()
                if name.endswith(f"_{i}") and name != f"_{i}"
            }
            for i in range(len(shapes))
        ]

    def first(self, data: bytes, budget: int) -> tuple[str | None, int]:
        """The name of the first shape matched in ``data`` whose value passes its judge,
        and what is left of ``budget`` (the values the caller still lets it judge)."""
        pos = 0
        while (match := self.regex.search(data, pos)) is not None:
            i = next(i for i, marker in enumerate(self.markers) if match.start(marker) >= 0)
            shape = self.shapes[i]
            if shape.judge is None and not documentation_example(match.group(self.markers[i])):
                return shape.name, budget
            if budget == 0:
                return TOO_MANY_CANDIDATES, 0
            if shape.judge is not None and self._judged(match, i):
                return shape.name, budget
            budget -= 1
            # On after the value (what follows it was only peeked at); a value is never
            # empty and comes after the frame's start, so the scan moves on.
            pos = match.end(self.groups[i]["v"]) if shape.judge else match.end()
        return None, budget

    def _judged(self, match: Any, i: int) -> bool:
        """Does shape ``i``'s judge take the matched value for a credential?"""
        judge, groups = self.shapes[i].judge, self.groups[i]
        return (
            judge is not None
            and not documentation_example(match.group(groups["v"]))
            and judge(_values(match, groups))
        )

    def spans(self, data: bytes, budget: int) -> Iterator[tuple[int, int, str]]:
        """Every credential in ``data``: its byte span (a known shape's match, a frame's
        or an assignment's value) and its shape's name. ``budget`` as for ``first``."""
        pos = 0
        while (match := self.regex.search(data, pos)) is not None:
            i = next(i for i, marker in enumerate(self.markers) if match.start(marker) >= 0)
            shape, value = self.shapes[i], self.groups[i].get("v")
            if shape.judge is None:
                if not documentation_example(match.group(self.markers[i])):
                    yield match.start(self.markers[i]), match.end(self.markers[i]), shape.name
                pos = match.end()
                continue
            if budget == 0:
                return
            budget -= 1
            if self._judged(match, i):
                yield match.start(value), match.end(value), shape.name
            pos = match.end(value)


def _values(match: Any, groups: dict[str, int]) -> dict[str, str | None]:
    return {
        name: None if match.start(i) < 0 else match.group(i).decode("utf-8", "replace")
        for name, i in groups.items()
    }


_GROUPS: Final = ("v", "o", "n", "q", "sp", "scheme", "pre", "k", "s", "vq", "t", "gap")


def _rename(pattern: str, i: int) -> str:
    for group in _GROUPS:
        pattern = pattern.replace(f"(?P<{group}>", f"(?P<{group}_{i}>")
    return pattern


_TIERS: Final = tuple(_Tier(tier) for tier in (EXACT, FRAMED, ASSIGNMENT, PROSE, PAYMENT))


def secret_kind(text: str) -> str | None:
    """The name of the most specific credential shape ``text`` contains, or ``None``.

    A text with more than ``MAX_CANDIDATES`` credential frames whose values all look
    harmless is refused as ``"too_many_candidates"``: no real note holds that many, and
    judging them all would make the work per write unbounded.
    """
    data = text.encode("utf-8", "surrogatepass")
    kind = _kind(data)
    if kind is not None:
        return kind
    for _, _, blob in _decoded(data):
        kind = TOO_MANY_CANDIDATES if blob is None else _wrapped(blob)
        if kind is not None:
            return kind
    return None


def _wrapped(blob: bytes) -> str | None:
    """The credential a decoded blob holds: any the filter knows, or the whole blob a
    ``user:password`` pair (an HTTP Basic credential)."""
    kind = _kind(blob)
    if kind is None and (pair := _USER_PASS.fullmatch(blob)) is not None:
        if passes(pair.group(1).decode("latin-1"), "password"):
            return "basic_credentials"
    return kind


_USER_PASS: Final = re.compile(rb"[A-Za-z0-9_.@+-]{1,64}:([\x21-\x7e]{1,64})")


def _kind(data: bytes) -> str | None:
    budget = MAX_CANDIDATES
    for tier in _TIERS:
        kind, budget = tier.first(data, budget)
        if kind is not None:
            return kind
    return GITLEAKS.first(data, MAX_CANDIDATES)


_BASE64_RUN: Final = re2.compile(
    rb"(?:^|[^A-Za-z0-9+/_-])(?:[I-Za-f][A-Za-z0-9+/_-]{3}){4,}[A-Za-z0-9+/_-]{0,3}={0,2}",
    options=_options(),
)
"""A run of base64 that can decode to text: each group of four begins with one of ``I``
to ``f`` (the first six bits of a printable ASCII byte), so the runs of an identifier,
a path or a digest are not decoded (one run in about fifty passes by chance)."""
_PERCENT: Final = re2.compile(rb"%[0-9A-Fa-f]{2}", options=_options())
_NOT_BASE64: Final = frozenset(range(256)) - frozenset(
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/_-"
)
_PRINTABLE: Final = bytes(range(0x20, 0x7F)) + b"\t\n\r"


def _decoded(data: bytes) -> Iterator[tuple[int, int, bytes | None]]:
    """What ``data`` holds wrapped once: each base64 run (16 characters or more) that
    decodes to text, and the whole text percent-decoded when it holds an escape; with the
    span it came from; and the whole text with its string escapes undone, a level at a
    time (``_unescaped``). Each byte of ``data`` is decoded a bounded number of times, so
    this stays linear, and what is decoded is not decoded again. After ``MAX_CANDIDATES``
    runs, ``None`` in place of the decoded bytes: too many to judge."""
    for n, run in enumerate(_BASE64_RUN.finditer(data)):  # no capture: RE2 stays on its DFA
        if n == MAX_CANDIDATES:
            yield 0, len(data), None
            return
        start = run.start() + (data[run.start()] in _NOT_BASE64)
        blob = data[start : run.end()]
        alphabet = b"-_" if blob.translate(None, b"-_") != blob else b"+/"
        try:
            decoded = base64.b64decode(blob + b"=" * (-len(blob) % 4), altchars=alphabet)
        except (binascii.Error, ValueError):
            continue
        if len(decoded) >= 8 and len(decoded.translate(None, _PRINTABLE)) * 10 <= len(decoded):
            yield start, run.end(), decoded
    if _PERCENT.search(data) is not None:
        # %XX as quoted-printable's =XX: binascii decodes it at C speed, where
        # urllib.parse takes 100 ms for a megabyte of escapes
        yield 0, len(data), binascii.a2b_qp(data.replace(b"=", b"=3D").replace(b"%", b"="))
    yield from ((0, len(data), view) for view in _unescaped(data))


_ESCAPE_LEVELS: Final = 3
"""How deep string escapes are undone: a tool call's arguments are JSON in a JSON string,
and a message quoting one escapes them once more."""


def _unescaped(data: bytes) -> Iterator[bytes]:
    """``data`` with its string escapes (``\\n``, ``\\t``, ``\\r``, ``\\"``, ``\\'``,
    ``\\/``, ``\\\\``) undone, once per level while any is left: ``{\\"pwd\\": \\"...\\"}``
    escaped twice, or a config file's ``\\npass=...`` whose newline became two characters,
    read as written. Bytes' own replace does it at C speed; any other backslash stays."""
    view = data
    for _ in range(_ESCAPE_LEVELS):
        if b"\\" not in view:
            return
        unescaped = _unescape(view)
        if unescaped == view:
            return
        view = unescaped
        yield view


def _unescape(data: bytes) -> bytes:
    # an escaped backslash escapes nothing after it: it is set aside as a control byte
    # the text does not hold while the others are undone; in a text holding all of them,
    # it is undone last, which may read one "\\\\n" as a backslash and a newline
    aside = next((byte for byte in _ASIDE if byte not in data), None)
    if aside is not None:
        data = data.replace(b"\\\\", aside)
    for escape, char in _ESCAPES:
        data = data.replace(escape, char)
    return data.replace(aside or b"\\\\", b"\\")


_ASIDE: Final = tuple(bytes([byte]) for byte in (*range(0x09), *range(0x0E, 0x20), 0x7F))


_ESCAPES: Final = tuple(
    (b"\\" + letter, char)
    for letter, char in (
        (b"n", b"\n"),
        (b"t", b"\t"),
        (b"r", b"\r"),
        (b'"', b'"'),
        (b"'", b"'"),
        (b"/", b"/"),
    )
)


def secret_spans(data: bytes) -> list[tuple[int, int, str]]:
    """Every credential ``secret_kind`` would name in ``data`` (UTF-8): byte spans and
    kinds, for ``memstack.redaction`` to cut out."""
    found = [span for tier in _TIERS for span in tier.spans(data, MAX_CANDIDATES)]
    found += GITLEAKS.spans(data, MAX_CANDIDATES)
    if not found:  # wrapped: the whole wrapped run is cut
        for start, end, blob in _decoded(data):
            kind = TOO_MANY_CANDIDATES if blob is None else _wrapped(blob)
            if kind is not None:
                found.append((start, end, kind))
    return found


def looks_like_secret(text: str) -> bool:
    """True when ``text`` contains anything shaped like a credential."""
    return secret_kind(text) is not None


@dataclass(frozen=True, kw_only=True)
class SecretFound:
    """Where ``find_secret`` found a credential: ``field`` is a path (``value``,
    ``metadata.auth.token``, ``tags[2]``); ``in_key`` when a dict key itself is the
    secret (then ``field`` is the dict holding it). Never holds the secret."""

    field: str
    kind: str
    in_key: bool = False

    def message(self, where: str) -> str:
        what = f"a key in {self.field}" if self.in_key else self.field
        return (
            f"not stored: {what} looks like a secret ({self.kind.replace('_', ' ')}); "
            f"credentials are never kept in {where}. Remove it and try again."
        )


def find_secret(fields: Mapping[str, JSON]) -> SecretFound | None:
    """Where the first credential in ``fields`` is, or ``None``.

    ``fields`` maps field names to JSON; inside, every string is checked, dict keys too.
    """
    for path, text, in_key in _strings(fields):
        kind = secret_kind(text)
        if kind is not None:
            return SecretFound(field=path, kind=kind, in_key=in_key)
    return None


def refuse_secrets(fields: Mapping[str, JSON], *, where: str) -> None:
    """Raise ``InvalidInput`` naming the field when ``fields`` hold a credential;
    ``where`` completes "credentials are never kept in ..."."""
    found = find_secret(fields)
    if found is not None:
        raise InvalidInput(found.message(where), field=found.field)


def _strings(fields: Mapping[str, JSON]) -> Iterator[tuple[str, str, bool]]:
    stack: list[tuple[str, JSON]] = [
        (name, value) for name, value in reversed(list(fields.items()))
    ]
    while stack:
        path, value = stack.pop()
        if isinstance(value, str):
            yield path, value, False
        elif isinstance(value, dict):
            for key, item in reversed(list(value.items())):
                yield path, key, True
                stack.append((f"{path}.{key[:40]}", item))
                if isinstance(item, str) and _names_credential(key):
                    # {"password": "letmein"} is the assignment it stands for
                    stack.append((f"{path}.{key[:40]}", _assignment(key, item)))
        elif isinstance(value, list):
            stack.extend((f"{path}[{i}]", item) for i, item in reversed(list(enumerate(value))))


def _names_credential(key: str) -> bool:
    """Is a dict key a credential's name (``password``, ``api_key``, ``clientSecret``; not
    prose such as "I keep my passwords in 1Password")?"""
    return _IDENTIFIER.fullmatch(key) is not None and key_role(key) is not None


_IDENTIFIER: Final = re.compile(r"[A-Za-z0-9_.-]{1,64}")


def _assignment(key: str, value: str) -> str:
    return f'"{key}": "{value}"'
