"""KeywordIndex: one namespace's Okapi BM25 index, in process, kept in step with writes.

Why not FTS5's ``bm25()``: it decodes every matching row's position list and ranks each
in turn, so a query word that a large share of a big namespace holds cost a recall many
times what it costs this index, which scores a word's whole posting list in one numpy
expression. Document frequencies are the namespace's own.

Words are lower-cased runs of letters and digits, stemmed with the Snowball English
stemmer (PyStemmer), so "married" finds "marriage". Rows are append-only: replacing or
removing a document marks its row dead; the dead rows are compacted away once they are a
quarter of the index. Document frequencies count live rows only, as if the dead ones had
never been written. The caller serializes access.
"""

from __future__ import annotations

import math
from array import array
from bisect import bisect_left
from collections import Counter
from collections.abc import Hashable, Iterable, Sequence
from functools import lru_cache
from typing import Any, Final, Generic, TypeVar

import numpy as np
import numpy.typing as npt

from memstack.errors import ConfigError
from memstack.storage._keymap import KeyMap
from memstack.storage._text import BM25_B, BM25_K1, tokenize
from memstack.storage._vectors import top_k

__all__ = ["KeywordIndex", "load_words", "stem_words", "stemmed_terms"]

K = TypeVar("K", bound=Hashable)
Hashes = npt.NDArray[np.int64]
Rows = npt.NDArray[np.int32]
Tfs = npt.NDArray[np.uint8]
Postings = tuple[npt.NDArray[np.integer[Any]], npt.NDArray[np.integer[Any]]]
"""A term's rows and how often each holds it."""
_PACK_MIN: Final = 4_096
"""Rows written since the last pack before a write packs them (and from then on as many
rows as are packed already, so a bulk load packs each row about twice)."""
_SEARCH_PACK: Final = 8
"""A search packs the rows written since the last pack once they are an eighth of those
packed (and at least ``_PACK_MIN``): a row waiting in the write buffer takes several
times the memory of a packed one, and after a bulk load of writes up to half the rows
could wait there. A pack of a large namespace takes a fraction of a second, so paying it
once per an eighth of the rows written keeps its share of the searches small."""


_INSTALL = 'keyword search needs PyStemmer: pip install "PyStemmer>=2.2" (a memstack dependency)'


@lru_cache(maxsize=1)
def _stemmer() -> object:
    try:
        import Stemmer  # type: ignore[import-not-found]
    except ImportError as exc:  # pragma: no cover - a dependency of memstack
        raise ConfigError(_INSTALL) from exc
    return Stemmer.Stemmer("english")


@lru_cache(maxsize=65_536)
def _stem(word: str) -> str:
    return str(_stemmer().stemWord(word))  # type: ignore[attr-defined]


def stem_words(words: Iterable[str]) -> list[str]:
    """Each word's Snowball English stem (words are already lower-cased). A number is its
    own stem and skips the cache, which it would otherwise fill with one-off entries."""
    return [w if w.isdecimal() else _stem(w) for w in words]


def stemmed_terms(text: str) -> list[str]:
    """The stemmed words of ``text``, in order, repeats kept (a document's terms)."""
    return stem_words(tokenize(text))


