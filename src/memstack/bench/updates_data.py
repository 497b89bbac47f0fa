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
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from typing import Final, Literal

__all__ = ["ATTRIBUTES", "Attribute", "Conversation", "Question", "Statement", "conversations"]

DAY: Final = 86_400.0


@dataclass(frozen=True, kw_only=True)
class Attribute:
    """One kind of fact about a person and how it is said, changed and asked for.

    Templates take ``{p}`` (the person), ``{v}`` (the value), ``{old}`` (the value it
    replaces, in ``changed``) and ``{when}`` (in ``ask_past``: "in March 2024")."""

    name: str
    values: tuple[str, ...]
    stated: tuple[str, ...]
    changed: tuple[str, ...]
    ask_now: tuple[str, ...]
    ask_past: tuple[str, ...]
    distractors: tuple[str, ...]
    """The same topic about someone else: ``{p}`` the person, ``{v}`` another value."""


_FIRST_NAMES: Final = (
    "Bob", "Amara", "Wei", "Priya", "Lars", "Sofia", "Kwame", "Yuki", "Mateo", "Fatima",
    "Ingrid", "Dmitri", "Chloe", "Rahul", "Hana", "Tomas", "Aisha", "Noah", "Elif", "Oren",
    "Marta", "Jonas", "Leila", "Diego", "Nadia", "Felix", "Zara", "Emeka", "Greta", "Hugo",
    "Anika", "Samir", "Rosa", "Tariq", "Lena", "Kofi", "Mei", "Pablo", "Ines", "Viktor",
)  # fmt: skip
_OTHER_NAMES: Final = (
    "Alice", "Ben", "Carla", "Dev", "Erin", "Farid", "Gina", "Henrik", "Iris", "Jamal",
    "Kira", "Luis", "Maya", "Nils", "Olga", "Pedro", "Quinn", "Rania", "Sven", "Tara",
    "Umar", "Vera", "Wanda", "Xavier", "Yara", "Zane", "Agnes", "Bruno", "Cleo", "Dario",
)  # fmt: skip
_CITIES: Final = (
    "Lisbon", "Berlin", "Porto", "Madrid", "Vienna", "Prague", "Oslo", "Dublin", "Toronto",
    "Melbourne", "Seattle", "Austin", "Kyoto", "Edinburgh", "Copenhagen", "Zurich", "Munich",
    "Warsaw", "Helsinki", "Barcelona", "Amsterdam", "Montreal", "Denver", "Nairobi",
    "Singapore", "Valencia", "Gothenburg", "Lyon",
)  # fmt: skip
_EMPLOYERS: Final = (
    "Siemens", "Spotify", "Airbus", "Philips", "Bosch", "Ikea", "Nokia", "Adidas",
    "Lufthansa", "Deloitte", "Unilever", "Ericsson", "Heineken", "Novartis", "Shopify",
    "Atlassian", "Canva", "Zalando", "the city library", "a small design studio",
    "the regional hospital", "a solar start-up", "the national railway", "a law firm downtown",
)  # fmt: skip
_PETS: Final = (
    "Biscuit", "Pepper", "Luna", "Milo", "Ziggy", "Mochi", "Rufus", "Olive", "Pickles",
    "Juniper", "Nacho", "Clementine", "Waffles", "Tofu", "Pumpkin", "Socks", "Marble",
)  # fmt: skip
_FOODS: Final = (
    "ramen", "paella", "lasagna", "sushi", "tacos", "pho", "shakshuka", "dumplings",
    "risotto", "falafel", "pad thai", "moussaka", "pierogi", "bibimbap", "gnocchi",
    "biryani", "ceviche", "goulash",
)  # fmt: skip
_CARS: Final = (
    "Toyota Corolla", "Volvo XC40", "Tesla Model 3", "Honda Civic", "Mazda MX-5",
    "Fiat Panda", "Skoda Octavia", "Subaru Outback", "Kia Niro", "Volkswagen Golf",
    "Renault Clio", "Ford Mustang", "Mini Cooper", "Hyundai Ioniq", "Peugeot 208",
)  # fmt: skip
_PHONES: Final = (
    "iPhone 13", "iPhone 15 Pro", "Pixel 7", "Pixel 8", "Galaxy S23", "Galaxy Z Flip",
    "Fairphone 5", "OnePlus 12", "Nothing Phone", "Xperia 10", "Motorola Edge",
)  # fmt: skip
_SPORTS: Final = (
    "tennis", "rock climbing", "rowing", "badminton", "swimming", "volleyball", "judo",
    "cycling", "squash", "fencing", "table tennis", "kayaking",
)  # fmt: skip
_LANGUAGES: Final = (
    "Japanese", "Portuguese", "Korean", "Italian", "Arabic", "Dutch", "Swedish", "Greek",
    "Turkish", "Mandarin", "Polish", "Hindi",
)  # fmt: skip

