"""Models often wrap a JSON reply in a Markdown code fence; this takes it off.

Plain string operations rather than a regular expression: a pattern such as
``\\s*(.*?)\\s*```\\Z`` backtracks quadratically over a reply of whitespace (a long run
of spaces takes seconds), and a reply's size is the model's to choose.
"""

from __future__ import annotations

__all__ = ["unfenced"]

_FENCE = "```"


def unfenced(reply: str) -> str:
    """``reply`` stripped, without a leading ```` ``` ```` or ```` ```json ```` and a
    trailing ```` ``` ````, each taken off when present."""
    text = reply.strip()
    if text.startswith(_FENCE):
        text = text[len(_FENCE) :]
        if text[:4].lower() == "json":
            text = text[4:]
    if text.endswith(_FENCE):
        text = text[: -len(_FENCE)]
    return text.strip()
