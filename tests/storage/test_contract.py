"""The RecordStore contract: every backend (memory, sqlite, postgres) passes these tests."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from memstack._json import JSON
from memstack.clock import ManualClock
from memstack.errors import InvalidInput, NotFound
from memstack.storage import Filter, Record, RecordStore, ScoredRecord, get_one
from memstack.storage._text import query_words
from tests.storage.records import T0, ids, key, rec, snapshot
from tests.threads import in_threads

# --- writes and reads -------------------------------------------------------------


def test_upsert_then_get_round_trips_every_field(store: RecordStore) -> None:
    record = rec(
        "r1",
        text="Ünïcode text with 'quotes' and \"doubles\" 🦊",
        metadata={"a": [1, 2.5, None, True], "nested": {"k": "v\n\\"}, "é": "ü"},
        kind="fact",
        importance=0.25,
        created_at=T0 - 50,
        updated_at=T0 - 10,
        last_accessed_at=T0 - 5,
        expires_at=T0 + 3600,
        embedding=[0.1, -2.0, 3.5, 1e-7],
        context="Bob: the turn before\nAlice: the turn after 🦊",
    )
    store.upsert([record, rec("r2", embedding=None)])
    got = store.get("ns", ["r1", "r2"])
    assert [key(r) for r in got] == [key(record), key(rec("r2"))]
    embedding = got[0].embedding
    assert embedding is not None
    assert embedding.dtype == np.float32
    assert not embedding.flags.writeable
    assert got[1].embedding is None


def test_upsert_replaces_by_namespace_and_id(store: RecordStore) -> None:
    store.upsert([rec("r1", text="alpha beta", embedding=[1, 0, 0], metadata={"v": 1})])
    replacement = rec(
        "r1", text="gamma delta", embedding=[0, 1, 0], metadata={"v": 2}, updated_at=T0 + 1
    )
    store.upsert([replacement])
    assert [key(r) for r in store.get("ns", ["r1"])] == [key(replacement)]
    assert store.count("ns") == 1
    assert store.text_search("ns", "alpha", k=5) == []
    assert ids([h.record for h in store.text_search("ns", "gamma", k=5)]) == ["r1"]
    [hit] = store.vector_search("ns", [0, 1, 0], k=5)
    assert hit.score == pytest.approx(1.0, abs=1e-5)


def test_replacing_without_embedding_removes_it_from_vector_search(store: RecordStore) -> None:
    store.upsert([rec("r1", embedding=[1, 0]), rec("r2", embedding=[0, 1])])
    store.upsert([rec("r1")])
    assert ids([h.record for h in store.vector_search("ns", [1, 0], k=5)]) == ["r2"]


def test_a_batch_repeating_a_key_keeps_the_last(store: RecordStore) -> None:
    store.upsert([rec("r1", text="first"), rec("r2"), rec("r1", text="last")])
    assert [r.text for r in store.get("ns", ["r1"])] == ["last"]
    assert store.count("ns") == 2


def test_empty_batch_and_empty_id_lists_are_no_ops(store: RecordStore) -> None:
    store.upsert([])
    assert store.get("ns", []) == []
    assert store.delete("ns", []) == 0
    store.touch("ns", [], T0)
    assert store.count("ns") == 0


def test_get_keeps_the_order_asked_skips_missing_and_repeats(store: RecordStore) -> None:
    store.upsert([rec(i) for i in ("a", "b", "c")])
    assert ids(store.get("ns", ["c", "missing", "a", "c"])) == ["c", "a"]


def test_get_one(store: RecordStore) -> None:
    store.upsert([rec("a")])
    assert get_one(store, "ns", "a").id == "a"
    with pytest.raises(NotFound):
        get_one(store, "ns", "b")


def test_returned_metadata_is_a_copy(store: RecordStore) -> None:
    metadata: dict[str, JSON] = {"tags": ["x"], "deep": {"rows": [{"n": 1}], "ok": True}}
    store.upsert([rec("a", embedding=[1, 0], metadata=metadata)])
    reads = [
        lambda: store.get("ns", ["a"])[0],
        lambda: store.list("ns")[0],
        lambda: store.vector_search("ns", [1, 0], k=1)[0].record,
        lambda: store.text_search("ns", "text", k=1)[0].record,
    ]
    # Twice each, in turn: a later read may come from a store's cache of records.
    for read in reads * 2:
        got = read()
        tags, deep = got.metadata["tags"], got.metadata["deep"]
        assert isinstance(tags, list) and isinstance(deep, dict)
        rows = deep["rows"]
        assert isinstance(rows, list) and isinstance(rows[0], dict)
        tags.append("mutated")
        rows[0]["n"] = 2
        deep["new"] = None
        got.metadata["new"] = 1
        assert store.get("ns", ["a"])[0].metadata == metadata


def test_delete_counts_what_existed(store: RecordStore) -> None:
    store.upsert([rec(i) for i in ("a", "b", "c")])
    assert store.delete("ns", ["a", "missing", "a"]) == 1
    assert ids(store.list("ns", order="created_asc")) == ["b", "c"]
    assert store.delete_namespace("ns") == 2
    assert store.delete_namespace("ns") == 0
    assert store.count("ns") == 0


def test_touch_sets_last_accessed_only(store: RecordStore) -> None:
    store.upsert([rec("a", updated_at=T0 + 1), rec("b")])
    store.touch("ns", ["a", "missing"], T0 + 99)
    a, b = store.get("ns", ["a", "b"])
    assert (a.last_accessed_at, a.updated_at) == (T0 + 99, T0 + 1)
    assert b.last_accessed_at is None


def test_setup_is_idempotent(store: RecordStore) -> None:
    store.upsert([rec("a", embedding=[1, 2])])
    store.setup()
    store.setup()
    assert ids(store.get("ns", ["a"])) == ["a"]
    assert len(store.vector_search("ns", [1, 2], k=1)) == 1


# --- listing, paging, ordering ----------------------------------------------------

# Ids whose order differs between byte order and a natural-language collation.
ORDER_IDS = ["B", "a", "_x", "Z1", "b2", "A"]


def _ordering_records() -> list[Record]:
    times = [T0 + 3, T0 + 1, T0 + 3, T0 + 2, T0 + 1, T0 + 3]
    return [
        rec(i, created_at=t, updated_at=T0 + 10 - n)
        for n, (i, t) in enumerate(zip(ORDER_IDS, times, strict=True))
    ]


@pytest.mark.parametrize(
    ("order", "sort_key"),
    [
        ("created_desc", lambda r: (-r.created_at, r.id)),
        ("created_asc", lambda r: (r.created_at, r.id)),
        ("updated_desc", lambda r: (-r.updated_at, r.id)),
    ],
)
def test_list_orders_with_id_tie_break(
    store: RecordStore, order: Any, sort_key: Callable[[Record], Any]
) -> None:
    records = _ordering_records()
    store.upsert(records)
    expected = ids(sorted(records, key=sort_key))
    assert ids(store.list("ns", order=order)) == expected


def test_pages_cover_everything_once(store: RecordStore) -> None:
    store.upsert([rec(f"r{i:02d}", created_at=T0 + i % 7) for i in range(23)])
    pages = [store.list("ns", limit=5, offset=offset) for offset in range(0, 30, 5)]
    assert [len(p) for p in pages] == [5, 5, 5, 5, 3, 0]
    flat = [r for page in pages for r in page]
    assert ids(flat) == ids(store.list("ns", limit=100))
    assert len(set(ids(flat))) == 23
    assert store.count("ns") == 23


# --- namespaces -------------------------------------------------------------------


def _two_namespaces(store: RecordStore) -> None:
    store.upsert(
        [
            rec("x", "ns-a", text="shared words here", embedding=[1, 0, 0], kind="k"),
            rec("only-a", "ns-a", text="shared words", embedding=[1, 1, 0], kind="k"),
            rec("x", "ns-b", text="shared words there", embedding=[0, 0, 1], kind="k"),
        ]
    )


ISOLATION_CALLS: list[tuple[str, Callable[[RecordStore], Any], Any]] = [
    (
        "get",
        lambda s: [(r.namespace, r.text) for r in s.get("ns-b", ["x", "only-a"])],
        [("ns-b", "shared words there")],
    ),
    ("list", lambda s: [(r.namespace, r.id) for r in s.list("ns-b")], [("ns-b", "x")]),
    ("count", lambda s: s.count("ns-b"), 1),
    ("count-filtered", lambda s: s.count("ns-b", Filter(kinds=("k",))), 1),
    (
        "vector",
        lambda s: [h.record.namespace for h in s.vector_search("ns-b", [1, 0, 0], k=9)],
        ["ns-b"],
    ),
    (
        "text",
        lambda s: [h.record.namespace for h in s.text_search("ns-b", "shared", k=9)],
        ["ns-b"],
    ),
    (
        "empty-ns",
        lambda s: (
            s.list("ns"),
            s.count("ns"),
            s.vector_search("ns", [1, 0, 0], k=3),
            s.text_search("ns", "shared", k=3),
        ),
        ([], 0, [], []),
    ),
]


@pytest.mark.parametrize(
    ("name", "call", "expected"), ISOLATION_CALLS, ids=[c[0] for c in ISOLATION_CALLS]
)
def test_reads_never_cross_namespaces(
    store: RecordStore, name: str, call: Callable[[RecordStore], Any], expected: Any
) -> None:
    _two_namespaces(store)
    assert call(store) == expected


WRITES_ON_B: list[tuple[str, Callable[[RecordStore], Any]]] = [
    ("delete", lambda s: s.delete("ns-b", ["x", "only-a"])),
    ("delete_namespace", lambda s: s.delete_namespace("ns-b")),
    ("touch", lambda s: s.touch("ns-b", ["x", "only-a"], T0 + 5)),
    ("upsert", lambda s: s.upsert([rec("x", "ns-b", text="new", embedding=[0, 1, 0])])),
]


@pytest.mark.parametrize(("name", "write"), WRITES_ON_B, ids=[w[0] for w in WRITES_ON_B])
def test_writes_never_cross_namespaces(
    store: RecordStore, name: str, write: Callable[[RecordStore], Any]
) -> None:
    _two_namespaces(store)
    before = snapshot(store, ["ns-a"])
    write(store)
    assert snapshot(store, ["ns-a"]) == before
    assert ids([h.record for h in store.vector_search("ns-a", [1, 0, 0], k=1)]) == ["x"]


def test_namespaces_by_literal_prefix(store: RecordStore) -> None:
    names = ["user:1", "user:10", "user:2", "user_1", "userx1", "other", "Üser"]
    store.upsert([rec("r", ns) for ns in names])
    assert store.namespaces() == sorted(names)
    assert store.namespaces("user:1") == ["user:1", "user:10"]
    assert store.namespaces("user_") == ["user_1"]
    assert store.namespaces("user%") == []
    assert store.namespaces("nope") == []
    store.delete_namespace("user:10")
    assert store.namespaces("user:") == ["user:1", "user:2"]


def test_namespaces_by_prefix_at_the_edges_of_the_code_point_range(store: RecordStore) -> None:
    top = "\U0010ffff"
    names = ["ab", "ab" + top, "ab" + top + "z", "ac", "a" + top, "a" + top + top, "b"]
    store.upsert([rec("r", ns) for ns in names])
    assert store.namespaces("ab") == ["ab", "ab" + top, "ab" + top + "z"]
    assert store.namespaces("a" + top) == ["a" + top, "a" + top + top]
    assert store.namespaces(top) == []


def test_namespaces_may_use_different_embedding_sizes(store: RecordStore) -> None:
    store.upsert([rec("a", "small", embedding=[1, 2, 3]), rec("b", "big", embedding=[1] * 384)])
    assert ids([h.record for h in store.vector_search("small", [1, 2, 3], k=1)]) == ["a"]
    assert ids([h.record for h in store.vector_search("big", [1] * 384, k=1)]) == ["b"]


# --- filters ----------------------------------------------------------------------


def _filter_records() -> list[Record]:
    return [
        rec(
            "r1",
            text="memo one",
            kind="note",
            created_at=T0 - 30,
            embedding=[1, 0],
            metadata={"color": "red", "n": 1, "tags": ["a", "b"], "size": 2},
        ),
        rec(
            "r2",
            text="memo two",
            kind="fact",
            created_at=T0 - 20,
            embedding=[0.9, 0.1],
            metadata={"color": "blue", "n": 1.0, "nested": {"y": "z", "x": 1}},
        ),
        rec(
            "r3",
            text="memo three",
            kind=None,
            created_at=T0 - 10,
            embedding=[0.5, 0.5],
            metadata={"color": "red", "n": True, "tags": ["a", "b", "c"], "missing": None},
        ),
        rec(
            "r4",
            text="memo four",
            kind="note",
            created_at=T0,
            embedding=[0, 1],
            metadata={"color": "red", "size": 3, "quote": 'say "hi"\n'},
        ),
    ]


FILTER_CASES: list[tuple[str, Filter, set[str]]] = [
    ("none", Filter(), {"r1", "r2", "r3", "r4"}),
    ("kind", Filter(kinds=("note",)), {"r1", "r4"}),
    ("kinds", Filter(kinds=("note", "fact")), {"r1", "r2", "r4"}),
    ("no-kinds", Filter(kinds=()), set()),
    ("ids", Filter(ids=("r2", "r3", "zz")), {"r2", "r3"}),
    ("no-ids", Filter(ids=()), set()),
    ("after", Filter(created_after=T0 - 20), {"r3", "r4"}),
    ("before", Filter(created_before=T0 - 20), {"r1"}),
    ("window", Filter(created_after=T0 - 31, created_before=T0), {"r1", "r2", "r3"}),
    ("meta-str", Filter(metadata={"color": "red"}), {"r1", "r3", "r4"}),
    ("meta-case", Filter(metadata={"color": "RED"}), set()),
    ("meta-and", Filter(metadata={"color": "red", "size": 2}), {"r1"}),
    ("meta-int-is-float", Filter(metadata={"n": 1}), {"r1", "r2"}),
    ("meta-bool-not-int", Filter(metadata={"n": True}), {"r3"}),
    ("meta-list-exact", Filter(metadata={"tags": ["a", "b"]}), {"r1"}),
    ("meta-object", Filter(metadata={"nested": {"x": 1, "y": "z"}}), {"r2"}),
    ("meta-null-needs-key", Filter(metadata={"missing": None}), {"r3"}),
    ("meta-escapes", Filter(metadata={"quote": 'say "hi"\n'}), {"r4"}),
    ("meta-absent-key", Filter(metadata={"nope": "x"}), set()),
    ("combined", Filter(kinds=("note",), metadata={"color": "red"}, created_after=T0 - 30), {"r4"}),
]

FILTERED_READS: list[tuple[str, Callable[[RecordStore, Filter], set[str] | int]]] = [
    ("list", lambda s, f: set(ids(s.list("ns", filter=f)))),
    ("count", lambda s, f: s.count("ns", f)),
    ("vector", lambda s, f: {h.record.id for h in s.vector_search("ns", [1, 0], k=50, filter=f)}),
    ("text", lambda s, f: {h.record.id for h in s.text_search("ns", "memo", k=50, filter=f)}),
]


@pytest.mark.parametrize(("read_name", "read"), FILTERED_READS, ids=[r[0] for r in FILTERED_READS])
@pytest.mark.parametrize(
    ("case", "wanted", "expected"), FILTER_CASES, ids=[c[0] for c in FILTER_CASES]
)
def test_filters(
    store: RecordStore,
    read_name: str,
    read: Callable[[RecordStore, Filter], set[str] | int],
    case: str,
    wanted: Filter,
    expected: set[str],
) -> None:
    store.upsert(_filter_records())
    assert read(store, wanted) == (len(expected) if read_name == "count" else expected)


# --- expiry -----------------------------------------------------------------------


def test_expired_records_are_hidden_then_pruned(store: RecordStore, clock: ManualClock) -> None:
    now = clock.now()
    store.upsert(
        [
            rec("live", text="memo", embedding=[1, 0]),
            rec("soon", text="memo", embedding=[1, 0], expires_at=now + 10),
            rec("later", text="memo", embedding=[1, 0], expires_at=now + 100),
            rec("gone", "ns-expiring", text="memo", expires_at=now + 10),
        ]
    )
    assert store.count("ns") == 3
    assert store.namespaces() == ["ns", "ns-expiring"]
    clock.advance(10)  # expires_at == now counts as expired
    assert ids(store.get("ns", ["soon", "live"])) == ["live"]
    assert set(ids(store.list("ns"))) == {"live", "later"}
    assert store.count("ns") == 2
    assert store.count("ns", Filter(include_expired=True)) == 3
    assert {h.record.id for h in store.vector_search("ns", [1, 0], k=9)} == {"live", "later"}
    assert {h.record.id for h in store.text_search("ns", "memo", k=9)} == {"live", "later"}
    everything = Filter(include_expired=True)
    assert len(store.vector_search("ns", [1, 0], k=9, filter=everything)) == 3
    assert len(store.text_search("ns", "memo", k=9, filter=everything)) == 3
    assert store.namespaces() == ["ns"]
    assert store.prune_expired(clock.now()) == 2
    assert store.count("ns", Filter(include_expired=True)) == 2
    assert store.count("ns-expiring", Filter(include_expired=True)) == 0
    assert store.prune_expired(now + 1000) == 1
    assert ids(store.list("ns", filter=everything)) == ["live"]


# --- vector search ----------------------------------------------------------------


def test_vector_search_scores_are_true_cosine(store: RecordStore) -> None:
    rng = np.random.default_rng(7)
    matrix = rng.normal(size=(40, 16)) * rng.uniform(0.1, 10.0, size=(40, 1))
    store.upsert([rec(f"v{i:02d}", embedding=row) for i, row in enumerate(matrix)])
    store.upsert([rec("no-embedding")])
    query = rng.normal(size=16) * 7.5
    stored = matrix.astype(np.float32).astype(np.float64)
    cosine = stored @ query / (np.linalg.norm(stored, axis=1) * np.linalg.norm(query))
    expected = np.argsort(-cosine)[:10]
    hits = store.vector_search("ns", query, k=10)
    assert all(isinstance(h, ScoredRecord) for h in hits)
    assert ids([h.record for h in hits]) == [f"v{i:02d}" for i in expected]
    np.testing.assert_allclose([h.score for h in hits], cosine[expected], atol=1e-4)
    assert hits[-1].score < hits[0].score
    full = store.vector_search("ns", query, k=100)
    assert len(full) == 40
    assert min(h.score for h in full) < 0 <= max(h.score for h in full) <= 1


@pytest.mark.parametrize(
    ("query", "expected"),
    [([2, 0], 1.0), ([-3, 0], -1.0), ([0, 5], 0.0), ([1, 1], 2**-0.5)],
)
def test_vector_scores_span_minus_one_to_one(
    store: RecordStore, query: list[float], expected: float
) -> None:
    store.upsert([rec("a", embedding=[4, 0])])
    [hit] = store.vector_search("ns", query, k=1)
    assert hit.score == pytest.approx(expected, abs=1e-5)


def test_vector_search_without_embeddings_is_empty(store: RecordStore) -> None:
    store.upsert([rec("a")])
    assert store.vector_search("ns", [1, 2, 3], k=3) == []
    assert store.vector_search("empty", [1, 2, 3], k=3) == []


# --- text search ------------------------------------------------------------------


def _text_records() -> list[Record]:
    return [
        rec("both", text="the quick brown fox jumps"),
        rec("one", text="a slow red fox sleeps"),
        rec("none", text="lazy dogs never run"),
        rec("other-ns", "ns2", text="brown fox brown fox"),
    ]


def test_text_search_ranks_more_matching_words_higher(store: RecordStore) -> None:
    store.upsert(_text_records())
    hits = store.text_search("ns", "brown fox", k=10)
    assert ids([h.record for h in hits]) == ["both", "one"]
    assert hits[0].score > hits[1].score > 0
    assert ids([h.record for h in store.text_search("ns", "brown fox", k=1)]) == ["both"]


def test_text_search_reads_the_context_beside_the_text(store: RecordStore) -> None:
    store.upsert(
        [
            rec("turn", text="Alice: 5 years already!", context="Bob: how long married?"),
            rec("other", text="Alice: married in Lisbon"),
        ]
    )
    assert ids([h.record for h in store.text_search("ns", "married", k=5)]) == ["other", "turn"]
    assert ids([h.record for h in store.text_search("ns", "years", k=5)]) == ["turn"]
    # a new context replaces the old one in the keyword index
    store.upsert([rec("turn", text="Alice: 5 years already!", context="Bob: anniversary?")])
    assert ids([h.record for h in store.text_search("ns", "married", k=5)]) == ["other"]
    assert ids([h.record for h in store.text_search("ns", "anniversary", k=5)]) == ["turn"]
    [got] = store.get("ns", ["turn"])
    assert got.text == "Alice: 5 years already!" and got.context == "Bob: anniversary?"


def test_text_search_ignores_stop_words_unless_they_are_all_there_is(store: RecordStore) -> None:
    store.upsert(
        [
            rec("cat", text="the cat sat"),
            rec("the", text="the the the the of the and the"),
            rec("dog", text="a dog barked"),
        ]
    )
    assert ids([h.record for h in store.text_search("ns", "what is the cat", k=10)]) == ["cat"]
    only_stop = ids([h.record for h in store.text_search("ns", "the", k=10)])
    assert "dog" not in only_stop


def test_text_search_is_case_insensitive(store: RecordStore) -> None:
    store.upsert(_text_records())
    assert ids([h.record for h in store.text_search("ns", "BROWN", k=10)]) == ["both"]


NASTY_QUERIES = [
    "",
    "   ",
    '"',
    "'",
    '"unterminated fox',
    "AND",
    "OR",
    "NOT",
    "fox AND",
    "AND OR NOT",
    "*",
    "fox*",
    "NEAR(",
    "NEAR(fox brown",
    "fox NEAR/2 brown",
    "(",
    ")",
    "col:fox",
    "text:fox",
    "^fox",
    "-fox",
    "+fox",
    "fox -brown",
    "{fox}",
    "[fox]",
    "\\",
    "%",
    "_",
    "_%",
    "😀",
    "🦊 fox",
    "the",
    "a an the of",
    "'; DROP TABLE records; --",
    "fox & brown | !dog",
    "fox:*",
    "<->",
    "fox <-> brown",
    "\x00",
    "\x01fox",
    "\ud800",
    "ünïcödé",
    "fox" * 300,
    " ".join(f"w{i}" for i in range(500)),
]


@pytest.mark.parametrize("query", NASTY_QUERIES)
def test_any_text_query_is_safe(store: RecordStore, query: str) -> None:
    store.upsert(_text_records())
    hits = store.text_search("ns", query, k=5)
    assert all(h.record.namespace == "ns" for h in hits)
    if "fox" in query_words(query):
        assert "one" in ids([h.record for h in hits])
    if not query_words(query):
        assert hits == []


# --- validation -------------------------------------------------------------------

BAD_CALLS: list[tuple[str, Callable[[RecordStore], Any], str]] = [
    ("records-not-a-list", lambda s: s.upsert(rec("x")), "records"),  # type: ignore[arg-type]
    ("empty-namespace", lambda s: s.upsert([rec("x", "")]), "records[0].namespace"),
    ("empty-id", lambda s: s.upsert([rec("ok"), rec("")]), "records[1].id"),
    ("id-not-str", lambda s: s.upsert([rec(5)]), "records[0].id"),  # type: ignore[arg-type]
    ("nul-in-text", lambda s: s.upsert([rec("x", text="a\x00b")]), "records[0].text"),
    ("surrogate", lambda s: s.upsert([rec("x", text="\ud800")]), "records[0].text"),
    ("long-id", lambda s: s.upsert([rec("é" * 600)]), "records[0].id"),
    (
        "nan-embedding",
        lambda s: s.upsert([rec("ok"), rec("x", embedding=[1, float("nan")])]),
        "records[1].embedding",
    ),
    (
        "inf-embedding",
        lambda s: s.upsert([rec("x", embedding=[float("inf"), 1])]),
        "records[0].embedding",
    ),
    (
        "huge-embedding",
        lambda s: s.upsert([rec("x", embedding=np.array([1e300, 1.0]))]),
        "records[0].embedding",
    ),
    ("zero-embedding", lambda s: s.upsert([rec("x", embedding=[0, 0])]), "records[0].embedding"),
    ("2d-embedding", lambda s: s.upsert([rec("x", embedding=[[1, 2]])]), "records[0].embedding"),
    ("empty-embedding", lambda s: s.upsert([rec("x", embedding=[])]), "records[0].embedding"),
    (
        "mixed-dims",
        lambda s: s.upsert([rec("x", embedding=[1, 2]), rec("y", embedding=[1])]),
        "records[1].embedding",
    ),
    ("stored-dim", lambda s: s.upsert([rec("new", embedding=[1, 2, 3])]), "records[0].embedding"),
    ("importance", lambda s: s.upsert([rec("x", importance=1.5)]), "records[0].importance"),
    (
        "created-nan",
        lambda s: s.upsert([rec("x", created_at=float("nan"))]),
        "records[0].created_at",
    ),
    (
        "metadata-not-json",
        lambda s: s.upsert([rec("x", metadata={"s": {1, 2}})]),
        "records[0].metadata['s']",
    ),
    ("metadata-nul", lambda s: s.upsert([rec("x", metadata={"k": "\x00"})]), "records[0].metadata"),
    ("get-ids-str", lambda s: s.get("ns", "abc"), "ids"),
    ("get-empty-ns", lambda s: s.get("", ["a"]), "namespace"),
    ("delete-empty-id", lambda s: s.delete("ns", ["a", ""]), "ids[1]"),
    ("limit-0", lambda s: s.list("ns", limit=0), "limit"),
    ("limit-big", lambda s: s.list("ns", limit=10_001), "limit"),
    ("offset", lambda s: s.list("ns", offset=-1), "offset"),
    ("order", lambda s: s.list("ns", order="random"), "order"),  # type: ignore[arg-type]
    ("k-0", lambda s: s.vector_search("ns", [1, 2], k=0), "k"),
    ("k-bool", lambda s: s.text_search("ns", "a", k=True), "k"),
    ("vector-dim", lambda s: s.vector_search("ns", [1, 2, 3], k=1), "vector"),
    ("vector-nan", lambda s: s.vector_search("ns", [float("nan"), 1], k=1), "vector"),
    ("vector-zero", lambda s: s.vector_search("ns", [0, 0], k=1), "vector"),
    ("vector-text", lambda s: s.vector_search("ns", "ab", k=1), "vector"),
    ("query-none", lambda s: s.text_search("ns", None, k=1), "query"),  # type: ignore[arg-type]
    ("touch-at", lambda s: s.touch("ns", ["a"], float("inf")), "at"),
    (
        "filter-kinds-str",
        lambda s: s.list("ns", filter=Filter(kinds="note")),  # type: ignore[arg-type]
        "filter.kinds",
    ),
    (
        "filter-meta",
        lambda s: s.count("ns", Filter(metadata={"k": object()})),  # type: ignore[dict-item]
        "filter.metadata['k']",
    ),
    (
        "filter-time",
        lambda s: s.count("ns", Filter(created_after=float("inf"))),
        "filter.created_after",
    ),
    ("prune-now", lambda s: s.prune_expired(float("nan")), "now"),
]


@pytest.mark.parametrize(("name", "call", "field"), BAD_CALLS, ids=[c[0] for c in BAD_CALLS])
def test_bad_input_names_the_field_and_changes_nothing(
    store: RecordStore, name: str, call: Callable[[RecordStore], Any], field: str
) -> None:
    store.upsert([rec("a", embedding=[1, 2], metadata={"k": 1}), rec("b", text="keep")])
    before = snapshot(store, ["ns", "x"])
    with pytest.raises(InvalidInput) as raised:
        call(store)
    assert raised.value.field == field
    assert snapshot(store, ["ns", "x"]) == before


# --- concurrency ------------------------------------------------------------------


def test_concurrent_upserts_lose_nothing(store: RecordStore) -> None:
    threads, batches, size = 6, 8, 5

    def work(t: int) -> None:
        for b in range(batches):
            store.upsert(
                [
                    rec(
                        f"t{t}-b{b}-{i}",
                        text=f"word{t} common",
                        embedding=[t + 1, b + 1, i + 1],
                    )
                    for i in range(size)
                ]
            )
            store.vector_search("ns", [1, 1, 1], k=3)
            store.text_search("ns", "common", k=3)
            store.count("ns")

    assert in_threads(work, threads) == []
    assert store.count("ns") == threads * batches * size
    expected = [
        f"t{t}-b{b}-{i}" for t in range(threads) for b in range(batches) for i in range(size)
    ]
    assert len(store.get("ns", expected)) == len(expected)
    assert len(store.vector_search("ns", [1, 1, 1], k=1000)) == len(expected)
