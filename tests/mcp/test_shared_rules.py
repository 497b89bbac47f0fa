"""REST and MCP take the same parameter under the same rule: what a tool's parameter
declares (types, lengths, bounds, id patterns, defaults) is what ``/openapi.json``
declares for the REST parameter or body field it stands for. Descriptions may differ."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI

from memstack.embeddings import HashEmbedder
from memstack.service.principal import Principal
from memstack.transports.mcp.server import build_server
from memstack.transports.rest.routes import api_routes
from memstack.wiring import Services, open_services

_RULE = (
    "type",
    "enum",
    "minLength",
    "maxLength",
    "pattern",
    "minimum",
    "maximum",
    "minItems",
    "maxItems",
    "items",
)
_ID_TOOLS = ("get_memory", "memory_history", "delete_memory", "update_memory")
_USER_TOOLS = ("add_turns", "remember", "recall", "get_recalled_context", "forget")
_USER = "/api/users/{user_id}"

# (the REST parameter: method, path, name), the MCP (tool, parameter)
_PARAMETERS = [
    *(
        (("get", "/api/memories", name), ("list_memories", tool_name))
        for name, tool_name in [
            ("agent_id", "agent_id"),
            ("scope", "scope"),
            ("session_id", "session_id"),
            ("key", "key"),
            ("limit", "limit"),
            ("offset", "offset"),
            ("cursor", "cursor"),
            ("as_of", "as_of"),
            ("include_superseded", "include_superseded"),
            ("provenance", "provenances"),
        ]
    ),
    *(
        (("get", "/api/context", name), ("get_context", name))
        for name in ("agent_id", "session_id", "query", "budget")
    ),
    (("get", "/api/memories/{memory_id}", "memory_id"), ("get_memory", "memory_id")),
    (("get", "/api/memories/{memory_id}/history", "memory_id"), ("memory_history", "memory_id")),
    (("delete", "/api/memories/{memory_id}", "memory_id"), ("delete_memory", "memory_id")),
    (("put", "/api/memories/{memory_id}", "memory_id"), ("update_memory", "memory_id")),
    (("delete", "/api/memories", "agent_id"), ("delete_agent_memories", "agent_id")),
    *((("get", "/api/memories", name), ("list_agents", name)) for name in ("limit", "offset")),
    *(
        (("get", f"{_USER}/context", name), ("get_recalled_context", name))
        for name in ("user_id", "query", "k", "session_id", "memory_enabled", "min_score")
    ),
    *(
        (("delete", f"{_USER}/memories/{{memory_id}}", name), ("forget", name))
        for name in ("user_id", "memory_id")
    ),
    *(
        (("post", f"{_USER}/{path}", "user_id"), (tool, "user_id"))
        for path, tool in [("turns", "add_turns"), ("memories", "remember"), ("recall", "recall")]
    ),
]
# (the REST body's component, its field), the MCP (tool, parameter)
_FIELDS = [
    *(
        (("MemoryCreate", name), ("store_memory", name))
        for name in (
            "agent_id",
            "key",
            "value",
            "scope",
            "session_id",
            "metadata",
            "ttl",
            "provenance",
            "provenance_detail",
        )
    ),
    *(
        (("SearchRequest", name), ("search_memories", name))
        for name in (
            "query",
            "agent_id",
            "scope",
            "session_id",
            "key",
            "mode",
            "limit",
            "as_of",
            "provenances",
            "min_score",
            "metadata",
        )
    ),
    *(
        (("MemoryUpdate", name), ("update_memory", name))
        for name in ("value", "metadata", "ttl", "provenance", "provenance_detail")
    ),
    *((("KnowledgeSearch", name), ("search_knowledge", name)) for name in ("query", "limit")),
    *((("TurnsRequest", name), ("add_turns", name)) for name in ("session_id", "memory_enabled")),
    *(
        (("FactCreate", name), ("remember", name))
        for name in ("text", "kind", "importance", "supersedes", "metadata", "memory_enabled")
    ),
    *(
        (("RecallRequest", name), ("recall", name))
        for name in (
            "query",
            "k",
            "touch",
            "as_of",
            "include_superseded",
            "provenances",
            "session_id",
            "memory_enabled",
            "min_score",
        )
    ),
]


@pytest.fixture(scope="module")
def schemas(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[dict[str, Any], Any]]:
    """The OpenAPI document of the REST routes and every MCP tool's parameters, both over
    the same services."""
    db: Path = tmp_path_factory.mktemp("rules") / "rules.db"
    services: Services = open_services(
        store_url=f"sqlite:///{db}", redis_url=None, embedder=HashEmbedder()
    )
    try:
        app = FastAPI()
        app.include_router(api_routes(services))

        async def caller() -> Principal:
            raise AssertionError("no tool is called here")

        server = build_server(services, caller)
        tools = asyncio.run(server.list_tools())
        yield app.openapi(), {t.name: t.input_schema["properties"] for t in tools}
    finally:
        services.close()


def _rule(schema: dict[str, Any]) -> dict[str, Any]:
    """What a parameter accepts: each non-null branch's constraints, and its default."""
    branches = [b for b in schema.get("anyOf", [schema]) if b.get("type") != "null"]
    rule: dict[str, Any] = {"accepts": [{k: b[k] for k in _RULE if k in b} for b in branches]}
    if "default" in schema:
        rule["default"] = schema["default"]
    return rule


def _same(rest: dict[str, Any], tool: dict[str, Any]) -> None:
    rest_rule, tool_rule = _rule(rest), _rule(tool)
    if "default" not in rest_rule or "default" not in tool_rule:  # required at one door
        rest_rule.pop("default", None)
        tool_rule.pop("default", None)
    assert rest_rule == tool_rule


@pytest.mark.parametrize(("rest", "mcp"), _PARAMETERS, ids=lambda p: "/".join(p))
def test_a_tool_parameter_has_the_rest_parameter_s_rule(
    schemas: tuple[dict[str, Any], Any], rest: tuple[str, str, str], mcp: tuple[str, str]
) -> None:
    document, tools = schemas
    method, path, name = rest
    (parameter,) = [p for p in document["paths"][path][method]["parameters"] if p["name"] == name]
    _same(parameter["schema"], tools[mcp[0]][mcp[1]])


@pytest.mark.parametrize(("rest", "mcp"), _FIELDS, ids=lambda p: "/".join(p))
def test_a_tool_parameter_has_the_rest_body_field_s_rule(
    schemas: tuple[dict[str, Any], Any], rest: tuple[str, str], mcp: tuple[str, str]
) -> None:
    document, tools = schemas
    component, name = rest
    _same(document["components"]["schemas"][component]["properties"][name], tools[mcp[0]][mcp[1]])


def test_every_id_parameter_carries_its_pattern(schemas: tuple[dict[str, Any], Any]) -> None:
    """The id rules reach MCP clients too: each id parameter of a tool documents its
    pattern, as the REST parameter does."""
    _, tools = schemas
    ids = [
        *(tools[tool]["memory_id"] for tool in _ID_TOOLS),
        *(
            params[name]
            for tool, params in tools.items()
            if tool not in _USER_TOOLS  # a conversation's session id is free text
            for name in ("agent_id", "session_id")
            if name in params
        ),
        *(tools[tool]["user_id"] for tool in _USER_TOOLS),
    ]
    assert len(ids) == 4 + 5 + 4 + 5  # agent_id of five tools, session_id of four, user_id
    for schema in ids:
        (accepts,) = _rule(schema)["accepts"]
        assert accepts["pattern"].startswith("^") and accepts["minLength"] == 1