class KeywordIndex(Generic[K]):
    """BM25 over the documents of one namespace, each under a key (the backend's id).

    Two parts. The packed ``_Segment`` holds most rows' postings in four numpy arrays:
    terms by 64-bit hash, sorted, and one CSR run of ``(row, tf)`` per term. The rows
    written since live in a small write buffer (a dict from term to its postings, each
    ``row << 8 | tf`` in one int64, a lone int while one row holds the term); once it
    has as many rows as the segment it is merged in by a few numpy passes, as are the
    dead rows dropped by a compaction. A search scores both parts of each query term.
    Beside them, per row: its key, length, expiry and whether it is alive.

    With many memories holding a unique word each (``bench recall``'s corpus), packing
    takes well under half the memory of a dict entry and a posting object per term
    (``tracemalloc``, keys not counted), with the same results, scores bit for bit, and
    searches as fast, and a compaction is an order of magnitude faster. Terms are told apart
    by Python's 64-bit string hash (per process, never stored): two distinct terms
    colliding, odds about 1 in 10^8 among a million terms, would share one posting list.
    Document frequencies are counted at search time over the live rows of a term's
    postings (no per-row list of terms to keep them in step with removals).
    """

    def __init__(self) -> None:
        self._ids: KeyMap[K] = KeyMap()  # each row's key (None: a dead row) and back
        self._alive = bytearray()
        self._lengths = array("f")
        self._expires = array("d")
        self._soonest = math.inf  # no row expires before it (a removed one may still count)
        self._total_length = 0
        self._segment = _Segment.empty()
        self._packed_rows = 0  # rows below this are in the segment
        self._vocab: dict[str, int] = {}  # the write buffer's terms -> index in _postings
        self._postings: list[array[int] | int] = []  # row << 8 | min(tf, 255), per row

    def __len__(self) -> int:
        return len(self._ids)

    def held(self, keys: Sequence[K]) -> list[K]:
        """Each key object held equal to one of ``keys``, else that key (``KeyMap.held``)."""
        return self._ids.held(keys)

    def put(self, key: K, text: str, expires_at: float | None) -> None:
        """Index ``text`` under ``key``, replacing what ``key`` held."""
        self.remove(key)
        self._add(key, text, expires_at)

    def _add(self, key: K, text: str, expires_at: float | None) -> None:
        """``put`` of a key not held."""
        self._append(key, Counter(stemmed_terms(text)), expires_at)
        if self._buffered_rows() >= max(_PACK_MIN, self._packed_rows):
            self.pack()

    def _buffered_rows(self) -> int:
        return len(self._ids.keys) - self._packed_rows

    def _append(self, key: K, counts: Counter[str], expires_at: float | None) -> None:
        row = self._ids.append(key)
        self._alive.append(1)
        length = sum(counts.values())
        self._lengths.append(length)
        self._expires.append(math.inf if expires_at is None else expires_at)
        if expires_at is not None:
            self._soonest = min(self._soonest, expires_at)
        self._total_length += length
        vocab, postings = self._vocab, self._postings
        for term, tf in counts.items():
            posting = row << 8 | min(tf, 255)
            term_id = vocab.get(term)
            if term_id is None:
                vocab[term] = len(postings)
                postings.append(posting)
            else:
                held = postings[term_id]
                if isinstance(held, int):
                    postings[term_id] = array("q", (held, posting))
                else:
                    held.append(posting)

    def remove(self, key: K) -> bool:
        row = self._ids.pop(key)
        if row is None:
            return False
        self._alive[row] = 0
        self._total_length -= int(self._lengths[row])
        if len(self._ids.keys) - len(self._ids) > max(1_000, len(self._ids) // 4):
            self.pack()
        return True

    def pack(self) -> None:
        """Merge the rows written since the last pack into the segment and drop the dead
        rows (renumbering the rest, in order)."""
        alive = np.frombuffer(self._alive, dtype=np.bool_)
        keep = None if len(self._ids) == len(self._ids.keys) else alive
        self._segment = self._segment.merged(self._buffered(), keep)
        if keep is None:
            self._ids.pack()
        else:
            self._ids = KeyMap(self._ids.live_keys())
            self._lengths = array("f", np.frombuffer(self._lengths, np.float32)[keep].tobytes())
            self._expires = array("d", np.frombuffer(self._expires, np.float64)[keep].tobytes())
            self._soonest = min(self._expires, default=math.inf)
            self._alive = bytearray(b"\x01" * len(self._ids))
        self._packed_rows = len(self._ids.keys)
        self._vocab, self._postings = {}, []

    def _buffered(self) -> _Segment:
        """The write buffer as a segment of its own (terms not yet sorted)."""
        counts = np.fromiter(
            (1 if isinstance(p, int) else len(p) for p in self._postings),
            dtype=np.int64,
            count=len(self._postings),
        )
        flat = array("q")
        for held in self._postings:
            if isinstance(held, int):
                flat.append(held)
            else:
                flat.extend(held)
        packed = np.frombuffer(flat, dtype=np.int64)
        return _Segment(
            np.fromiter(map(hash, self._vocab), dtype=np.int64, count=len(self._vocab)),
            np.concatenate(([0], np.cumsum(counts))),
            (packed >> 8).astype(np.int32),
            (packed & 255).astype(np.uint8),
        )

    def search(
        self,
        words: Sequence[str],
        k: int,
        now: float | None,
        allowed: Iterable[K] | None = None,
    ) -> list[tuple[K, float]]:
        """The ``k`` best ``(key, BM25)`` for any of ``words`` (plain lower-cased query
        words), best first (equal scores by key, ``top_k``); rows expired at ``now``
        (None: keep them) and keys outside ``allowed`` (None: all) never come back."""
        if self._buffered_rows() >= max(_PACK_MIN, self._packed_rows // _SEARCH_PACK):
            self.pack()
        n = len(self._ids)
        if n == 0:
            return []
        keys = self._ids.keys
        alive = np.frombuffer(self._alive, dtype=np.bool_)
        clean = n == len(keys)
        scores = self._scores(words, n, None if clean else alive)
        live = scores > 0
        if not clean:
            live &= alive
        if now is not None and now >= self._soonest:
            live &= np.frombuffer(self._expires, dtype=np.float64) > now
        if allowed is not None:
            keep = np.zeros(len(keys), dtype=bool)
            keep[self._ids.slots(allowed)] = True
            live &= keep
        candidates = np.flatnonzero(live)
        best = candidates[top_k(scores[candidates], k, lambda i: keys[candidates[i]])]
        return [(keys[i], float(scores[i])) for i in best]

    def _scores(
        self, words: Sequence[str], n: int, alive: npt.NDArray[np.bool_] | None
    ) -> npt.NDArray[np.float32]:
        """Each slot's BM25 for ``words`` over the ``n`` live rows (``alive``: the live
        slots, None when every slot is).

        Every term's postings go into one array, in term order, so BM25 is a few
        whole-array operations (a term at a time took ~12 small ones each); np.add.at
        adds each row's terms in that order, in float32: the sums a term-at-a-time loop
        makes."""
        lengths = np.frombuffer(self._lengths, dtype=np.float32)
        average = self._total_length / n or 1.0
        held: list[npt.NDArray[np.integer[Any]]] = []
        counts: list[npt.NDArray[np.integer[Any]]] = []
        idfs: list[float] = []
        sizes: list[int] = []
        for term in set(stem_words(words)):
            parts = self._postings_of(term)
            if alive is None:
                df = sum(len(rows) for rows, _ in parts)
            else:
                df = sum(int(np.count_nonzero(alive[rows])) for rows, _ in parts)
            if df == 0:
                continue
            idf = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
            for rows, tfs in parts:
                held.append(rows)
                counts.append(tfs)
                idfs.append(idf)
                sizes.append(len(rows))
        scores = np.zeros(len(lengths), dtype=np.float32)
        if held:
            rows = np.concatenate(held).astype(np.intp, copy=False)
            tfs = np.concatenate(counts).astype(np.float32)
            weights = np.repeat(np.asarray(idfs, dtype=np.float32), sizes)
            norm = BM25_K1 * (1.0 - BM25_B + BM25_B * lengths[rows] / average)
            np.add.at(scores, rows, weights * tfs * (BM25_K1 + 1.0) / (tfs + norm))
        return scores

    def _postings_of(self, term: str) -> list[Postings]:
        """The ``(rows, tfs)`` holding ``term``: in the segment and in the write buffer."""
        parts: list[Postings] = []
        found = self._segment.find(hash(term))
        if found is not None:
            parts.append(found)
        term_id = self._vocab.get(term)
        if term_id is not None:
            packed = _packed(self._postings[term_id])
            parts.append((packed >> 8, packed & 255))
        return parts


def load_words(rows: Iterable[tuple[K, str, float | None]]) -> KeywordIndex[K]:
    """A ``KeywordIndex`` of ``(key, text, expires_at)`` rows with distinct keys (a
    table's rows), packed."""
    words: KeywordIndex[K] = KeywordIndex()
    for key, text, expires_at in rows:
        words._add(key, text, expires_at)
    words.pack()  # the postings in a few numpy arrays: a fraction of their size as written
    return words


class _Segment:
    """Posting lists by term hash: the term of ``hashes[i]`` is held by the rows
    ``rows[starts[i]:starts[i + 1]]`` (ascending), ``tfs`` times each. ``hashes`` is
    sorted, except in a write buffer's segment on its way to a merge. Never changed."""

    def __init__(self, hashes: Hashes, starts: Hashes, rows: Rows, tfs: Tfs) -> None:
        self.hashes, self.starts, self.rows, self.tfs = hashes, starts, rows, tfs
        self._hash_list = hashes.data  # bisect on it: faster than searchsorted for one key
        self._start_list = starts.data

    @classmethod
    def empty(cls) -> _Segment:
        return cls(
            np.zeros(0, dtype=np.int64),
            np.zeros(1, dtype=np.int64),
            np.zeros(0, dtype=np.int32),
            np.zeros(0, dtype=np.uint8),
        )

    def find(self, term_hash: int) -> Postings | None:
        i = bisect_left(self._hash_list, term_hash)
        if i == len(self._hash_list) or self._hash_list[i] != term_hash:
            return None
        lo, hi = self._start_list[i], self._start_list[i + 1]
        return self.rows[lo:hi], self.tfs[lo:hi]

    def merged(self, newer: _Segment, keep: npt.NDArray[np.bool_] | None) -> _Segment:
        """This segment and ``newer`` (rows above all of this one's) in one, sorted;
        with ``keep``, only the rows it marks, renumbered in order."""
        hashes = np.concatenate((self.hashes, newer.hashes))
        counts = np.concatenate((np.diff(self.starts), np.diff(newer.starts)))
        firsts = np.concatenate((self.starts[:-1], len(self.rows) + newer.starts[:-1]))
        order = np.argsort(hashes, kind="stable")  # a term's older run first
        hashes, counts, firsts = hashes[order], counts[order], firsts[order]
        picks = np.repeat(firsts - np.cumsum(counts) + counts, counts)  # run by run
        picks += np.arange(len(picks))
        rows = np.concatenate((self.rows, newer.rows))[picks]
        tfs = np.concatenate((self.tfs, newer.tfs))[picks]
        if keep is not None:
            held = keep[rows]
            run = np.repeat(np.arange(len(counts)), counts)
            counts = np.bincount(run[held], minlength=len(counts))
            rows = (np.cumsum(keep, dtype=np.int64) - 1)[rows[held]].astype(np.int32)
            tfs = tfs[held]
        unique, first = np.unique(hashes, return_index=True)  # a term in both: one run
        counts = np.add.reduceat(counts, first) if len(first) else counts
        used = counts > 0
        return _Segment(unique[used], np.concatenate(([0], np.cumsum(counts[used]))), rows, tfs)


def _packed(held: array[int] | int) -> npt.NDArray[np.int64]:
    """A term's postings as int64s, read in place when they are an array."""
    if isinstance(held, int):
        return np.array([held], dtype=np.int64)
    return np.frombuffer(held, dtype=np.int64)
