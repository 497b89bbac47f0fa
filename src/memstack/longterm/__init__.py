"""Long-term memory across chat sessions."""

from memstack.longterm.calibration import CONTEXT_MIN_SCORE
from memstack.longterm.chat import ChatSession
from memstack.longterm.collection import Collection
from memstack.longterm.extraction import EXTRACTION_PROMPT, parse_candidates, render_conversation
from memstack.longterm.factory import create_default_long_term_memory
from memstack.longterm.memory import DEDUPE_THRESHOLD, DEFAULT_MAX_ITEMS, LongTermMemory
from memstack.longterm.render import RECALLED_PREAMBLE, escape_prompt_text, render_recalled
from memstack.longterm.scoring import ScoreBreakdown, hybrid_score, recency
from memstack.longterm.settings import LongTermSettings
from memstack.longterm.tools import LtmRecallTool, LtmRememberTool, long_term_memory_tools
from memstack.longterm.types import (
    LTM_KINDS,
    PROVENANCES,
    Candidate,
    LongTermItem,
    LtmKind,
    Provenance,
    RecalledMemory,
    RememberOutcome,
)
from memstack.secrets import looks_like_secret, secret_kind

__all__ = [
    "CONTEXT_MIN_SCORE",
    "DEDUPE_THRESHOLD",
    "DEFAULT_MAX_ITEMS",
    "EXTRACTION_PROMPT",
    "LTM_KINDS",
    "PROVENANCES",
    "RECALLED_PREAMBLE",
    "Candidate",
    "ChatSession",
    "Collection",
    "LongTermItem",
    "LongTermMemory",
    "LongTermSettings",
    "LtmKind",
    "LtmRecallTool",
    "LtmRememberTool",
    "Provenance",
    "RecalledMemory",
    "RememberOutcome",
    "ScoreBreakdown",
    "create_default_long_term_memory",
    "escape_prompt_text",
    "hybrid_score",
    "long_term_memory_tools",
    "looks_like_secret",
    "parse_candidates",
    "recency",
    "render_conversation",
    "render_recalled",
    "secret_kind",
]
