"""Scripted conversations whose facts change: the data of ``memstack bench updates``.

``conversations(seed, n)`` generates them deterministically (no downloads): one or two
people, 2-4 attributes of theirs (where they live, their employer, partner, pet, car...)
each stated once and then changed 1 to 3 times over sessions days or months apart, in
varied wording ("Bob moved from Lisbon to Berlin last week"), with distractor facts
between (some on the same topics about someone else: "Bob's sister lives in Madrid").

Every statement has an id (``s1``, ``s2``... in time order) and names the statement of
the same attribute it replaces (``previous``). Questions ask for the current value (the
gold is the latest statement) or for the value at a past moment ``as_of`` strictly
between two changes (the gold is the statement valid then).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from typing import Final, Literal

from memstack.bench.updates_vocab import ATTRIBUTES, CHITCHAT, FIRST_NAMES, MONTHS, Attribute

__all__ = ["Conversation", "Question", "Statement", "conversations"]

DAY: Final = 86_400.0
_START: Final = datetime(2023, 1, 1, tzinfo=UTC)


@dataclass(frozen=True, kw_only=True)
class Statement:
    """One thing said in a session. ``slot`` ("Bob/home") names the fact it states, or is
    None for a distractor; ``previous`` is the id of the statement of the same slot it
    replaces (None for the first value and for distractors)."""

    id: str
    session: int
    time: float
    text: str
    slot: str | None = None
    value: str | None = None
    previous: str | None = None


@dataclass(frozen=True, kw_only=True)
class Question:
    """``gold`` is the id of the statement that answers it: the latest of its slot for a
    ``current`` question, the one valid at ``as_of`` for a ``past`` one."""

    id: str
    text: str
    kind: Literal["current", "past"]
    slot: str
    gold: str
    as_of: float | None = None


@dataclass(frozen=True, kw_only=True)
class Conversation:
    id: str
    people: tuple[str, ...]
    statements: tuple[Statement, ...]
    """In time order."""
    questions: tuple[Question, ...]

    @property
    def sessions(self) -> list[list[Statement]]:
        """The statements grouped by session, in order."""
        out: dict[int, list[Statement]] = {}
        for statement in self.statements:
            out.setdefault(statement.session, []).append(statement)
        return [out[n] for n in sorted(out)]

    def statement(self, statement_id: str) -> Statement:
        return next(s for s in self.statements if s.id == statement_id)

    def by_text(self) -> dict[str, Statement]:
        return {s.text: s for s in self.statements}


def conversations(seed: int = 0, n: int = 60) -> list[Conversation]:
    """``n`` conversations; the same seed gives the same ones, and a smaller ``n`` the
    first of them."""
    return [_conversation(random.Random(f"updates:{seed}:{i}"), f"conv-{i:03d}") for i in range(n)]


@dataclass(kw_only=True)
class _Draft:
    session: int
    text: str
    slot: str | None = None
    value: str | None = None
    previous: int | None = None
    """Index into the drafts of the statement this one replaces."""


def _conversation(rng: random.Random, conversation_id: str) -> Conversation:
    people = tuple(rng.sample(FIRST_NAMES, rng.choice((1, 2))))
    slots = _slots(rng, people)
    changes = [rng.randint(1, 3) for _ in slots]
    n_sessions = max(changes) + 1 + rng.randint(0, 2)
    times = _session_times(rng, n_sessions)
    used = _Used()
    drafts = _fact_drafts(rng, people, slots, changes, n_sessions, used)
    drafts += _distractor_drafts(rng, people, n_sessions, used)
    statements = _statements(rng, drafts, times)
    return Conversation(
        id=conversation_id,
        people=people,
        statements=statements,
        questions=tuple(_questions(rng, slots, statements)),
    )


@dataclass(kw_only=True)
class _Used:
    """Texts and values a conversation has used, so none is said or drawn twice."""

    texts: set[str] = field(default_factory=set)
    values: set[str] = field(default_factory=set)


def _slots(rng: random.Random, people: tuple[str, ...]) -> list[tuple[str, Attribute]]:
    """2-4 distinct (person, attribute) pairs whose value will change."""
    n_slots = rng.randint(2, 4)
    slots: list[tuple[str, Attribute]] = []
    while len(slots) < n_slots:
        pick = (rng.choice(people), rng.choice(ATTRIBUTES))
        if all(pick[0] != p or pick[1].name != a.name for p, a in slots):
            slots.append(pick)
    return slots


def _session_times(rng: random.Random, n_sessions: int) -> list[datetime]:
    """When each session took place: 20 to 110 days apart, from a start within the
    first year and a half after ``_START``."""
    gaps = [rng.randint(20, 110) for _ in range(n_sessions - 1)]
    first = _START + timedelta(days=rng.randint(0, 520), hours=rng.randint(8, 20))
    times = [first]
    for gap in gaps:
        times.append(times[-1] + timedelta(days=gap, hours=rng.randint(-3, 3)))
    return times


def _fact_drafts(
    rng: random.Random,
    people: tuple[str, ...],
    slots: list[tuple[str, Attribute]],
    changes: list[int],
    n_sessions: int,
    used: _Used,
) -> list[_Draft]:
    """Each slot's first statement and its changes, in sessions of their own, each
    draft naming the one it replaces."""
    drafts: list[_Draft] = []
    for (person, attribute), n_changes in zip(slots, changes, strict=True):
        slot = f"{person}/{attribute.name}"
        sessions = sorted(rng.sample(range(n_sessions), n_changes + 1))
        values = rng.sample(
            [v for v in attribute.values if v not in people + tuple(used.values)], n_changes + 1
        )
        used.values.update(values)
        wordings = rng.sample(attribute.changed, n_changes)
        before: int | None = None
        for step, (session, value) in enumerate(zip(sessions, values, strict=True)):
            template = rng.choice(attribute.stated) if step == 0 else wordings[step - 1]
            old = values[step - 1] if step else ""
            text = _sentence(template.format(p=person, v=value, old=old))
            used.texts.add(text)
            drafts.append(
                _Draft(session=session, text=text, slot=slot, value=value, previous=before)
            )
            before = len(drafts) - 1
    return drafts


def _distractor_drafts(
    rng: random.Random, people: tuple[str, ...], n_sessions: int, used: _Used
) -> list[_Draft]:
    """One or two distractors a session, none repeating a text already said."""
    drafts: list[_Draft] = []
    for session in range(n_sessions):
        for _ in range(rng.randint(1, 2)):
            text = _distractor(rng, people, used.values)
            if text not in used.texts:
                used.texts.add(text)
                drafts.append(_Draft(session=session, text=text))
    return drafts


def _statements(
    rng: random.Random, drafts: list[_Draft], times: list[datetime]
) -> tuple[Statement, ...]:
    """The drafts in session order, shuffled within a session, numbered ``s1``, ``s2``..."""
    order = list(range(len(drafts)))
    rng.shuffle(order)
    order.sort(key=lambda i: drafts[i].session)  # stable: a session's statements shuffled
    ids = {i: f"s{n + 1}" for n, i in enumerate(order)}
    return tuple(
        Statement(
            id=ids[i],
            session=drafts[i].session,
            time=times[drafts[i].session].timestamp(),
            text=drafts[i].text,
            slot=drafts[i].slot,
            value=drafts[i].value,
            previous=None if (before := drafts[i].previous) is None else ids[before],
        )
        for i in order
    )


def _questions(
    rng: random.Random, slots: list[tuple[str, Attribute]], statements: tuple[Statement, ...]
) -> list[Question]:
    questions: list[Question] = []
    for person, attribute in slots:
        slot = f"{person}/{attribute.name}"
        chain = [s for s in statements if s.slot == slot]
        questions.append(
            Question(
                id=f"q{len(questions) + 1}",
                text=rng.choice(attribute.ask_now).format(p=person),
                kind="current",
                slot=slot,
                gold=chain[-1].id,
            )
        )
        for valid, after in pairwise(chain):
            when, as_of = _moment(rng, valid.time, after.time)
            questions.append(
                Question(
                    id=f"q{len(questions) + 1}",
                    text=rng.choice(attribute.ask_past).format(p=person, when=when),
                    kind="past",
                    slot=slot,
                    gold=valid.id,
                    as_of=as_of,
                )
            )
    return questions


def _moment(rng: random.Random, start: float, end: float) -> tuple[str, float]:
    """A moment strictly between ``start`` and ``end`` and how a question names it: "in
    March 2024" (the 15th at noon) when a whole calendar month lies between, else "on 14
    March 2024" (noon of a day between)."""
    begin = datetime.fromtimestamp(start, tz=UTC)
    months: list[datetime] = []
    month = datetime(begin.year, begin.month, 1, tzinfo=UTC)
    while True:
        month = _next_month(month)
        if _next_month(month).timestamp() > end:
            break
        months.append(month)
    if months:
        month = rng.choice(months)
        return f"in {MONTHS[month.month - 1]} {month.year}", month.replace(
            day=15, hour=12
        ).timestamp()
    first_day = datetime(begin.year, begin.month, begin.day, 12, tzinfo=UTC) + timedelta(days=1)
    days = int((end - first_day.timestamp()) // DAY)
    day = first_day + timedelta(days=rng.randint(0, max(0, days - 1)))
    return f"on {day.day} {MONTHS[day.month - 1]} {day.year}", day.timestamp()


def _next_month(month: datetime) -> datetime:
    return month.replace(year=month.year + month.month // 12, month=month.month % 12 + 1)


def _distractor(rng: random.Random, people: tuple[str, ...], used_values: set[str]) -> str:
    person = rng.choice(people)
    if rng.random() < 0.5:
        return _sentence(rng.choice(CHITCHAT).format(p=person))
    attribute = rng.choice(ATTRIBUTES)
    value = rng.choice([v for v in attribute.values if v not in used_values and v not in people])
    return _sentence(rng.choice(attribute.distractors).format(p=person, v=value))


_AN: Final = re.compile(r"\b([Aa]) (?=[AEIOUaeiouX](?!ne))")
"""``a`` before a vowel sound ("a iPhone" -> "an iPhone"; "a OnePlus" stays)."""


def _sentence(text: str) -> str:
    text = _AN.sub(r"\1n ", text)
    return text[0].upper() + text[1:]
