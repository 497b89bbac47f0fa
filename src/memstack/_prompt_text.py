"""The one escaping rule for stored text rendered into a prompt block.

Every block memstack puts in a prompt (``<memories>``, ``<knowledge>``,
``<recalled-memories>``, the upstream-memory hint) escapes the text it quotes with
``escape_prompt_text``. A model reads ``</memories>`` written with full-width brackets
(U+FF1C, U+FF1E) as readily as with ASCII ones, so escaping the ASCII brackets alone does
not keep a stored string inside its block: ``&``, ``<`` and ``>`` become XML entities,
and every look-alike of an angle bracket (``LOOKALIKES``) a numeric character reference,
which a reader can still decode but which opens or closes no tag. Quotation marks made of
double angles (« », 《 》) stay as they are: French and CJK text quotes with them, and
none reads as one bracket.
"""

from __future__ import annotations

from typing import Final

__all__ = ["LOOKALIKES", "escape_prompt_text"]

# fmt: off
LOOKALIKES: Final = frozenset(
    {
        0xFF1C, 0xFF1E,  # FULLWIDTH LESS-THAN / GREATER-THAN SIGN (NFKC: < >)
        0xFE64, 0xFE65,  # SMALL LESS-THAN / GREATER-THAN SIGN (NFKC: < >)
        0x226E, 0x226F,  # NOT LESS-THAN / NOT GREATER-THAN (NFKD: < > + U+0338)
        0x2039, 0x203A,  # SINGLE LEFT/RIGHT-POINTING ANGLE QUOTATION MARK
        0x2329, 0x232A,  # LEFT/RIGHT-POINTING ANGLE BRACKET (NFKC: U+3008, U+3009)
        0x3008, 0x3009,  # LEFT/RIGHT ANGLE BRACKET (CJK)
        0xFE3F, 0xFE40,  # PRESENTATION FORM FOR VERTICAL ANGLE BRACKETS (NFKC: U+3008, U+3009)
        0x27E8, 0x27E9,  # MATHEMATICAL LEFT/RIGHT ANGLE BRACKET
        0x276C, 0x276D, 0x276E, 0x276F, 0x2770, 0x2771,  # ANGLE BRACKET ORNAMENTS
        0x29FC, 0x29FD,  # LEFT/RIGHT-POINTING CURVED ANGLE BRACKET
        0x02C2, 0x02C3,  # MODIFIER LETTER LEFT/RIGHT ARROWHEAD
        0x02F1, 0x02F2,  # MODIFIER LETTER LOW LEFT/RIGHT ARROWHEAD
        0x1438, 0x1433,  # CANADIAN SYLLABICS PA / PO (confusable with < >)
        0x16B2,  # RUNIC LETTER KAUNA (confusable with <)
        0x1D236, 0x1D237,  # GREEK INSTRUMENTAL NOTATION SYMBOL-40 / -42 (confusable)
        0x16F3F,  # MIAO LETTER ARCHAIC ZZA (confusable with >)
        0xE003C, 0xE003E,  # TAG LESS-THAN / GREATER-THAN SIGN (invisible)
    }
)
# fmt: on
"""Code points a model may read as ``<`` or ``>``: their compatibility forms (every code
point whose NFKC or NFKD holds a bracket), the other angle brackets, and the characters
Unicode's confusables list gives for them."""

_ESCAPES: Final[dict[int, str]] = {
    ord("&"): "&amp;",
    ord("<"): "&lt;",
    ord(">"): "&gt;",
    **{code: f"&#x{code:X};" for code in sorted(LOOKALIKES)},
}


def escape_prompt_text(text: str) -> str:
    """``text`` with ``&``, ``<``, ``>`` and every look-alike of ``<`` and ``>`` escaped,
    so it cannot open or close a prompt block's tag."""
    return text.translate(_ESCAPES)
