"""KeyMap: slots to keys and back, against a dict, through packs, removals and collisions."""

from __future__ import annotations

import random
from dataclasses import dataclass

import pytest

from memstack.storage._keymap import KeyMap
from tests.storage.allocated import allocated


@dataclass(frozen=True)
class Colliding:
    """A key whose hash every other one shares."""

    name: str

    def __hash__(self) -> int:
        return 7


def check(ids: KeyMap[str], model: dict[str, int], gone: set[str]) -> None:
    assert len(ids) == len(model)
    assert ids.live_keys() == sorted(model, key=model.__getitem__)
    assert ids.live_slots() == sorted(model.values())
    for key, slot in model.items():
        assert ids.get(key) == slot and key in ids and ids.keys[slot] == key
    for key in gone - model.keys():
        assert ids.get(key) is None and key not in ids
    asked = [*model, *gone, "never"]
    assert ids.slots(asked) == [model[k] for k in asked if k in model]


@pytest.mark.parametrize("seed", [1, 2])
def test_slots_and_keys_agree_with_a_dict_through_packs_and_removals(seed: int) -> None:
    rng = random.Random(seed)
    ids: KeyMap[str] = KeyMap()
    model: dict[str, int] = {}
    gone: set[str] = set()
    for step in range(30_000):  # enough writes to pack several times
        key = f"k{rng.randrange(12_000)}"
        if rng.random() < 0.3:
            slot = ids.pop(key)
            assert slot == model.pop(key, None)
            gone.add(key)
        elif key not in model:
            model[key] = ids.append(key)
            assert model[key] == len(ids.keys) - 1
        if step % 7_000 == 0:
            check(ids, model, gone)
    check(ids, model, gone)
    renumbered = KeyMap(ids.keys)  # as an owner compacting its slots does, dead ones kept
    check(renumbered, model, gone)
    compacted = KeyMap(ids.live_keys())
    check(compacted, {k: i for i, k in enumerate(ids.live_keys())}, gone)


def test_colliding_hashes_find_each_key() -> None:
    ids: KeyMap[Colliding] = KeyMap(Colliding(f"c{i}") for i in range(50))
    for i in range(50, 5_000):  # past the first pack
        ids.append(Colliding(f"c{i}"))
    ids.pop(Colliding("c3"))
    assert ids.get(Colliding("c3")) is None
    assert ids.get(Colliding("c4999")) == 4_999
    assert ids.get(Colliding("c7")) == 7
    wanted = [Colliding(n) for n in ("c9", "c3", "c4000", "nope")]
    assert ids.slots(wanted) == [9, 4_000]


def test_held_gives_the_key_objects_held() -> None:
    held = [f"id{i}" for i in range(5_000)]
    ids: KeyMap[str] = KeyMap(held)
    ids.append("late")
    asked = ["".join(["id", "42"]), "".join(["la", "te"]), "unknown"]
    same = ids.held(asked)
    assert same == asked
    assert same[0] is held[42] and same[1] is ids.keys[-1] and same[2] is asked[2]
    assert same[0] is not asked[0]


def test_a_packed_map_costs_a_few_bytes_a_key() -> None:
    keys = [f"m{i}" for i in range(50_000)]

    def build() -> KeyMap[str]:
        ids: KeyMap[str] = KeyMap()
        for key in keys:
            ids.append(key)
        ids.pack()
        return ids

    ids, used = allocated(build)
    per_key = used / len(keys)
    # the list of keys (8 bytes a key), a hash and a slot (12); a dict and a list of
    # the same keys took 74 bytes a key
    assert per_key < 24
    assert ids.get("m49999") == 49_999