ATTRIBUTES: Final[tuple[Attribute, ...]] = (
    Attribute(
        name="home",
        values=_CITIES,
        stated=(
            "{p} lives in {v}.",
            "{p} has a small flat in {v}.",
            "{p} is based in {v} these days.",
        ),
        changed=(
            "{p} moved from {old} to {v} last week.",
            "{p} has relocated to {v} and left {old} behind.",
            "Turns out {p} lives in {v} now.",
            "{p} just finished unpacking in a new apartment in {v}.",
        ),
        ask_now=("Where does {p} live?", "Which city is {p} living in?"),
        ask_past=("Where did {p} live {when}?", "Which city was {p} living in {when}?"),
        distractors=(
            "{p}'s sister lives in {v}.",
            "{p} spent a long weekend in {v} with friends.",
            "{p} is thinking about visiting {v} next summer.",
        ),
    ),
    Attribute(
        name="employer",
        values=_EMPLOYERS,
        stated=("{p} works at {v}.", "{p} has a job at {v}.", "{p} is employed by {v}."),
        changed=(
            "Turns out {p}'s new job is at {v}.",
            "{p} left {old} and started working at {v}.",
            "{p} accepted an offer from {v} and handed in notice at {old}.",
            "{p} switched employers and now works for {v}.",
        ),
        ask_now=("Where does {p} work?", "Who is {p}'s employer?"),
        ask_past=("Where did {p} work {when}?", "Who was {p}'s employer {when}?"),
        distractors=(
            "{p}'s old school friend works at {v}.",
            "{p} had a job interview at {v} but turned it down.",
        ),
    ),
    Attribute(
        name="partner",
        values=_OTHER_NAMES,
        stated=(
            "{p} is dating {v}.",
            "{p}'s partner is {v}.",
            "{p} is in a relationship with {v}.",
        ),
        changed=(
            "{p} and {old} split up, and {p} is now seeing {v}.",
            "{p} has a new partner called {v}.",
            "These days {p} is together with {v}.",
            "{p} broke up with {old}; {p}'s partner is now {v}.",
        ),
        ask_now=("Who is {p}'s partner?", "Who is {p} dating?"),
        ask_past=("Who was {p} dating {when}?", "Who was {p}'s partner {when}?"),
        distractors=(
            "{p}'s cousin just got engaged to {v}.",
            "{p} had lunch with a colleague, {v}.",
        ),
    ),
    Attribute(
        name="pet",
        values=_PETS,
        stated=(
            "{p} has a dog named {v}.",
            "{p}'s pet is a cat called {v}.",
            "{p} looks after a rabbit named {v}.",
        ),
        changed=(
            "{old} went to live with {p}'s parents, and {p} now has a puppy called {v}.",
            "{p}'s new pet is a rescue dog named {v}.",
            "These days {p}'s only pet is a kitten called {v}.",
            "{p} rehomed {old} and adopted a cat named {v}.",
        ),
        ask_now=("What is the name of {p}'s pet?", "What is {p}'s pet called?"),
        ask_past=("What was {p}'s pet called {when}?", "What was the name of {p}'s pet {when}?"),
        distractors=("{p}'s neighbour has a parrot named {v}.", "{p} dog-sat a beagle called {v}."),
    ),
    Attribute(
        name="food",
        values=_FOODS,
        stated=("{p}'s favourite food is {v}.", "{p} loves {v} more than any other dish."),
        changed=(
            "{p} says {v} has replaced {old} as the favourite food.",
            "These days {p}'s favourite dish is {v}.",
            "{p} can't get enough of {v}; it is {p}'s new favourite food.",
            "{p} went off {old} and now likes {v} best.",
        ),
        ask_now=("What is {p}'s favourite food?", "Which dish does {p} like best?"),
        ask_past=("What was {p}'s favourite food {when}?", "Which dish did {p} like best {when}?"),
        distractors=("{p} cooked {v} for a friend's birthday.", "{p}'s brother hates {v}."),
    ),
    Attribute(
        name="car",
        values=_CARS,
        stated=("{p} drives a {v}.", "{p}'s car is a {v}."),
        changed=(
            "{p} sold the {old} and bought a {v}.",
            "{p} now drives a {v}.",
            "Turns out {p} traded in the {old} for a {v}.",
            "{p} picked up a {v} from the dealer yesterday.",
        ),
        ask_now=("What car does {p} drive?", "What is {p}'s car?"),
        ask_past=("What car did {p} drive {when}?", "What was {p}'s car {when}?"),
        distractors=("{p} rented a {v} on holiday.", "{p}'s father drives a {v}."),
    ),
    Attribute(
        name="lead",
        values=_OTHER_NAMES,
        stated=("{p}'s team lead is {v}.", "{p} reports to {v} at work."),
        changed=(
            "After the reorg {p} reports to {v} instead of {old}.",
            "{p} has a new team lead, {v}.",
            "{old} left the team, so {p}'s manager is now {v}.",
            "{p} moved teams and now works under {v}.",
        ),
        ask_now=("Who is {p}'s team lead?", "Who does {p} report to?"),
        ask_past=("Who was {p}'s team lead {when}?", "Who did {p} report to {when}?"),
        distractors=("{p} mentored a new hire named {v}.", "{p}'s friend {v} became a manager."),
    ),
    Attribute(
        name="phone",
        values=_PHONES,
        stated=("{p} uses a {v}.", "{p}'s phone is a {v}."),
        changed=(
            "{p} upgraded from the {old} to a {v}.",
            "{p} dropped the {old} in a lake and now uses a {v}.",
            "{p}'s new phone is a {v}.",
            "{p} switched to a {v} last month.",
        ),
        ask_now=("What phone does {p} have?", "Which phone does {p} use?"),
        ask_past=("What phone did {p} have {when}?", "Which phone did {p} use {when}?"),
        distractors=("{p} bought a {v} as a gift for a nephew.", "{p}'s mother uses a {v}."),
    ),
    Attribute(
        name="sport",
        values=_SPORTS,
        stated=("{p} plays {v} every week.", "{p}'s sport is {v}."),
        changed=(
            "{p} gave up {old} and took up {v}.",
            "{p}'s new sport is {v}.",
            "These days {p} spends weekends doing {v}.",
            "{p} has switched from {old} to {v}.",
        ),
        ask_now=("What sport does {p} do?", "Which sport does {p} practise?"),
        ask_past=("What sport did {p} do {when}?", "Which sport did {p} practise {when}?"),
        distractors=("{p} watched a {v} match on television.", "{p}'s niece is good at {v}."),
    ),
    Attribute(
        name="language",
        values=_LANGUAGES,
        stated=("{p} is learning {v}.", "{p} takes evening classes in {v}."),
        changed=(
            "{p} stopped studying {old} and started learning {v}.",
            "{p} is now learning {v}.",
            "{p} signed up for a {v} course instead.",
            "{p} dropped {old}; the language {p} studies now is {v}.",
        ),
        ask_now=("What language is {p} learning?", "Which language does {p} study?"),
        ask_past=(
            "What language was {p} learning {when}?",
            "Which language did {p} study {when}?",
        ),
        distractors=("{p}'s colleague speaks fluent {v}.", "{p} watched a film in {v}."),
    ),
)

