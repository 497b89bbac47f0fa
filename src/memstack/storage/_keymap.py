"""KeyMap: an index's slots and their keys, both ways, compactly.

``VectorRows`` and ``KeywordIndex`` each number their rows (slots) and must go from a
slot to its key (a search's winners) and from a key to its slot (a write, a filter).
A ``list`` one way and a ``dict`` the other cost several times the bytes per key this
does, beside the key itself (the dict's table and one ``int`` object per slot); here the
way back is a sorted array of the keys' 64-bit hashes beside their slots, 12 bytes a key,
plus a dict of the keys added since the last pack (at most an eighth of them).

A lookup finds the key's hash by bisection and checks the slot's key, so hash collisions
and the entries of keys removed since (their slot's key is None, and slots are not
reused until the owner renumbers them with a new ``KeyMap``) cost nothing but a
comparison.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Hashable, Iterable, Sequence
from typing import Final, Generic, TypeVar

import numpy as np
import numpy.typing as npt

__all__ = ["KeyMap"]

K = TypeVar("K", bound=Hashable)
_PACK_MIN: Final = 4_096
"""Keys added since the last pack before an add packs them (and from then on an eighth
of the keys held)."""


class KeyMap(Generic[K]):
    """Slot ``i`` holds ``keys[i]`` (None: a dead slot); a key holds one slot at most.
    Slots are appended, never reused; the caller serializes access."""

    def __init__(self, keys: Iterable[K | None] = ()) -> None:
        self.keys: list[K | None] = list(keys)
        self._recent: dict[K, int] = {}
        slots = np.array(self.live_slots(), dtype=np.int32)
        self._live = len(slots)
        hashes = np.fromiter((hash(self.keys[s]) for s in slots), dtype=np.int64, count=len(slots))
        order = np.argsort(hashes, kind="stable")
        self._hashes: npt.NDArray[np.int64] = hashes[order]
        self._slots: npt.NDArray[np.int32] = slots[order]
        self._sync()

    def __len__(self) -> int:
        """How many keys are held (live slots)."""
        return self._live

    def __contains__(self, key: K) -> bool:
        return self.get(key) is not None

    def get(self, key: K) -> int | None:
        """The slot of ``key``, or None."""
        slot = self._recent.get(key)
        if slot is not None:
            return slot
        hashes, slots, keys, wanted = self._hash_list, self._slot_list, self.keys, hash(key)
        i = bisect_left(hashes, wanted)
        while i < len(hashes) and hashes[i] == wanted:
            slot = slots[i]
            if keys[slot] == key:
                return int(slot)
            i += 1
        return None

    def slots(self, keys: Iterable[K]) -> list[int]:
        """The slots of those of ``keys`` held, in their order."""
        return [slot for slot in self.find(list(keys)) if slot is not None]

    def held(self, keys: Sequence[K]) -> list[K]:
        """For each of ``keys``, the equal key object held, else the key itself: two
        indexes of the same rows loaded one after the other can share their key objects."""
        same = []
        for key, slot in zip(keys, self.find(keys), strict=True):
            held = None if slot is None else self.keys[slot]
            same.append(key if held is None else held)
        return same

    def find(self, keys: Sequence[K]) -> list[int | None]:
        """Each key's slot or None: for many keys at once, one search over the sorted
        hashes, then a check of each slot's key (``get`` for the few that miss it)."""
        n = len(self._hashes)
        if not n:
            return [self.get(key) for key in keys]
        hashes = np.fromiter(map(hash, keys), dtype=np.int64, count=len(keys))
        first = self._slots[np.minimum(np.searchsorted(self._hashes, hashes), n - 1)].tolist()
        mine = self.keys
        return [s if mine[s] == k else self.get(k) for k, s in zip(keys, first, strict=True)]

    def append(self, key: K) -> int:
        """Give ``key`` (not held) the next slot and return it."""
        slot = len(self.keys)
        self.keys.append(key)
        self._recent[key] = slot
        self._live += 1
        if len(self._recent) >= max(_PACK_MIN, self._live // 8):
            self.pack()
        return slot

    def pop(self, key: K) -> int | None:
        """Free the slot of ``key`` (it becomes dead); returns it, or None if not held."""
        slot = self.get(key)
        if slot is None:
            return None
        self.keys[slot] = None
        self._recent.pop(key, None)
        self._live -= 1
        return slot

    def live_slots(self) -> list[int]:
        """The live slots, ascending."""
        return [slot for slot, key in enumerate(self.keys) if key is not None]

    def live_keys(self) -> list[K]:
        """The keys held, in slot order."""
        return [key for key in self.keys if key is not None]

    def pack(self) -> None:
        """Merge the keys added since the last pack into the sorted arrays."""
        if not self._recent:
            return
        added = np.fromiter(map(hash, self._recent), dtype=np.int64, count=len(self._recent))
        slots = np.fromiter(self._recent.values(), dtype=np.int32, count=len(self._recent))
        order = np.argsort(added, kind="stable")
        added, slots = added[order], slots[order]
        at = np.searchsorted(self._hashes, added)
        self._hashes = np.insert(self._hashes, at, added)
        self._slots = np.insert(self._slots, at, slots)
        self._recent = {}
        self._sync()

    def _sync(self) -> None:
        # bisect and indexing on memoryviews: several times faster than on numpy arrays
        self._hash_list = self._hashes.data
        self._slot_list = self._slots.data
