from collections.abc import Mapping

import pytest

from memstack import (
    DEFAULT_REGISTRY,
    JSON,
    ConfigError,
    InvalidInput,
    NotFound,
    ProcessingContext,
    Tool,
    ToolInputError,
    ToolRegistry,
    get_all_tools,
    register_tool,
    resolve_tool,
)


class WeatherTool(Tool):
    name = "get_weather"
    description = "Get current weather for a city."
    input_schema = {
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "City name", "minLength": 1},
            "days": {"type": "integer", "minimum": 1, "maximum": 7},
        },
        "required": ["city"],
        "additionalProperties": False,
    }

    def __init__(self) -> None:
        self.calls: list[Mapping[str, JSON]] = []

    async def process(self, context: ProcessingContext, params: Mapping[str, JSON]) -> JSON:
        self.calls.append(params)
        return {"city": params["city"], "forecast": "sunny"}


class LoudWeatherTool(WeatherTool):
    """Overrides process and calls the parent's: validation must still hold."""

    async def process(self, context: ProcessingContext, params: Mapping[str, JSON]) -> JSON:
        result = await super().process(context, params)
        assert isinstance(result, dict)
        return {**result, "loud": True}


async def test_valid_arguments_reach_process():
    tool = WeatherTool()
    result = await tool.process(ProcessingContext(), {"city": "Oslo", "days": 2})
    assert result == {"city": "Oslo", "forecast": "sunny"}
    assert tool.calls == [{"city": "Oslo", "days": 2}]


@pytest.mark.parametrize(
    ("params", "fields", "fragment"),
    [
        ({}, ("city",), "missing required field `city`"),
        ({"city": 42}, ("city",), "`city` must be of type string, got number"),
        ({"city": ""}, ("city",), "`city`"),
        ({"city": "Oslo", "days": 9}, ("days",), "`days`"),
        ({"city": "Oslo", "days": "2"}, ("days",), "must be of type integer"),
        ({"city": "Oslo", "units": "C", "lang": "en"}, ("units", "lang"), "unknown fields"),
        ({"city": 1, "days": 0}, ("city", "days"), "`city`"),
    ],
)
@pytest.mark.parametrize("tool_cls", [WeatherTool, LoudWeatherTool])
async def test_invalid_arguments_never_reach_process(tool_cls, params, fields, fragment):
    tool = tool_cls()
    with pytest.raises(ToolInputError) as excinfo:
        await tool.process(ProcessingContext(), params)
    assert set(excinfo.value.fields) == set(fields)
    assert fragment in str(excinfo.value)
    assert "call it again" in str(excinfo.value)
    assert tool.calls == []


async def test_override_chain_still_validates_and_runs_both():
    tool = LoudWeatherTool()
    assert await tool.process(ProcessingContext(), {"city": "Rome"}) == {
        "city": "Rome",
        "forecast": "sunny",
        "loud": True,
    }


def test_provider_shapes():
    spec = WeatherTool().to_provider_tool()
    assert spec.to_openai() == {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Get current weather for a city.",
            "parameters": WeatherTool.input_schema,
        },
    }
    assert spec.to_anthropic() == {
        "name": "get_weather",
        "description": "Get current weather for a city.",
        "input_schema": WeatherTool.input_schema,
    }


class BadSchemaTool(Tool):
    name = "bad_schema"
    description = "Has a schema that is not JSON Schema."
    input_schema = {"type": "object", "properties": {"x": {"type": "nonsense"}}}

    async def process(self, context: ProcessingContext, params: Mapping[str, JSON]) -> JSON:
        return None


class BadNameTool(BadSchemaTool):
    name = "has spaces!"
    input_schema = {"type": "object"}


class NoSchemaTool(Tool):
    name = "no_schema"
    description = "Forgot its schema."

    async def process(self, context: ProcessingContext, params: Mapping[str, JSON]) -> JSON:
        return None


async def test_invalid_schema_is_a_developer_error():
    with pytest.raises(ConfigError, match="invalid input_schema"):
        await BadSchemaTool().process(ProcessingContext(), {})


@pytest.mark.parametrize(
    ("tool", "message"),
    [(BadNameTool(), "tool name"), (NoSchemaTool(), "must define `input_schema`")],
)
def test_bad_definitions_are_refused(tool, message):
    with pytest.raises(ConfigError, match=message):
        tool.to_provider_tool()
    with pytest.raises(ConfigError, match=message):
        ToolRegistry().register_tool(tool)


def test_instance_schemas_are_validated_per_instance():
    class EchoTool(Tool):
        name = "echo"
        description = "Echo."

        def __init__(self, field: str) -> None:
            self.input_schema = {
                "type": "object",
                "properties": {field: {"type": "string"}},
                "required": [field],
            }

        async def process(self, context: ProcessingContext, params: Mapping[str, JSON]) -> JSON:
            return dict(params)

    assert EchoTool("a").validate_arguments({"a": "x"}) == {"a": "x"}
    with pytest.raises(ToolInputError, match="`b`"):
        EchoTool("b").validate_arguments({"a": "x"})


def test_registry_registers_resolves_and_lists():
    registry = ToolRegistry()
    weather = registry.register_tool(WeatherTool())
    assert registry.resolve_tool("get_weather") is weather
    assert registry.get_all_tools() == [weather]
    assert "get_weather" in registry


def test_registry_refuses_duplicates_unless_replacing():
    registry = ToolRegistry([WeatherTool()])
    with pytest.raises(InvalidInput, match="already registered"):
        registry.register_tool(WeatherTool())
    replacement = WeatherTool()
    registry.register_tool(replacement, replace=True)
    assert registry.resolve_tool("get_weather") is replacement
    assert len(registry.get_all_tools()) == 1


def test_unknown_tool_names_the_known_ones():
    registry = ToolRegistry([WeatherTool()])
    with pytest.raises(NotFound, match="known tools: get_weather") as excinfo:
        registry.resolve_tool("get_wether")
    assert isinstance(excinfo.value, LookupError)


def test_registry_takes_only_tools():
    with pytest.raises(InvalidInput, match="Tool instance"):
        ToolRegistry().register_tool("get_weather")  # type: ignore[arg-type]


def test_registries_are_independent_of_the_default():
    mine = ToolRegistry([WeatherTool()])
    assert "get_weather" in mine
    assert "get_weather" not in DEFAULT_REGISTRY


def test_default_registry_functions():
    tool = WeatherTool()
    register_tool(tool)
    try:
        assert resolve_tool("get_weather") is tool
        assert tool in get_all_tools()
    finally:
        DEFAULT_REGISTRY.unregister_tool("get_weather")
    assert "get_weather" not in DEFAULT_REGISTRY
