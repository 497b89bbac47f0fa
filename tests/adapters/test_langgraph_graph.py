"""MemstackStore in a real LangGraph StateGraph: nodes get it by store injection."""

from __future__ import annotations

from pathlib import Path
from typing import TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.store.base import BaseStore

from memstack.adapters.langgraph import MemstackStore
from memstack.embeddings import HashEmbedder


class Turn(TypedDict, total=False):
    user: str
    said: str
    recalled: list[str]


def remember(state: Turn, *, store: BaseStore) -> Turn:
    namespace = (state["user"], "memories")
    count = len(store.search(namespace, limit=100))
    store.put(namespace, f"m{count}", {"text": state["said"]})
    return {}


async def recall(state: Turn, *, store: BaseStore) -> Turn:
    hits = await store.asearch((state["user"], "memories"), query=state["said"], limit=2)
    return {"recalled": [hit.value["text"] for hit in hits]}


def build(store: BaseStore) -> CompiledStateGraph:  # type: ignore[type-arg]
    graph = StateGraph(Turn)
    graph.add_node("remember", remember)
    graph.add_node("recall", recall)
    graph.add_edge(START, "remember")
    graph.add_edge("remember", "recall")
    graph.add_edge("recall", END)
    return graph.compile(store=store)


async def test_a_graph_remembers_across_runs_and_store_instances(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'graph.db'}"
    store = MemstackStore.from_url(url, embedder=HashEmbedder(dim=512))
    graph = build(store)
    await graph.ainvoke({"user": "alice", "said": "I drink green tea every morning"})
    await graph.ainvoke({"user": "bob", "said": "green tea is fine"})
    out = await graph.ainvoke({"user": "alice", "said": "I am writing a compiler in Rust"})
    assert out["recalled"] == ["I am writing a compiler in Rust", "I drink green tea every morning"]
    store.close()

    reopened = MemstackStore.from_url(url, embedder=HashEmbedder(dim=512))
    out = await build(reopened).ainvoke({"user": "alice", "said": "what tea do I drink?"})
    # the turn itself is stored first, then the closest earlier memory
    assert out["recalled"] == ["what tea do I drink?", "I drink green tea every morning"]
    assert "green tea is fine" not in out["recalled"]  # bob's memories stay bob's
    assert reopened.list_namespaces() == [("alice", "memories"), ("bob", "memories")]
    reopened.close()


def test_a_sync_graph_uses_the_same_store(tmp_path: Path) -> None:
    store = MemstackStore.from_url(f"sqlite:///{tmp_path / 'sync.db'}")

    def note(state: Turn, *, store: BaseStore) -> Turn:
        store.put(("notes",), state["said"], {"text": state["said"]})
        return {"recalled": [item.key for item in store.search(("notes",))]}

    graph = StateGraph(Turn)
    graph.add_node("note", note)
    graph.add_edge(START, "note")
    compiled = graph.compile(store=store)
    compiled.invoke({"said": "first"})
    # a node's own put is visible to its next search
    assert compiled.invoke({"said": "second"})["recalled"] == ["second", "first"]
    store.close()
