"""vector_index, vector_text_search, vector_hybrid_search (spec 003's vector tools) on the
knowledge base in a real SQLite file: indexed text is found, indexing a source again
replaces it, the secret filter refuses what it refuses everywhere, and the hybrid ranking
is reciprocal rank fusion of the semantic and the keyword rankings."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memstack.agents.builtin import (
    VECTOR_TOOL_NAMES,
    VecHybridSearchTool,
    VecIndexTool,
    VecTextSearchTool,
    vector_tools,
)
from memstack.agents.simple import SimpleAgent
from memstack.context import ProcessingContext
from memstack.embeddings import HashEmbedder
from memstack.errors import Forbidden, ToolInputError
from memstack.providers import Completion, ScriptedProvider
from memstack.service.knowledge import KnowledgeBase
from memstack.service.knowledge_index import chunks_space
from memstack.service.principal import Principal
from memstack.storage import SQLiteRecordStore
from memstack.tools import Tool
from tests.longterm.secret_corpus import URLSAFE, tok

ACME = Principal(tenant="acme")
GITHUB_TOKEN = f"ghp_{tok(36)}"
OPENAI_KEY = f"sk-proj-{tok(48, URLSAFE)}"

DOCS = {
    "notes/deploy.md": "Deployments go out blue-green on Tuesdays after the standup.",
    "notes/editor.md": "Ann writes her code in the Helix editor with a dark theme.",
    "notes/lunch.md": "The team orders ramen for lunch every Friday.",
}


@pytest.fixture
def knowledge(tmp_path: Path) -> Iterator[KnowledgeBase]:
    records = SQLiteRecordStore(tmp_path / "kb.db")
    records.setup()
    yield KnowledgeBase(records=records, embedder=HashEmbedder())
    records.close()


async def call(tool: Tool, params: dict[str, Any]) -> Any:
    return await tool.process(ProcessingContext(), params)


async def index_all(knowledge: KnowledgeBase) -> dict[str, str]:
    """Each source's document id."""
    ids = {}
    for source, text in DOCS.items():
        done = await call(VecIndexTool(knowledge, ACME), {"text": text, "source_id": source})
        ids[source] = done["document_id"]
    return ids


# -- vector_index ---------------------------------------------------------------------


async def test_indexed_text_is_a_knowledge_document_with_its_metadata(knowledge: KnowledgeBase):
    done = await call(
        VecIndexTool(knowledge, ACME),
        {
            "text": DOCS["notes/editor.md"],
            "source_id": "notes/editor.md",
            "metadata": {"author": "Ann", "year": 2024, "draft": True},
        },
    )
    assert done["status"] == "success" and done["replaced"] == []
    assert done["source_id"] == "notes/editor.md" and done["passages"] == 1
    document = await knowledge.get(ACME, done["document_id"])
    assert document.text == DOCS["notes/editor.md"]
    assert document.title == document.source == "notes/editor.md"
    assert document.tags == ("author=Ann", "year=2024", "draft=true")


async def test_indexing_a_source_again_replaces_it(knowledge: KnowledgeBase):
    tool = VecIndexTool(knowledge, ACME)
    first = await call(tool, {"text": "The office wifi is called Lighthouse.", "source_id": "wifi"})
    other = await call(tool, {"text": "Parking is behind the building.", "source_id": "parking"})
    second = await call(tool, {"text": "The office wifi is now Harbor.", "source_id": "wifi"})
    assert second["replaced"] == [first["document_id"]]
    listed, total = await knowledge.list(ACME)
    assert total == 2
    assert {d.id for d in listed} == {second["document_id"], other["document_id"]}
    found = await call(VecTextSearchTool(knowledge, ACME), {"text": "office wifi"})
    texts = [hit["text"] for hit in found["results"]]
    assert "The office wifi is now Harbor." in texts
    assert "The office wifi is called Lighthouse." not in texts


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"text": f"Use the token {GITHUB_TOKEN} to push.", "source_id": "s"}, "text"),
        ({"text": "harmless", "source_id": f"key {OPENAI_KEY}"}, "source_id"),
        (
            {"text": "harmless", "source_id": "s", "metadata": {"password": "hunter2x!"}},
            "metadata.password",
        ),
    ],
)
async def test_the_secret_filter_refuses_what_would_be_stored(
    knowledge: KnowledgeBase, params: dict[str, Any], field: str
):
    with pytest.raises(ToolInputError, match="looks like a secret") as caught:
        await call(VecIndexTool(knowledge, ACME), params)
    assert caught.value.fields == (field,)
    assert f"{field} looks like a secret" in str(caught.value)
    assert "credentials are never kept in knowledge" in str(caught.value)
    assert (await knowledge.list(ACME))[1] == 0
    assert knowledge.records.count(chunks_space("acme")) == 0


