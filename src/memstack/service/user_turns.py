"""The turns of an ``add_turns`` call, checked one by one before anything is stored.

A turn whose fields (speaker, text, session id, id, metadata keys and values) hold a
credential is refused alone, with the reason, and the others of the call are stored; a
turn of the wrong shape refuses the whole call (``InvalidInput`` naming
``turns[i].<field>``), as ``LongTermMemory.remember_turns`` does.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Final

from memstack._json import JSON
from memstack.errors import InvalidInput
from memstack.longterm.memory import MAX_TEXT_CHARS
from memstack.longterm.turns import MAX_SPEAKER_CHARS, Turn, check_turn
from memstack.providers.base import Message
from memstack.secrets import find_secret
from memstack.service.user_types import TurnIn

__all__ = ["MAX_TURNS", "Checked", "check_turns", "conversation"]

MAX_TURNS: Final = 1_000
"""Turns per call: one embedding batch and one transaction."""
_MAX_TURN_TEXT: Final = MAX_TEXT_CHARS - MAX_SPEAKER_CHARS - 2


@dataclass(frozen=True, kw_only=True)
class Checked:
    """One turn of the call: ``turn`` to store, or ``refused`` saying why not."""

    id: str
    turn: Turn | None = None
    refused: str | None = None


def check_turns(turns: Sequence[TurnIn], now: float) -> list[Checked]:
    """Each turn as it would be stored (``time`` None: ``now``; no ``id``: a fresh one),
    or refused by the secret filter."""
    if isinstance(turns, str | bytes) or not isinstance(turns, Sequence):
        raise InvalidInput("turns must be a list of turns.", field="turns")
    if not 1 <= len(turns) <= MAX_TURNS:
        raise InvalidInput(f"give 1 to {MAX_TURNS} turns a call; got {len(turns)}.", field="turns")
    return [_checked(given, i, now) for i, given in enumerate(turns)]


def _checked(given: object, index: int, now: float) -> Checked:
    where = f"turns[{index}]"
    if not isinstance(given, TurnIn):
        raise InvalidInput(f"{where} must be a TurnIn.", field=where)
    fields: dict[str, JSON] = {
        "speaker": given.speaker,
        "text": given.text,
        "session_id": given.session_id,
        "id": given.id,
        "metadata": given.metadata if isinstance(given.metadata, dict) else None,
    }
    found = find_secret(fields)
    if found is not None:
        named = replace(found, field=f"{where}.{found.field}")
        return Checked(id=_shown_id(given.id), refused=named.message("long-term memory"))
    turn = Turn(
        speaker=given.speaker,
        text=given.text,
        session_id=given.session_id,
        time=now if given.time is None else given.time,
        id=_fresh_id(now, index) if given.id is None else given.id,
        metadata={} if given.metadata is None else given.metadata,
    )
    checked = check_turn(turn, index, _MAX_TURN_TEXT)
    assert checked.id is not None
    return Checked(id=checked.id, turn=checked)


def _fresh_id(now: float, index: int) -> str:
    """An id for a turn given none, 32 hex digits that sort as the turns were stored: the
    call's time in milliseconds, the turn's place in the call, then random ones (the
    layout of a UUIDv7). Turns whose scores tie are ranked by id, so they rank in the
    order they were said, on every server and in every run."""
    return f"{round(now * 1000) & 0xFFFF_FFFF_FFFF:012x}{index:04x}{uuid.uuid4().hex[:16]}"


def _shown_id(given: object) -> str:
    """The id to answer a refused turn with: its own, unless that holds a secret too."""
    if isinstance(given, str) and given and find_secret({"id": given}) is None:
        return given
    return uuid.uuid4().hex


def conversation(turns: Sequence[Turn]) -> list[Message]:
    """Stored turns as the messages extraction reads: a user's or an assistant's turn in
    its role, any other speaker's as the user's, named."""
    messages: list[Message] = []
    for turn in turns:
        role = turn.speaker.strip().lower()
        if role in ("user", "assistant"):
            messages.append(Message(role=role, content=turn.text))  # type: ignore[arg-type]
        else:
            messages.append(Message(role="user", content=f"{turn.speaker}: {turn.text}"))
    return messages
