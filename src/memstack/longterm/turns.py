"""Verbatim conversation memory: each turn stored as a memory, with its neighbours as context.

A turn becomes the memory ``"<speaker>: <text>"`` dated by its ``time``. Its context is
the session date and the turns around it in the same session (``radius`` before and
after, in the order they arrived), which keyword search reads and the memory's rendering
never shows. The answer to "How long have you been married?" is often the next turn
("5 years already!"): with the question in its context, that turn is found.

Turns may arrive one at a time. The turns of a session are numbered in arrival order
(``metadata["turn_seq"]``); a turn that arrives later rewrites the context of the ones
before it that now have a new neighbour, in the same write. A turn the secret filter
refuses is not stored and appears in no other turn's context.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Final

from memstack._json import JSON, to_json
from memstack.errors import InvalidInput
from memstack.secrets import refuse_secrets
from memstack.storage import Record

__all__ = [
    "DEFAULT_RADIUS",
    "MAX_SESSION_SCAN",
    "TURN_KEYS",
    "Turn",
    "check_turn",
    "context_of",
    "session_date",
    "spoken",
    "turn_text",
]

DEFAULT_RADIUS: Final = 2
"""Turns before and after that make a turn's context. In a prototype over the LoCoMo
development split (the same scoring, turns stored as ``[date] speaker: text``) 2 reached
the best R@10 (both halves up over 1), and 3 or 4 fell back: further turns bring more
unrelated words than answers."""
MAX_SESSION_SCAN: Final = 1_000
"""How many of a session's latest turns a write reads to find its neighbours."""
MAX_SPEAKER_CHARS: Final = 200
TURN_KEYS: Final = ("speaker", "session_id", "turn_seq")
"""Metadata keys ``remember_turns`` sets on each turn (a turn's own metadata may not)."""


@dataclass(frozen=True, kw_only=True)
class Turn:
    """One conversation turn as it was said."""

    speaker: str
    text: str
    time: float
    """When it was said, in seconds since the epoch (a session's date will do)."""
    session_id: str
    id: str | None = None
    """The memory's id; a fresh one when None."""
    metadata: dict[str, JSON] = field(default_factory=dict)


def check_turn(turn: object, index: int, max_text: int) -> Turn:
    """``turn`` checked, or ``InvalidInput`` naming ``turns[index].<field>``."""
    where = f"turns[{index}]"
    if not isinstance(turn, Turn):
        raise InvalidInput(f"{where} must be a Turn; got {type(turn).__name__}.", field=where)
    for name, value, limit in (
        ("speaker", turn.speaker, MAX_SPEAKER_CHARS),
        ("session_id", turn.session_id, MAX_SPEAKER_CHARS),
        ("text", turn.text, max_text),
    ):
        if not isinstance(value, str) or not value.strip():
            raise InvalidInput(
                f"{where}.{name} must be a non-empty string.", field=f"{where}.{name}"
            )
        if len(value) > limit:
            raise InvalidInput(
                f"{where}.{name} is {len(value)} characters; the limit is {limit}.",
                field=f"{where}.{name}",
            )
    if (
        isinstance(turn.time, bool)
        or not isinstance(turn.time, int | float)
        or not (math.isfinite(turn.time))
    ):
        raise InvalidInput(
            f"{where}.time must be a finite timestamp in seconds; got {turn.time!r}.",
            field=f"{where}.time",
        )
    if turn.id is not None and (not isinstance(turn.id, str) or not turn.id.strip()):
        raise InvalidInput(f"{where}.id must be a non-empty string or None.", field=f"{where}.id")
    ids: dict[str, JSON] = {f"{where}.session_id": turn.session_id, f"{where}.id": turn.id}
    refuse_secrets(ids, where="long-term memory")  # an id is stored as it is
    to_json(turn.metadata, field=f"{where}.metadata")
    if not isinstance(turn.metadata, dict):
        raise InvalidInput(f"{where}.metadata must be an object.", field=f"{where}.metadata")
    taken = [k for k in TURN_KEYS if k in turn.metadata]
    if taken:
        raise InvalidInput(
            f"{where}.metadata may not set {', '.join(taken)}: remember_turns sets "
            f"{', '.join(TURN_KEYS)} itself; rename your key.",
            field=f"{where}.metadata",
        )
    return turn


def turn_text(turn: Turn) -> str:
    """The memory a turn becomes: ``"<speaker>: <text>"``."""
    return f"{turn.speaker}: {turn.text}"


def spoken(text: str, metadata: Mapping[str, JSON]) -> str | None:
    """What a stored turn's speaker said: its ``text`` without the ``"<speaker>: "``
    that ``turn_text`` put before it; None for a memory that is not a turn."""
    speaker = metadata.get("speaker")
    if isinstance(speaker, str) and text.startswith(f"{speaker}: "):
        return text[len(speaker) + 2 :]
    return None


def session_date(at: float) -> str:
    """A turn's date as words keyword search can match ("8 May 2023")."""
    moment = time.gmtime(at)
    return f"{moment.tm_mday} {time.strftime('%B %Y', moment)}"


def context_of(session: Sequence[Record], position: int, radius: int) -> str | None:
    """The context of ``session[position]``: its date, then the texts of up to ``radius``
    turns before and after it (``session`` is in arrival order); None when ``radius`` is 0."""
    if radius <= 0:
        return None
    own = session[position]
    around = [
        session[i].text
        for i in range(max(0, position - radius), min(len(session), position + radius + 1))
        if i != position
    ]
    return "\n".join([f"[{session_date(own.created_at)}]", *around])


def with_context(session: Sequence[Record], positions: Sequence[int], radius: int) -> list[Record]:
    """The records at ``positions`` with their context made from ``session`` as it is now."""
    return [replace(session[i], context=context_of(session, i, radius)) for i in positions]