@pytest.mark.parametrize(
    ("params", "field", "message"),
    [
        ({"text": "x", "source_id": "   "}, "source_id", "`source_id` is blank"),
        ({"text": "x", "source_id": "s", "metadata": {"k": "v" * 70}}, "metadata.k", "at most 64"),
        ({"text": "x", "source_id": "s", "metadata": {"k": {"nested": 1}}}, "metadata.k", "type"),
        ({"text": "", "source_id": "s"}, "text", "should be non-empty"),
    ],
)
async def test_index_errors_name_the_field(
    knowledge: KnowledgeBase, params: dict[str, Any], field: str, message: str
):
    with pytest.raises(ToolInputError, match=message) as caught:
        await call(VecIndexTool(knowledge, ACME), params)
    assert caught.value.fields == (field,)


async def test_a_key_without_the_global_write_right_may_search_but_not_index(
    knowledge: KnowledgeBase,
):
    await index_all(knowledge)
    limited = Principal(tenant="acme", agents=frozenset({"bot"}))
    with pytest.raises(Forbidden, match="global-write"):
        await call(VecIndexTool(knowledge, limited), {"text": "x", "source_id": "s"})
    found = await call(VecTextSearchTool(knowledge, limited), {"text": "ramen lunch"})
    assert found["results"][0]["title"] == "notes/lunch.md"


# -- searching ------------------------------------------------------------------------


async def test_text_search_ranks_by_meaning_and_says_where_each_passage_is_from(
    knowledge: KnowledgeBase,
):
    ids = await index_all(knowledge)
    found = await call(
        VecTextSearchTool(knowledge, ACME), {"text": "which editor does Ann use", "n_results": 2}
    )
    assert len(found["results"]) == 2
    best = found["results"][0]
    assert best["document_id"] == ids["notes/editor.md"]
    assert best["title"] == "notes/editor.md"
    assert best["text"] == DOCS["notes/editor.md"]
    assert best["id"] == f"{ids['notes/editor.md']}:0"
    scores = [hit["score"] for hit in found["results"]]
    assert scores == sorted(scores, reverse=True) and -1 <= scores[-1] <= scores[0] <= 1


async def test_another_tenant_sees_none_of_it(knowledge: KnowledgeBase):
    await index_all(knowledge)
    other = Principal(tenant="globex")
    for tool in (VecTextSearchTool(knowledge, other), VecHybridSearchTool(knowledge, other)):
        assert await call(tool, {"text": "ramen lunch Friday"}) == {"results": []}


def _fused(knowledge: KnowledgeBase, query: str, keywords: str, pool: int, k: float):
    """The reciprocal rank fusion the spec describes, from the store's own two rankings."""
    space = chunks_space("acme")
    vector = knowledge.embedder.embed_batch([query])[0]
    semantic = knowledge.records.vector_ids(space, vector, k=pool)
    keyword = knowledge.records.text_ids(space, keywords, k=pool) if keywords else []
    fused: dict[str, float] = {}
    for ranking in (semantic, keyword):
        for rank, (passage_id, _) in enumerate(ranking):
            fused[passage_id] = fused.get(passage_id, 0.0) + 1 / (rank + k)
    return sorted(fused.items(), key=lambda item: (-item[1], item[0]))


