"""Loading LoCoMo-schema files, tolerating the known defects of the data.

Accepts any file of the schema described in ``shared/bench/locomo/README.md``: a list
of samples with ``conversation`` (``session_N`` turn lists and ``session_N_date_time``)
and ``qa`` items with ``evidence`` dialogue ids.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from memstack.errors import InvalidInput

__all__ = ["LoadStats", "Question", "Sample", "Turn", "load_locomo", "normalize_evidence"]

_SESSION = re.compile(r"^session_(\d+)$")
_EVIDENCE = re.compile(r"^D:?(\d+):0*(\d+)$")
_SPLIT = re.compile(r"[;,\s]+")
_DATE_FORMATS = ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y", "%d %B, %Y", "%d %B %Y")


@dataclass(frozen=True, kw_only=True)
class Turn:
    dia_id: str
    speaker: str
    text: str
    session: int
    date_text: str
    timestamp: float
    caption: str | None = None

    @property
    def memory_text(self) -> str:
        """The memory as the benchmark stores it: ``[<session date>] <speaker>: <text>``."""
        return f"[{self.date_text}] {self.speaker}: {self.text}"


@dataclass(frozen=True, kw_only=True)
class Question:
    sample_id: str
    question: str
    answer: str
    category: int
    evidence: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class Sample:
    sample_id: str
    speakers: tuple[str, str]
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...]


@dataclass(kw_only=True)
class LoadStats:
    samples: int = 0
    turns: int = 0
    questions: int = 0
    evidence_repaired: int = 0
    """Ids rewritten into ``D<session>:<turn>`` form ("D:11:26", "D30:05", joined lists)."""
    evidence_dropped: list[str] = field(default_factory=list)
    """Ids that name no turn, as ``sample:id``."""
    sessions_without_date: int = 0


def load_locomo(path: Path | str) -> tuple[list[Sample], LoadStats]:
    """Read a LoCoMo-schema JSON file; raise ``InvalidInput`` naming what is wrong with it."""
    file = Path(path)
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise InvalidInput(f"no LoCoMo file at {file}; pass --data PATH.", field="data") from exc
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"{file} is not valid JSON: {exc}", field="data") from exc
    if not isinstance(data, list):
        raise InvalidInput(f"{file}: expected a list of samples.", field="data")
    stats = LoadStats()
    samples = [_sample(raw, i, stats) for i, raw in enumerate(data)]
    return samples, stats


def normalize_evidence(raw: object) -> tuple[list[str], int, list[str]]:
    """Split and repair evidence ids; returns (ids, how many were repaired, unparseable).

    ``"D8:6; D9:17"`` → two ids, ``"D:11:26"`` → ``D11:26``, ``"D30:05"`` → ``D30:5``;
    tokens that are no id at all (``"D"``) are returned as unparseable.
    """
    items = raw if isinstance(raw, list) else [raw]
    ids: list[str] = []
    bad: list[str] = []
    repaired = 0
    for item in items:
        tokens = [t for t in _SPLIT.split(str(item).strip()) if t]
        if len(tokens) > 1:
            repaired += 1
        for token in tokens:
            match = _EVIDENCE.match(token)
            if match is None:
                bad.append(token)
                continue
            fixed = f"D{int(match.group(1))}:{int(match.group(2))}"
            repaired += fixed != token and len(tokens) == 1
            ids.append(fixed)
    return ids, repaired, bad


def _sample(raw: Any, index: int, stats: LoadStats) -> Sample:
    if not isinstance(raw, dict) or not isinstance(raw.get("conversation"), dict):
        raise InvalidInput(f"sample {index} has no conversation object.", field="data")
    sample_id = str(raw.get("sample_id", f"sample-{index}"))
    conversation = raw["conversation"]
    turns = _turns(conversation, stats)
    known = {t.dia_id for t in turns}
    questions = []
    for qa in raw.get("qa", []):
        ids, repaired, bad = normalize_evidence(qa.get("evidence", []))
        stats.evidence_repaired += repaired
        stats.evidence_dropped.extend(f"{sample_id}:{token}" for token in bad)
        kept = []
        for dia_id in dict.fromkeys(ids):
            if dia_id in known:
                kept.append(dia_id)
            else:
                stats.evidence_dropped.append(f"{sample_id}:{dia_id}")
        answer = qa.get("answer", qa.get("adversarial_answer", ""))
        questions.append(
            Question(
                sample_id=sample_id,
                question=str(qa.get("question", "")),
                answer=str(answer),
                category=int(qa.get("category", 0)),
                evidence=tuple(kept),
            )
        )
    stats.samples += 1
    stats.turns += len(turns)
    stats.questions += len(questions)
    speakers = (str(conversation.get("speaker_a", "")), str(conversation.get("speaker_b", "")))
    return Sample(
        sample_id=sample_id, speakers=speakers, turns=tuple(turns), questions=tuple(questions)
    )


def _turns(conversation: dict[str, Any], stats: LoadStats) -> list[Turn]:
    sessions = sorted((int(m.group(1)), key) for key in conversation if (m := _SESSION.match(key)))
    turns: list[Turn] = []
    for number, key in sessions:
        date_text = str(conversation.get(f"{key}_date_time", ""))
        if not date_text:
            stats.sessions_without_date += 1
        timestamp = _timestamp(date_text)
        for raw in conversation[key] or []:
            if not isinstance(raw, dict) or "dia_id" not in raw:
                continue
            caption = raw.get("blip_caption")
            turns.append(
                Turn(
                    dia_id=str(raw["dia_id"]),
                    speaker=str(raw.get("speaker", "")),
                    text=str(raw.get("text", "")),
                    session=number,
                    date_text=date_text,
                    timestamp=timestamp,
                    caption=str(caption) if caption else None,
                )
            )
    return turns


def _timestamp(text: str) -> float:
    cleaned = " ".join(text.split())
    for fmt in _DATE_FORMATS:
        try:
            parsed = datetime.strptime(cleaned, fmt)
        except ValueError:
            continue
        return parsed.replace(tzinfo=timezone.utc).timestamp()  # noqa: UP017
    return 0.0
