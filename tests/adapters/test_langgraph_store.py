"""MemstackStore against LangGraph's own store behaviour.

The cases are ported from LangGraph's store tests (libs/checkpoint/tests/test_store.py,
written for its InMemoryStore) and run on every memstack backend; LangGraph's
character-count fake embeddings are replaced by memstack's HashEmbedder.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from langchain_core.embeddings import Embeddings
from langgraph.store.base import GetOp, InvalidNamespaceError, PutOp, SearchOp

from memstack.adapters.langgraph import MemstackStore
from memstack.clock import ManualClock
from memstack.embeddings import HashEmbedder
from memstack.errors import InvalidInput
from memstack.storage import Filter, Namespace, RecordStore

LISTING = [
    ("a", "b", "c"),
    ("a", "b", "d", "e"),
    ("a", "b", "d", "i"),
    ("a", "b", "f"),
    ("a", "c", "f"),
    ("b", "a", "f"),
    ("users", "123"),
    ("users", "456", "settings"),
    ("admin", "users", "789"),
]


@pytest.fixture
def plain(records: RecordStore) -> MemstackStore:
    return MemstackStore(records)


@pytest.fixture
def semantic(records: RecordStore, embedder: HashEmbedder) -> MemstackStore:
    return MemstackStore(records, embedder=embedder)


# -- namespaces (test_list_namespaces_*) ----------------------------------------------------


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({"prefix": ("a", "b")}, LISTING[:4]),
        ({"suffix": ("f",)}, [("a", "b", "f"), ("a", "c", "f"), ("b", "a", "f")]),
        ({"prefix": ("a",), "suffix": ("f",)}, [("a", "b", "f"), ("a", "c", "f")]),
        (
            {"prefix": ("a", "b"), "max_depth": 3},
            [("a", "b", "c"), ("a", "b", "d"), ("a", "b", "f")],
        ),
        ({"prefix": ("a", "b"), "limit": 2}, [("a", "b", "c"), ("a", "b", "d", "e")]),
        ({"prefix": ("a", "b"), "offset": 2}, [("a", "b", "d", "i"), ("a", "b", "f")]),
        ({"prefix": ("a", "*", "f")}, [("a", "b", "f"), ("a", "c", "f")]),
        ({"suffix": ("*", "f")}, [("a", "b", "f"), ("a", "c", "f"), ("b", "a", "f")]),
        ({"prefix": ("nonexistent",)}, []),
        ({"prefix": ("users", "123")}, [("users", "123")]),
        ({"prefix": ("users",)}, [("users", "123"), ("users", "456", "settings")]),
        ({"max_depth": 1}, [("a",), ("admin",), ("b",), ("users",)]),
        ({}, sorted(LISTING)),
    ],
)
def test_list_namespaces(
    plain: MemstackStore, options: dict[str, Any], expected: list[tuple[str, ...]]
) -> None:
    for i, ns in enumerate(LISTING):
        plain.put(ns, f"id_{i}", {"data": f"value_{i:02d}"})
    assert plain.list_namespaces(**options) == expected


def test_list_namespaces_pagination_and_empty_store(plain: MemstackStore) -> None:
    assert plain.list_namespaces() == []
    for i in range(20):
        plain.put(("namespace", f"sub_{i:02d}"), f"id_{i:02d}", {"data": i})
    for offset in (0, 5, 15):
        page = plain.list_namespaces(prefix=("namespace",), limit=5, offset=offset)
        assert page == [("namespace", f"sub_{i:02d}") for i in range(offset, offset + 5)]


def test_a_label_that_only_starts_like_the_prefix_is_not_under_it(plain: MemstackStore) -> None:
    plain.put(("ab",), "k", {"x": 1})
    plain.put(("a", "b"), "k", {"x": 2})
    assert plain.list_namespaces(prefix=("a",)) == [("a", "b")]
    assert [i.value for i in plain.search(("a",))] == [{"x": 2}]


def test_a_deleted_namespace_is_no_longer_listed(plain: MemstackStore) -> None:
    plain.put(("x", "y"), "k", {"v": 1})
    plain.delete(("x", "y"), "k")
    assert plain.list_namespaces() == []


# -- namespace labels (test_cannot_put_empty_namespace) -------------------------------------


@pytest.mark.parametrize(
    "namespace", [(), ("the", "thing.about"), ("some", "fun", ""), ("langgraph", "foo")]
)
async def test_invalid_namespaces_are_refused(
    plain: MemstackStore, namespace: tuple[str, ...]
) -> None:
    with pytest.raises(InvalidNamespaceError):
        plain.put(namespace, "foo", {"foo": "bar"})
    with pytest.raises(InvalidNamespaceError):
        await plain.aput(namespace, "foo", {"foo": "bar"})


async def test_langgraph_label_below_the_root_works(semantic: MemstackStore) -> None:
    doc = {"foo": "bar"}
    ns = ("foo", "langgraph", "foo")
    await semantic.aput(ns, "bar", doc)
    assert (await semantic.aget(ns, "bar")).value == doc  # type: ignore[union-attr]
    assert (await semantic.asearch(ns, query="bar"))[0].value == doc
    await semantic.adelete(ns, "bar")
    assert await semantic.aget(ns, "bar") is None
    # past the public put API, as LangGraph's own test does
    semantic.batch([PutOp(("langgraph", "foo"), "bar", doc)])
    assert semantic.get(("langgraph", "foo"), "bar").value == doc  # type: ignore[union-attr]
    assert semantic.search(("langgraph", "foo"))[0].value == doc


# -- put / get / delete ---------------------------------------------------------------------


def test_put_get_update_delete_keeps_created_at(plain: MemstackStore, clock: ManualClock) -> None:
    plain.put(("users", "u1"), "prefs", {"food": "tea"})
    first = plain.get(("users", "u1"), "prefs")
    assert first is not None and first.value == {"food": "tea"}
    assert first.namespace == ("users", "u1") and first.key == "prefs"
    clock.advance(60)
    plain.put(("users", "u1"), "prefs", {"food": "coffee"})
    second = plain.get(("users", "u1"), "prefs")
    assert second is not None and second.value == {"food": "coffee"}
    assert second.created_at == first.created_at
    assert (second.updated_at - first.updated_at).total_seconds() == 60
    assert plain.get(("users", "u2"), "prefs") is None
    plain.delete(("users", "u1"), "prefs")
    assert plain.get(("users", "u1"), "prefs") is None


def test_batch_reads_see_the_store_before_its_writes(plain: MemstackStore) -> None:
    plain.put(("t",), "a", {"n": 0})
    results = plain.batch(
        [
            PutOp(("t",), "a", {"n": 1}),
            GetOp(("t",), "a"),
            PutOp(("t",), "b", {"n": 2}),
            PutOp(("t",), "b", {"n": 3}),
            SearchOp(("t",)),
            PutOp(("t",), "a", None),
        ]
    )
    assert results[0] is None and results[2] is None
    assert results[1].value == {"n": 0}  # type: ignore[union-attr]
    assert [i.value for i in results[4]] == [{"n": 0}]  # type: ignore[union-attr]
    assert plain.get(("t",), "a") is None
    assert plain.get(("t",), "b").value == {"n": 3}  # type: ignore[union-attr]


async def test_async_api(semantic: MemstackStore) -> None:
    await semantic.aput(("docs",), "d1", {"text": "the quick brown fox"})
    await semantic.aput(("docs",), "d2", {"text": "a lazy dog sleeps"})
    assert (await semantic.aget(("docs",), "d1")).value["text"] == "the quick brown fox"  # type: ignore[union-attr]
    assert (await semantic.asearch(("docs",), query="lazy dog"))[0].key == "d2"
    assert await semantic.alist_namespaces() == [("docs",)]
    results = await semantic.abatch([GetOp(("docs",), "d2"), SearchOp(("docs",), limit=1)])
    assert results[0].key == "d2"  # type: ignore[union-attr]
    assert len(results[1]) == 1  # type: ignore[arg-type]


def test_search_without_query_lists_newest_updates_first(
    plain: MemstackStore, clock: ManualClock
) -> None:
    for i in range(5):
        plain.put(("p",), f"k{i}", {"i": i})
        clock.advance(1)
    plain.put(("p", "deeper"), "k9", {"i": 9})
    assert [r.key for r in plain.search(("p",), limit=3)] == ["k9", "k4", "k3"]
    assert [r.key for r in plain.search(("p",), limit=3, offset=3)] == ["k2", "k1", "k0"]
    assert all(r.score is None for r in plain.search(("p",)))


# -- semantic search (test_vector_*) --------------------------------------------------------


def test_vector_insert_with_auto_embedding(semantic: MemstackStore) -> None:
    docs = [
        ("doc1", {"text": "short text"}),
        ("doc2", {"text": "longer text document"}),
        ("doc3", {"text": "longest text document here"}),
        ("doc4", {"description": "text in description field"}),
        ("doc5", {"content": "text in content field"}),
        ("doc6", {"body": "text in body field"}),
    ]
    for key, value in docs:
        semantic.put(("test",), key, value)
    results = semantic.search(("test",), query="long text")
    keys = [r.key for r in results]
    assert "doc2" in keys and "doc3" in keys
    assert all(r.score is not None for r in results)
    assert [r.score for r in results] == sorted((r.score for r in results), reverse=True)  # type: ignore[type-var]


def test_vector_update_with_embedding(semantic: MemstackStore) -> None:
    semantic.put(("test",), "doc1", {"text": "zany zebra Xerxes"})
    semantic.put(("test",), "doc2", {"text": "something about dogs"})
    semantic.put(("test",), "doc3", {"text": "text about birds"})
    initial = semantic.search(("test",), query="Zany Xerxes")
    assert initial[0].key == "doc1"
    initial_score = initial[0].score
    assert initial_score is not None

    semantic.put(("test",), "doc1", {"text": "new text about dogs"})
    after = semantic.search(("test",), query="Zany Xerxes")
    after_score = next(r.score for r in after if r.key == "doc1")
    assert after_score is not None and after_score < initial_score
    new = semantic.search(("test",), query="new text about dogs")
    assert new[0].key == "doc1" and new[0].score is not None and new[0].score > after_score

    semantic.put(("test",), "doc4", {"text": "new text about dogs"}, index=False)
    top = semantic.search(("test",), query="new text about dogs", limit=3)
    assert "doc4" not in [r.key for r in top]
    everything = semantic.search(("test",), query="new text about dogs", limit=10)
    assert everything[-1].key == "doc4" and everything[-1].score is None


def test_vector_search_with_filters(semantic: MemstackStore) -> None:
    docs = [
        ("doc1", {"text": "red apple", "color": "red", "score": 4.5}),
        ("doc2", {"text": "red car", "color": "red", "score": 3.0}),
        ("doc3", {"text": "green apple", "color": "green", "score": 4.0}),
        ("doc4", {"text": "blue car", "color": "blue", "score": 3.5}),
    ]
    for key, value in docs:
        semantic.put(("test",), key, value)

    results = semantic.search(("test",), query="apple", filter={"color": "red"})
    assert [r.key for r in results][:1] == ["doc1"] and len(results) == 2
    results = semantic.search(("test",), query="car", filter={"color": "red"})
    assert [r.key for r in results][:1] == ["doc2"] and len(results) == 2
    results = semantic.search(("test",), query="bbbbluuu", filter={"score": {"$gt": 3.2}})
    assert results[0].key == "doc4" and len(results) == 3
    results = semantic.search(
        ("test",), query="apple", filter={"score": {"$gte": 4.0}, "color": "green"}
    )
    assert [r.key for r in results] == ["doc3"]


@pytest.mark.parametrize(
    ("filter", "expected"),
    [
        ({"color": "red"}, ["a", "b"]),
        ({"color": {"$ne": "red"}}, ["c", "d"]),
        ({"n": {"$lt": 2}}, ["a", "b"]),
        ({"n": {"$lte": 2, "$gt": 0}}, ["b", "c"]),
        ({"meta": {"tag": "x"}}, ["a", "c"]),  # a nested dict matches as a subset
        ({"tags": ["p", "q"]}, ["d"]),
        ({"missing": {"$gt": 1}}, []),
        ({"color": "red", "meta": {"tag": "y"}}, ["b"]),
    ],
)
def test_filters_follow_langgraph_rules(
    plain: MemstackStore, filter: dict[str, Any], expected: list[str]
) -> None:
    values = {
        "a": {"color": "red", "n": 0, "meta": {"tag": "x", "k": 1}},
        "b": {"color": "red", "n": 1, "meta": {"tag": "y"}},
        "c": {"color": "blue", "n": 2, "meta": {"tag": "x"}},
        "d": {"color": "green", "n": 3, "tags": ["p", "q"]},
    }
    for key, value in values.items():
        plain.put(("f",), key, value)
    assert sorted(r.key for r in plain.search(("f",), filter=filter)) == expected


def test_a_filter_that_keeps_few_fetches_deeper(semantic: MemstackStore) -> None:
    for i in range(60):
        semantic.put(("many",), f"k{i:02d}", {"text": f"note number {i}", "n": i})
    results = semantic.search(("many",), query="note", filter={"n": {"$gte": 55}}, limit=10)
    assert sorted(r.key for r in results) == [f"k{i}" for i in range(55, 60)]


def test_vector_search_pagination(semantic: MemstackStore) -> None:
    for i in range(5):
        semantic.put(("test",), f"doc{i}", {"text": f"test document number {i}"})
    page1 = semantic.search(("test",), query="test", limit=2)
    page2 = semantic.search(("test",), query="test", limit=2, offset=2)
    assert len(page1) == 2 and len(page2) == 2
    assert not {r.key for r in page1} & {r.key for r in page2}
    assert len(semantic.search(("test",), query="test", limit=10)) == 5


def test_search_spans_the_namespaces_under_the_prefix(semantic: MemstackStore) -> None:
    semantic.put(("u", "1"), "a", {"text": "green tea in the morning"})
    semantic.put(("u", "2"), "b", {"text": "black coffee at night"})
    semantic.put(("v",), "c", {"text": "green tea in the morning"})
    results = semantic.search(("u",), query="green tea")
    assert [(r.namespace, r.key) for r in results] == [(("u", "1"), "a"), (("u", "2"), "b")]


def test_equal_scores_come_in_key_order_across_namespaces(semantic: MemstackStore) -> None:
    semantic.put(("u", "1"), "b", {"text": "green tea"})
    semantic.put(("u", "2"), "a", {"text": "green tea"})
    results = semantic.search(("u",), query="green tea")
    assert results[0].score == results[1].score
    assert [(r.namespace, r.key) for r in results] == [(("u", "2"), "a"), (("u", "1"), "b")]


def test_index_fields_choose_what_is_embedded(records: RecordStore, embedder: HashEmbedder) -> None:
    # after test_embed_with_path: a vector per text of the item's index fields
    store = MemstackStore(records, embedder=embedder, fields=["key0", "key1"])
    store.put(("test",), "doc1", {"key0": "alpha", "key1": "beta", "key2": "gamma"})
    store.put(("test",), "doc2", {"key0": "delta", "key1": "epsilon", "key2": "alpha"})
    store.put(("test",), "doc3", {"key0": "omega", "key2": "alpha"}, index=["key2"])
    store.put(("test",), "doc4", {"key0": "alpha"}, index=False)
    results = store.search(("test",), query="alpha")
    assert [r.key for r in results][:2] in (["doc1", "doc3"], ["doc3", "doc1"])
    assert results[0].score > results[2].score  # type: ignore[operator]
    assert (results[-1].key, results[-1].score) == ("doc4", None)


def test_non_ascii(semantic: MemstackStore) -> None:
    texts = ["这是中文", "これは日本語です", "이건 한국어야", "Это русский", "यह रूसी है"]
    for i, text in enumerate(texts, start=1):
        semantic.put(("user_123", "memories"), str(i), {"text": text})
    for i, text in enumerate(texts, start=1):
        assert semantic.search(("user_123", "memories"), query=text)[0].key == str(i)


def test_without_an_embedder_a_query_ranks_by_keywords(plain: MemstackStore) -> None:
    plain.put(("k",), "tea", {"text": "Alice drinks green tea"})
    plain.put(("k",), "code", {"text": "Alice writes a compiler in Rust"})
    results = plain.search(("k",), query="compiler")
    assert [r.key for r in results] == ["code"] and results[0].score is not None


# -- TTL ------------------------------------------------------------------------------------


def test_ttl_expires_items_and_reads_restart_it(plain: MemstackStore, clock: ManualClock) -> None:
    plain.put(("s",), "k", {"v": 1}, ttl=1)  # minutes
    plain.put(("s",), "quiet", {"v": 2}, ttl=1)
    clock.advance(45)
    assert plain.get(("s",), "k") is not None  # restarts k's minute
    assert plain.get(("s",), "quiet", refresh_ttl=False) is not None
    clock.advance(45)
    assert plain.get(("s",), "k") is not None
    assert plain.get(("s",), "quiet") is None
    clock.advance(61)
    assert plain.get(("s",), "k") is None
    assert plain.search(("s",)) == [] and plain.list_namespaces() == []


def test_a_default_ttl_applies_to_puts(records: RecordStore, clock: ManualClock) -> None:
    store = MemstackStore(records, ttl={"default_ttl": 2})
    store.put(("d",), "k", {"v": 1})
    store.put(("d",), "forever", {"v": 2}, ttl=None)
    clock.advance(121)
    assert store.get(("d",), "k") is None
    assert store.get(("d",), "forever") is not None


# -- bad input ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda s: s.put(("b",), "k", {"when": object()}), "value['when']"),
        (lambda s: s.put(("b",), "k", {"v": 1}, ttl=-5), "ttl"),
        (lambda s: s.search(("b",), filter={"n": {"$regex": "x"}}), "filter.n"),
        (lambda s: s.search(("b",), filter={"n": {"$gt": "x"}}), "filter.n"),
    ],
)
def test_bad_input_names_the_field(plain: MemstackStore, call, field: str) -> None:
    plain.put(("b",), "k", {"n": 1})
    with pytest.raises(InvalidInput) as caught:
        call(plain)
    assert caught.value.field == field
    assert plain.get(("b",), "k").value == {"n": 1}  # type: ignore[union-attr]


def test_fields_must_be_a_list(records: RecordStore) -> None:
    with pytest.raises(InvalidInput, match=r"pass a list: \['text'\]"):
        MemstackStore(records, fields="text")


def test_two_store_names_keep_their_items_apart(records: RecordStore) -> None:
    one, two = MemstackStore(records, name="one"), MemstackStore(records, name="two")
    one.put(("ns",), "k", {"owner": "one"})
    assert two.get(("ns",), "k") is None
    assert two.search(("ns",)) == [] and two.list_namespaces() == []


def test_a_credential_is_refused_and_nothing_of_the_batch_is_stored(plain: MemstackStore) -> None:
    key = "-----BEGIN RSA PRIVATE KEY-----\nMIIEow" + "A" * 40
    with pytest.raises(InvalidInput) as error:
        plain.batch(
            [
                PutOp(("docs",), "fine", {"text": "green tea"}),
                PutOp(("docs",), "bad", {"notes": {"deploy": key}}),
            ]
        )
    assert error.value.field == "value.notes.deploy"
    assert "never kept in the LangGraph store" in str(error.value)
    assert plain.get(("docs",), "fine") is None and plain.get(("docs",), "bad") is None


# -- index= : LangGraph's IndexConfig, a vector per field text, any kind of embedder -------


class LangChainWords(Embeddings):
    """A LangChain ``Embeddings`` (what ``index={"embed": ...}`` most often gets)."""

    def __init__(self, inner: HashEmbedder) -> None:
        self.inner = inner

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.inner.embed_batch(texts).tolist()  # type: ignore[no-any-return]

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


def _sync_function(inner: HashEmbedder) -> Callable[[Sequence[str]], list[list[float]]]:
    return lambda texts: inner.embed_batch(list(texts)).tolist()


def _async_function(inner: HashEmbedder) -> Callable[[Sequence[str]], Any]:
    async def embed(texts: Sequence[str]) -> list[list[float]]:
        return inner.embed_batch(list(texts)).tolist()  # type: ignore[no-any-return]

    return embed


EMBEDDERS: dict[str, Callable[[HashEmbedder], object]] = {
    "memstack Embedder": lambda inner: inner,
    "LangChain Embeddings": LangChainWords,
    "function": _sync_function,
    "async function": _async_function,
}
DOC = {
    "title": "green tea in the morning",
    "items": [{"name": "black coffee at night"}, {"name": "cello lessons on friday"}],
    "meta": {"note": "a walk by the river"},
    "skipped": "quarterly tax return",
}
FIELDS = ["title", "items[*].name", "meta.note"]


def _indexed(records: RecordStore, kind: str) -> MemstackStore:
    embed = EMBEDDERS[kind](HashEmbedder(dim=64))
    return MemstackStore(records, index={"dims": 64, "embed": embed, "fields": FIELDS})


@pytest.mark.parametrize("kind", list(EMBEDDERS))
def test_an_item_scores_the_best_of_its_field_vectors(records: RecordStore, kind: str) -> None:
    store = _indexed(records, kind)
    store.put(("docs",), "a", DOC)
    store.put(("docs",), "b", {"title": "a recipe for bread"})
    for text in ("green tea in the morning", "cello lessons on friday", "a walk by the river"):
        hits = store.search(("docs",), query=text)
        assert hits[0].key == "a" and hits[0].score == pytest.approx(1.0, abs=1e-5), text
    unindexed = store.search(("docs",), query="quarterly tax return")
    assert all(h.score is not None and h.score < 0.9 for h in unindexed)


@pytest.mark.parametrize("kind", list(EMBEDDERS))
async def test_the_async_api_embeds_with_every_kind_of_embedder(
    records: RecordStore, kind: str
) -> None:
    store = _indexed(records, kind)
    await store.aput(("docs",), "a", DOC)
    hits = await store.asearch(("docs",), query="black coffee at night")
    assert hits[0].key == "a" and hits[0].score == pytest.approx(1.0, abs=1e-5)


def test_a_put_replaces_the_vectors_of_the_item_and_a_delete_removes_them(
    records: RecordStore, embedder: HashEmbedder
) -> None:
    store = MemstackStore(records, index={"dims": 512, "embed": embedder, "fields": FIELDS})
    vectors = Namespace("lgv", "default", "docs")
    store.put(("docs",), "a", DOC)
    assert records.count(vectors) == 4
    store.put(("docs",), "a", {"title": "only a title now"})
    assert records.count(vectors) == 1
    [hit] = store.search(("docs",), query="cello lessons on friday")
    assert hit.score is not None and hit.score < 0.9
    store.put(("docs",), "a", {"title": "no vector"}, index=False)
    assert records.count(vectors) == 0
    assert [(h.key, h.score) for h in store.search(("docs",), query="x")] == [("a", None)]
    store.put(("docs",), "a", DOC)
    store.delete(("docs",), "a")
    assert records.count(vectors) == 0


def test_a_read_restarts_the_ttl_of_the_vectors_too(
    records: RecordStore, embedder: HashEmbedder, clock: ManualClock
) -> None:
    store = MemstackStore(records, embedder=embedder, ttl={"default_ttl": 1})
    store.put(("s",), "k", {"text": "green tea"})
    clock.advance(45)
    assert store.get(("s",), "k") is not None
    clock.advance(45)  # past the first minute: only the restarted TTL keeps k
    hits = store.search(("s",), query="green tea", refresh_ttl=False)
    assert [(h.key, h.score is not None) for h in hits] == [("k", True)]


def test_index_config_is_langgraphs(records: RecordStore, embedder: HashEmbedder) -> None:
    config = {"dims": 512, "embed": embedder, "text_fields": ["title"]}  # SqliteStore's name
    store = MemstackStore(records, index=config)
    assert store.index_config == config and store.embeddings is embedder
    store.put(("d",), "k", {"title": "green tea", "body": "unrelated words here"})
    assert store.search(("d",), query="green tea")[0].score == pytest.approx(1.0, abs=1e-5)


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"index": {"dims": 512}}, "index.embed"),
        ({"index": {"dims": 512, "embed": HashEmbedder()}, "embedder": HashEmbedder()}, "index"),
        ({"index": {"embed": HashEmbedder(), "fields": "title"}, "fields": ["x"]}, "fields"),
        ({"index": {"embed": HashEmbedder(), "dims": 0}}, "index.dims"),
        ({"index": {"embed": 42}}, "index.embed"),
    ],
)
def test_a_bad_index_config_names_the_setting(
    records: RecordStore, options: dict[str, Any], field: str
) -> None:
    with pytest.raises(InvalidInput) as caught:
        MemstackStore(records, **options)
    assert caught.value.field == field


def test_vectors_of_another_size_than_dims_are_refused(records: RecordStore) -> None:
    store = MemstackStore(records, index={"dims": 384, "embed": HashEmbedder(dim=64)})
    with pytest.raises(InvalidInput, match="set dims to 64") as caught:
        store.put(("d",), "k", {"text": "green tea"})
    assert caught.value.field == "index.dims"
    assert store.get(("d",), "k") is None


# -- filters LangGraph's SQL stores answer ------------------------------------------------


def test_a_nul_byte_in_a_filter_value_matches_nothing(
    records: RecordStore, embedder: HashEmbedder
) -> None:
    store = MemstackStore(records, embedder=embedder)
    store.put(("d",), "k", {"access": "public", "text": "green tea"})
    assert store.search(("d",), filter={"access": "public\x00' OR '1'='1"}) == []
    assert store.search(("d",), query="tea", filter={"access": "public\x00"}) == []
    assert [h.key for h in store.search(("d",), filter={"access": "public"})] == ["k"]


def test_a_dotted_filter_key_is_a_path(plain: MemstackStore) -> None:
    plain.put(("d",), "nested", {"user": {"access-level": "nested"}})
    plain.put(("d",), "literal", {"user.access-level": "nested"})
    found = plain.search(("d",), filter={"user.access-level": "nested"})
    assert sorted(h.key for h in found) == ["literal", "nested"]


# -- TTL sweeping (SqliteStore / PostgresStore's API) ----------------------------------------


def test_sweep_ttl_deletes_expired_items_and_their_vectors(
    records: RecordStore, embedder: HashEmbedder, clock: ManualClock
) -> None:
    store = MemstackStore(records, embedder=embedder, ttl={"default_ttl": 1})
    store.put(("s",), "old", {"text": "green tea"})
    store.put(("s",), "kept", {"text": "black coffee"}, ttl=None)
    clock.advance(61)
    assert store.sweep_ttl() == 2  # the item and its one vector
    expired = Filter(include_expired=True)
    assert [r.id for r in records.list(Namespace("lg", "default", "s"), filter=expired)] == ["kept"]
    assert records.count(Namespace("lgv", "default", "s"), filter=expired) == 1
    assert store.sweep_ttl() == 0


def test_the_sweeper_thread_sweeps_until_stopped(
    sqlite_records: RecordStore, clock: ManualClock
) -> None:
    store = MemstackStore(sqlite_records, ttl={"default_ttl": 1, "sweep_interval_minutes": 1})
    store.put(("s",), "old", {"v": 1})
    clock.advance(61)
    expired = Filter(include_expired=True)
    assert sqlite_records.count(Namespace("lg", "default", "s"), filter=expired) == 1
    future = store.start_ttl_sweeper(sweep_interval_minutes=0.001)
    try:
        deadline = time.monotonic() + 30
        while sqlite_records.count(Namespace("lg", "default", "s"), filter=expired):
            assert time.monotonic() < deadline, "the sweeper never swept"
            time.sleep(0.02)
    finally:
        assert store.stop_ttl_sweeper(timeout=30)
    assert future.result(timeout=30) is None
    assert store.stop_ttl_sweeper() is True  # not running: nothing to stop


def test_without_a_ttl_config_the_sweeper_has_nothing_to_do(plain: MemstackStore) -> None:
    future = plain.start_ttl_sweeper()
    assert future.done() and future.result() is None
    assert plain.stop_ttl_sweeper(timeout=1) is True


# -- sync calls on the event loop of a store opened for async code --------------------------


async def test_a_store_opened_for_async_code_refuses_sync_calls_on_its_loop(
    tmp_path: Path,
) -> None:
    store = await MemstackStore.afrom_url(f"sqlite:///{tmp_path / 'async.db'}")
    try:
        for call in (
            lambda: store.put(("a",), "k", {"v": 1}),
            lambda: store.get(("a",), "k"),
            lambda: store.search(("a",)),
            lambda: store.list_namespaces(),
            lambda: store.batch([GetOp(("a",), "k")]),
        ):
            with pytest.raises(asyncio.InvalidStateError, match=r"await store\.aget"):
                call()
        await store.aput(("a",), "k", {"v": 1})
        item = await asyncio.to_thread(store.get, ("a",), "k")  # another thread: allowed
        assert item is not None and item.value == {"v": 1}
    finally:
        store.close()


async def test_a_store_built_in_sync_code_takes_sync_calls_anywhere(plain: MemstackStore) -> None:
    plain.put(("a",), "k", {"v": 1})
    assert (await plain.aget(("a",), "k")).value == {"v": 1}  # type: ignore[union-attr]


def test_the_embedder_keyword_takes_langchain_embeddings_too(records: RecordStore) -> None:
    store = MemstackStore(records, embedder=LangChainWords(HashEmbedder(dim=64)), fields=FIELDS)
    store.put(("docs",), "a", DOC)
    hits = store.search(("docs",), query="a walk by the river")
    assert hits[0].key == "a" and hits[0].score == pytest.approx(1.0, abs=1e-5)
    assert store.index_config is not None and store.index_config["fields"] == FIELDS
