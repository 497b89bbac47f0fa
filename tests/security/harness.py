"""What the every-write-path test needs besides the paths themselves: the corpus tokens
to look for, the tally of one path, and the bytes of every store it wrote (SQLite files,
PostgreSQL rows, Redis keys and values).

A credential's tokens (``needles``) are found without the filter: the random-looking
runs of its text (a key's body), or else the words of it that the filter's redaction
removes (``letmein`` of ``password = letmein``) and no other text holds; words under five
characters (``abc`` of ``token=abc``) are too short to look for in a binary file and are
left to the refusal count.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
import redis
from psycopg import sql

from memstack.errors import InvalidInput
from memstack.redaction import redact
from tests.longterm.secret_corpus import ALL_BENIGN, ALL_SECRETS
from tests.security.fresh_corpus import CREDENTIALS, LOOKALIKES


def _labelled(corpus: dict[str, list[str]]) -> list[tuple[str, str]]:
    return [
        (f"issue 43 {kind}/{i}", text)
        for kind, texts in corpus.items()
        for i, text in enumerate(texts)
    ]


SECRETS = ALL_SECRETS + _labelled(CREDENTIALS)
BENIGN = ALL_BENIGN + _labelled(LOOKALIKES)
"""The corpora of issues 30 and 43: every credential and look-alike both hold."""
_BENIGN_TEXT = " ".join(text for _, text in BENIGN).lower()
_KEPT_TEXT = " ".join(redact(text) for _, text in SECRETS).lower()
"""What the credential texts hold besides their credentials (``guest`` of
``amqp://guest:<password>@rabbit``)."""
_RUN = re.compile(r"[A-Za-z0-9]{5,}")
_NUMBER = re.compile(r"[0-9][0-9 -]{11,}[0-9]")


def needles(text: str) -> list[str]:
    """The tokens of a credential text to look for in storage, lower case (a keyword
    index keeps words in lower case)."""
    runs = _RUN.findall(text)
    found = [r for r in runs if _random_looking(r)]
    if all(r.isdigit() for r in found) and (numbers := _NUMBER.findall(text)):
        # a card or an account number: its groups of digits are in any store's ids and
        # times by chance, the number as written is not
        return sorted(set(numbers))
    if not found:  # a typed password: the words redaction takes out, found nowhere else
        kept = set(_RUN.findall(redact(text)))
        found = [
            r
            for r in runs
            if r not in kept and r.lower() not in _BENIGN_TEXT and r.lower() not in _KEPT_TEXT
        ]
    return sorted({r.lower() for r in found})


def _random_looking(run: str) -> bool:
    """Digits among letters, or letters whose case keeps changing and runs in capitals
    too (a random token, not ``RootManageSharedAccessKey``)."""
    digits = sum(ch.isdigit() for ch in run)
    pairs = list(itertools.pairwise(run))
    changes = sum(a.isupper() != b.isupper() for a, b in pairs)
    capitals = sum(a.isupper() and b.isupper() for a, b in pairs)
    return (len(run) >= 12 and 2 <= digits < len(run) - 1) or (
        len(run) >= 16 and changes >= 6 and capitals >= 2
    )


ALL_NEEDLES: dict[str, list[str]] = {label: needles(text) for label, text in SECRETS}
BENIGN_TOKENS: dict[str, list[str]] = {
    label: sorted({r.lower() for r in _RUN.findall(text) if _random_looking(r)})
    for label, text in BENIGN
}
"""The random-looking runs of the benign texts (a uuid, a sha, a public key): a stored
one must be found where the credentials must not, or the search proves nothing."""


def accepts(check: Callable[[str], object]) -> Callable[[str], bool]:
    """A field's own format check (not the secret filter) as a yes/no: whether a text
    can be placed in the field at all."""

    def fits(text: str) -> bool:
        try:
            check(text)
        except (InvalidInput, ValueError):
            return False
        return True

    return fits


def anything(text: str) -> bool:
    return True


@dataclass
class Tally:
    """One path's figures: credentials caught of those placed, benign texts refused of
    those placed, per path and per field."""

    path: str
    caught: int = 0
    placed: int = 0
    refused: int = 0
    benign: int = 0
    missed: list[str] = field(default_factory=list)
    refused_benign: list[str] = field(default_factory=list)
    stored_benign: set[str] = field(default_factory=set)
    fields: dict[str, list[int]] = field(default_factory=dict)

    def add(self, slot: str, label: str, *, secret: bool, stored: bool) -> None:
        row = self.fields.setdefault(slot, [0, 0, 0, 0])
        if secret:
            self.placed += 1
            row[1] += 1
            if stored:
                self.missed.append(f"{slot}: {label}")
            else:
                self.caught += 1
                row[0] += 1
        else:
            self.benign += 1
            row[3] += 1
            if not stored:
                self.refused += 1
                row[2] += 1
                self.refused_benign.append(f"{slot}: {label}")
            else:
                self.stored_benign.add(label.removesuffix(" (id word)"))

    def report(self) -> str:
        lines = [
            f"{self.path}: caught {self.caught}/{self.placed} "
            f"({self.caught / max(self.placed, 1):.1%}), benign refused "
            f"{self.refused}/{self.benign}"
        ]
        for slot, (hit, total, refused, benign) in self.fields.items():
            lines.append(f"  {slot:34} caught {hit}/{total}  benign refused {refused}/{benign}")
        return "\n".join(lines)

    def check(self) -> None:
        """The targets, on the path and on each of its fields (a field left unfiltered
        fails by name even where the path's total would pass)."""
        print("\n" + self.report())
        assert self.placed >= len(SECRETS) and self.benign >= 30, self.report()
        assert self.caught / self.placed >= 0.97, f"missed: {_some(self.missed)}"
        assert self.refused * 30 <= self.benign, f"benign refused: {self.refused_benign}"
        weak = [slot for slot, (hit, total, _, _) in self.fields.items() if hit < 0.97 * total]
        assert not weak, f"fields under 97% caught: {weak}; missed: {_some(self.missed)}"


def _some(items: list[str], shown: int = 12) -> str:
    more = f" and {len(items) - shown} more" if len(items) > shown else ""
    return f"{items[:shown]}{more}"


def file_bytes(folder: Path) -> bytes:
    """Every SQLite file under ``folder``: databases, write-ahead logs, shared memory."""
    return b"\n".join(path.read_bytes() for path in sorted(folder.rglob("*.db*")))


def postgres_bytes(url: str, schema: str) -> bytes:
    """Every row of every table of ``schema``, as PostgreSQL writes a row as text."""
    parts: list[bytes] = []
    with psycopg.connect(url) as conn:
        tables = conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = %s",
            (schema,),
        ).fetchall()
        for (table,) in tables:
            query = sql.SQL("SELECT t::text FROM {}.{} t").format(
                sql.Identifier(schema), sql.Identifier(table)
            )
            parts.extend(row[0].encode() for row in conn.execute(query))
    return b"\n".join(parts)