@pytest.mark.parametrize(
    ("params", "keywords"),
    [
        ({"text": "Friday ramen for the team"}, "friday ramen the team"),
        ({"text": "Friday ramen", "k_constant": 1, "n_results": 2}, "friday ramen"),
        ({"text": "a to of Tuesday", "min_keyword_length": 5}, "tuesday"),
        ({"text": "go on a TV", "min_keyword_length": 3}, ""),
    ],
)
async def test_hybrid_search_is_reciprocal_rank_fusion(
    knowledge: KnowledgeBase, params: dict[str, Any], keywords: str
):
    await index_all(knowledge)
    limit = params.get("n_results", 5)
    k = params.get("k_constant", 60)
    expected = _fused(knowledge, params["text"], keywords, 2 * limit, k)[:limit]
    found = await call(VecHybridSearchTool(knowledge, ACME), params)
    assert [(hit["id"], hit["score"]) for hit in found["results"]] == [
        (passage_id, round(score, 6)) for passage_id, score in expected
    ]


async def test_hybrid_search_puts_the_passage_both_rankings_agree_on_first(
    knowledge: KnowledgeBase,
):
    await index_all(knowledge)
    found = await call(
        VecHybridSearchTool(knowledge, ACME), {"text": "blue-green deployments on Tuesdays"}
    )
    best = found["results"][0]
    assert best["title"] == "notes/deploy.md"
    assert best["score"] == round(2 / 60, 6)  # first in both lists: 1/(0 + 60) twice


@pytest.mark.parametrize("tool_class", [VecTextSearchTool, VecHybridSearchTool])
@pytest.mark.parametrize(
    ("params", "field", "message"),
    [
        ({"text": "   "}, "text", "`text` is blank"),
        ({"text": "x", "n_results": 51}, "n_results", "51 is greater than the maximum of 50"),
        ({"text": "x", "n_results": 0}, "n_results", "less than the minimum of 1"),
    ],
)
async def test_search_errors_name_the_field(
    knowledge: KnowledgeBase,
    tool_class: type[VecTextSearchTool],
    params: dict[str, Any],
    field: str,
    message: str,
):
    with pytest.raises(ToolInputError, match=message) as caught:
        await call(tool_class(knowledge, ACME), params)
    assert caught.value.fields == (field,)


async def test_hybrid_refuses_a_k_constant_that_is_not_positive(knowledge: KnowledgeBase):
    with pytest.raises(ToolInputError, match="k_constant") as caught:
        await call(VecHybridSearchTool(knowledge, ACME), {"text": "x", "k_constant": 0})
    assert caught.value.fields == ("k_constant",)


# -- given to an agent by name --------------------------------------------------------


async def test_an_agent_indexes_and_searches_with_the_vector_tools(knowledge: KnowledgeBase):
    tools = vector_tools(knowledge, ACME)
    assert (
        tuple(tool.name for tool in tools)
        == VECTOR_TOOL_NAMES
        == (
            "vector_index",
            "vector_text_search",
            "vector_hybrid_search",
        )
    )
    index = ScriptedProvider.tool_call(
        "vector_index", {"text": DOCS["notes/lunch.md"], "source_id": "lunch"}
    )
    search = ScriptedProvider.tool_call("vector_hybrid_search", {"text": "ramen"})
    provider = ScriptedProvider(
        [
            Completion(tool_calls=(index,)),
            Completion(tool_calls=(search,)),
            Completion(content="They eat ramen."),
        ]
    )
    agent = SimpleAgent(name="a", objective="lunch?", provider=provider, model="m", tools=tools)
    results: dict[str, Any] = {}
    async for message in agent.execute(ProcessingContext()):
        if message.type == "tool_result":
            results[message.name] = message
    assert set(VECTOR_TOOL_NAMES) <= set(provider.calls[0].tool_names)
    assert results["vector_index"].error is None
    hits = results["vector_hybrid_search"].result["results"]
    assert hits[0]["text"] == DOCS["notes/lunch.md"]