_CHITCHAT: Final = (
    "{p} went hiking in the hills on Saturday.",
    "{p} thinks the new cafe on the corner is too loud.",
    "{p} finished a novel about lighthouse keepers.",
    "{p} has a dentist appointment coming up.",
    "{p} repainted the kitchen a pale green.",
    "{p} caught a cold after the concert.",
    "{p} started doing a crossword every morning.",
    "{p} found an old photo album in the attic.",
    "{p} is binge-watching a detective series.",
    "{p} baked sourdough bread for the first time.",
    "{p} ran a 10k race and finished in under an hour.",
    "{p} volunteered at the food bank on Sunday.",
)

_MONTHS: Final = (
    "January", "February", "March", "April", "May", "June", "July", "August", "September",
    "October", "November", "December",
)  # fmt: skip
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
    people = tuple(rng.sample(_FIRST_NAMES, rng.choice((1, 2))))
    n_slots = rng.randint(2, 4)
    slots: list[tuple[str, Attribute]] = []
    while len(slots) < n_slots:
        pick = (rng.choice(people), rng.choice(ATTRIBUTES))
        if all(pick[0] != p or pick[1].name != a.name for p, a in slots):
            slots.append(pick)
    changes = [rng.randint(1, 3) for _ in slots]
    n_sessions = max(changes) + 1 + rng.randint(0, 2)
    gaps = [rng.randint(20, 110) for _ in range(n_sessions - 1)]
    first = _START + timedelta(days=rng.randint(0, 520), hours=rng.randint(8, 20))
    times = [first]
    for gap in gaps:
        times.append(times[-1] + timedelta(days=gap, hours=rng.randint(-3, 3)))

    drafts: list[_Draft] = []
    used_texts: set[str] = set()
    used_values: set[str] = set()
    for (person, attribute), n_changes in zip(slots, changes, strict=True):
        slot = f"{person}/{attribute.name}"
        sessions = sorted(rng.sample(range(n_sessions), n_changes + 1))
        values = rng.sample(
            [v for v in attribute.values if v not in people + tuple(used_values)], n_changes + 1
        )
        used_values.update(values)
        wordings = rng.sample(attribute.changed, n_changes)
        before: int | None = None
        for step, (session, value) in enumerate(zip(sessions, values, strict=True)):
            template = rng.choice(attribute.stated) if step == 0 else wordings[step - 1]
            old = values[step - 1] if step else ""
            text = _sentence(template.format(p=person, v=value, old=old))
            used_texts.add(text)
            drafts.append(
                _Draft(session=session, text=text, slot=slot, value=value, previous=before)
            )
            before = len(drafts) - 1
    for session in range(n_sessions):
        for _ in range(rng.randint(1, 2)):
            text = _distractor(rng, people, used_values)
            if text not in used_texts:
                used_texts.add(text)
                drafts.append(_Draft(session=session, text=text))

    order = list(range(len(drafts)))
    rng.shuffle(order)
    order.sort(key=lambda i: drafts[i].session)  # stable: a session's statements shuffled
    ids = {i: f"s{n + 1}" for n, i in enumerate(order)}
    statements = tuple(
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
    return Conversation(
        id=conversation_id,
        people=people,
        statements=statements,
        questions=tuple(_questions(rng, slots, statements)),
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
        return f"in {_MONTHS[month.month - 1]} {month.year}", month.replace(
            day=15, hour=12
        ).timestamp()
    first_day = datetime(begin.year, begin.month, begin.day, 12, tzinfo=UTC) + timedelta(days=1)
    days = int((end - first_day.timestamp()) // DAY)
    day = first_day + timedelta(days=rng.randint(0, max(0, days - 1)))
    return f"on {day.day} {_MONTHS[day.month - 1]} {day.year}", day.timestamp()


def _next_month(month: datetime) -> datetime:
    return month.replace(year=month.year + month.month // 12, month=month.month % 12 + 1)


def _distractor(rng: random.Random, people: tuple[str, ...], used_values: set[str]) -> str:
    person = rng.choice(people)
    if rng.random() < 0.5:
        return _sentence(rng.choice(_CHITCHAT).format(p=person))
    attribute = rng.choice(ATTRIBUTES)
    value = rng.choice([v for v in attribute.values if v not in used_values and v not in people])
    return _sentence(rng.choice(attribute.distractors).format(p=person, v=value))


_AN: Final = re.compile(r"\b([Aa]) (?=[AEIOUaeiouX](?!ne))")
"""``a`` before a vowel sound ("a iPhone" -> "an iPhone"; "a OnePlus" stays)."""


def _sentence(text: str) -> str:
    text = _AN.sub(r"\1n ", text)
    return text[0].upper() + text[1:]
