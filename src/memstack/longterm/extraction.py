"""Mining a finished conversation for memories with an LLM."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Final

from memstack._json import JSON
from memstack.longterm._fence import unfenced
from memstack.longterm.types import LTM_KINDS, Candidate
from memstack.providers.base import Message

__all__ = [
    "EXTRACTION_PROMPT",
    "MAX_CANDIDATES",
    "MAX_INPUT_CHARS",
    "build_extraction_messages",
    "parse_candidates",
    "render_conversation",
]

MAX_INPUT_CHARS: Final = 12_000
MAX_CANDIDATES: Final = 8
MAX_MEMORY_CHARS: Final = 1_000

EXTRACTION_PROMPT: Final = f"""\
You extract durable long-term memories about the USER from a conversation.

Store only what the user stated explicitly about themselves or their work:
stable preferences, identity facts, project context, decisions they made,
and notable events in their life. Each memory is one short, self-contained
sentence in the third person ("The user prefers ...").

Never store:
- secrets or credentials of any kind (API keys, tokens, passwords,
  connection strings, private keys), even partially;
- content the assistant generated, advice, or suggestions;
- guesses, inferences or anything the user did not confirm;
- small talk or facts that only matter for this one conversation.

Reply with JSON only, no prose, exactly of this form:
{{"memories": [{{"text": "...", "kind": "<kind>", "importance": 0.0}}]}}
where kind is one of {", ".join(LTM_KINDS)} and importance is between 0 and 1
(1 = the user will certainly want this remembered). Return at most
{MAX_CANDIDATES} memories; return {{"memories": []}} when nothing qualifies."""

_LABELS: Final = {"user": "User", "assistant": "Assistant"}


def render_conversation(messages: Sequence[Message], *, limit: int = MAX_INPUT_CHARS) -> str:
    """The user and assistant turns as text, tool and system messages stripped.

    Keeps the most recent ``limit`` characters: the turn just finished is at the end.
    """
    lines = [
        f"{_LABELS[m.role]}: {m.content.strip()}"
        for m in messages
        if m.role in _LABELS and m.content.strip()
    ]
    text = "\n\n".join(lines)
    return text if len(text) <= limit else text[-limit:]


def build_extraction_messages(messages: Sequence[Message]) -> list[Message] | None:
    """The extraction call's messages, or ``None`` when there is nothing to mine."""
    conversation = render_conversation(messages)
    if not conversation:
        return None
    return [
        Message(role="system", content=EXTRACTION_PROMPT),
        Message(role="user", content=f"Conversation:\n\n{conversation}"),
    ]


def parse_candidates(reply: str) -> list[Candidate]:
    """Candidates from the model's reply; anything malformed is skipped, never guessed.

    Accepts ``{"memories": [...]}`` or a bare list, optionally inside a code fence.
    Unknown kinds become ``fact``; importance is clamped to [0, 1] (0.5 if absent).
    """
    try:
        data = json.loads(unfenced(reply))
    except json.JSONDecodeError:
        return []
    items = data.get("memories") if isinstance(data, dict) else data
    if not isinstance(items, list):
        return []
    candidates: list[Candidate] = []
    for item in items:
        candidate = _candidate(item)
        if candidate is not None:
            candidates.append(candidate)
        if len(candidates) == MAX_CANDIDATES:
            break
    return candidates


def _candidate(item: JSON) -> Candidate | None:
    if not isinstance(item, dict):
        return None
    text = item.get("text")
    if not isinstance(text, str) or not text.strip():
        return None
    kind = item.get("kind")
    importance = item.get("importance")
    return Candidate(
        text=" ".join(text.split())[:MAX_MEMORY_CHARS],
        kind=kind if kind in LTM_KINDS else "fact",
        importance=_clamp(importance),
    )


def _clamp(value: JSON) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return 0.5
    return min(1.0, max(0.0, float(value)))