def _bytes(value: object) -> bytes:
    """What redis-py gave (bytes without ``decode_responses``) as bytes."""
    return value if isinstance(value, bytes) else str(value).encode()


def redis_bytes(url: str) -> bytes:
    """Every key of the Redis server and everything each holds."""
    client = redis.Redis.from_url(url, decode_responses=False)
    parts: list[bytes] = []
    try:
        for key in client.scan_iter(count=1000):
            parts.append(_bytes(key))
            kind = client.type(key)
            if kind == b"string":
                parts.append(_bytes(client.get(key) or b""))
            elif kind == b"hash":
                parts.extend(_bytes(k) + b"=" + _bytes(v) for k, v in client.hgetall(key).items())
            elif kind == b"zset":
                parts.extend(_bytes(member) for member in client.zrange(key, 0, -1))
            elif kind == b"set":
                parts.extend(_bytes(member) for member in client.smembers(key))
            elif kind == b"list":
                parts.extend(_bytes(item) for item in client.lrange(key, 0, -1))
    finally:
        client.close()
    return b"\n".join(parts)


def found_in(data: bytes, tokens: dict[str, list[str]]) -> list[str]:
    """The texts (by label) any of whose ``tokens`` ``data`` holds, in any case."""
    low = data.lower()
    return [label for label, found in tokens.items() if any(t.encode() in low for t in found)]


def check_storage(data: bytes, tally: Tally) -> None:
    """No credential's token is in ``data``; the benign texts the path stored are (some
    of them: a cap or a version limit drops old ones), so the search does see."""
    greppable = {label: found for label, found in ALL_NEEDLES.items() if found}
    leaked = found_in(data, greppable)
    stored = {label: BENIGN_TOKENS[label] for label in tally.stored_benign}
    seen = found_in(data, {label: found for label, found in stored.items() if found})
    print(
        f"stored bytes searched: {len(data):,}; credentials with tokens to look for: "
        f"{len(greppable)}/{len(ALL_NEEDLES)}, found {len(leaked)}; benign texts stored "
        f"with tokens found: {len(seen)}"
    )
    assert leaked == [], f"credentials found in storage: {leaked}"
    assert seen, "no stored benign text found: the search does not see what is stored"
