"""What the scripted conversations of ``memstack bench updates`` are made of.

The people, the attributes of theirs that change (each with its values and the
wordings that state, change and ask for it), the chit-chat between, and the month
names questions use. ``bench.updates_data`` draws conversations from these.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

__all__ = ["ATTRIBUTES", "CHITCHAT", "FIRST_NAMES", "MONTHS", "Attribute"]


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


FIRST_NAMES: Final = (
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

CHITCHAT: Final = (
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

MONTHS: Final = (
    "January", "February", "March", "April", "May", "June", "July", "August", "September",
    "October", "November", "December",
)  # fmt: skip
