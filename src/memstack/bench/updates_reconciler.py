"""The scripted model behind the ``reconcile`` mode of ``memstack bench updates``.

It plays extraction and reconciliation for one conversation, knowing its script, so the
mode measures what the memory system does with correct decisions rather than what a
model decides.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Final

from memstack.bench.updates_data import Conversation
from memstack.longterm.extraction import EXTRACTION_PROMPT
from memstack.longterm.reconcile import RECONCILE_PROMPT
from memstack.providers.base import Message

__all__ = ["ScriptedReconciler"]

_CANDIDATE: Final = re.compile(r"^Candidate (\d+): (\".*\")$")
_SHOWN: Final = re.compile(r"^\s+\[([^\]\s]+)\] (\".*\")$")


class ScriptedReconciler:
    """Plays the extraction and reconciliation model for one conversation, knowing its
    script: extraction returns the user's statements as memories, word for word;
    reconciliation answers ``update <id>`` for a candidate when a stored memory shown
    under it is the previous statement of the same attribute, ``none`` when one states
    the candidate word for word, ``add`` otherwise. The shown ids are mapped to
    statements by their text, parsed from the prompt (``RECONCILE_PROMPT``'s format).

    So the ``reconcile`` mode measures what the memory system does with correct
    decisions (which stored memories it shows, how it applies an update), not a model.
    ``decisions`` counts the actions taken.
    """

    def __init__(self, conversation: Conversation) -> None:
        self.statements = conversation.by_text()
        self.decisions: dict[str, int] = {"add": 0, "update": 0, "none": 0}

    def respond(self, messages: Sequence[Message]) -> str:
        system = messages[0].content if messages and messages[0].role == "system" else ""
        prompt = "\n".join(m.content for m in messages if m.role == "user")
        if system == EXTRACTION_PROMPT:
            return self._extract(prompt)
        if system == RECONCILE_PROMPT:
            return self._reconcile(prompt)
        raise ValueError(f"not an extraction or reconciliation prompt: {system[:80]!r}")

    def _extract(self, prompt: str) -> str:
        said = [line.removeprefix("User: ") for line in prompt.splitlines()]
        memories = [
            {"text": text, "kind": "fact", "importance": 0.5}
            for text in said
            if text in self.statements
        ]
        return json.dumps({"memories": memories})

    def _id(self, text: str) -> str | None:
        statement = self.statements.get(text)
        return statement.id if statement is not None else None

    def _reconcile(self, prompt: str) -> str:
        decisions: list[dict[str, object]] = []
        for index, (text, shown) in enumerate(_blocks(prompt)):
            statement = self.statements.get(text)
            previous = statement.previous if statement is not None else None
            replaced = [i for i, t in shown if previous and self._id(t) == previous]
            if any(t == text for _, t in shown):
                decisions.append({"candidate": index, "action": "none"})
            elif replaced:
                decisions.append({"candidate": index, "action": "update", "id": replaced[0]})
            else:
                decisions.append({"candidate": index, "action": "add"})
            self.decisions[str(decisions[-1]["action"])] += 1
        return json.dumps({"decisions": decisions})


def _blocks(prompt: str) -> list[tuple[str, list[tuple[str, str]]]]:
    """Each candidate's text and the ``(id, text)`` of the stored memories shown under
    it, in the order the prompt numbers them."""
    blocks: list[tuple[str, list[tuple[str, str]]]] = []
    for line in prompt.splitlines():
        if found := _CANDIDATE.match(line):
            if int(found.group(1)) != len(blocks):
                raise ValueError(f"candidate {found.group(1)} out of order in the prompt")
            blocks.append((json.loads(found.group(2)), []))
        elif (shown := _SHOWN.match(line)) and blocks:
            blocks[-1][1].append((shown.group(1), json.loads(shown.group(2))))
    return blocks
