"""The Tool base every LLM tool extends, and the ToolRegistry.

A tool has a ``name``, a ``description``, an ``input_schema`` (JSON Schema) and an
``async process(context, params)``. Arguments are checked against ``input_schema``
by a real JSON Schema validator before ``process`` runs, whichever way it is
called; a violation raises ``ToolInputError`` naming the fields, and that message
is what the model sees.
"""

from __future__ import annotations

import functools
import json
import re
import threading
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from jsonschema import exceptions as js_exceptions
from jsonschema import validators as js_validators
from jsonschema.protocols import Validator

from memstack._json import JSON, JSONObject
from memstack.errors import ConfigError, InvalidInput, NotFound, ToolInputError

if TYPE_CHECKING:
    from memstack.context import ProcessingContext

__all__ = [
    "DEFAULT_REGISTRY",
    "ProviderTool",
    "Tool",
    "ToolRegistry",
    "get_all_tools",
    "register_tool",
    "resolve_tool",
]

TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_MAX_REPORTED_ERRORS: Final = 5

ProcessFn = Callable[["Tool", "ProcessingContext", Mapping[str, JSON]], Awaitable[JSON]]


@dataclass(frozen=True, kw_only=True)
class ProviderTool:
    """A tool as LLM providers take it, with the two wire shapes."""

    name: str
    description: str
    input_schema: JSONObject

    def to_openai(self) -> JSONObject:
        """The Chat Completions ``tools`` entry."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.input_schema,
            },
        }

    def to_anthropic(self) -> JSONObject:
        """The Anthropic Messages ``tools`` entry."""
        return {
            "name": self.name,
            "description": self.description,
            "input_schema": self.input_schema,
        }


class Tool(ABC):
    """Base class of every tool an LLM can call.

    Subclasses set ``name``, ``description`` and ``input_schema`` (as class or
    instance attributes) and implement ``process``. The ``process`` a subclass
    defines is wrapped so that its arguments are validated first.
    """

    name: str
    description: str
    input_schema: JSONObject

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        own = cls.__dict__.get("process")
        if own is not None and not getattr(own, "__memstack_validates__", False):
            setattr(cls, "process", _validating(own))  # noqa: B010

    @abstractmethod
    async def process(self, context: ProcessingContext, params: Mapping[str, JSON]) -> JSON:
        """Run the tool on validated arguments and return a JSON-serializable result."""

    def user_message(self, params: Mapping[str, JSON]) -> str:
        """A short line describing the call, for logs and UIs."""
        return f"Running {self.name}"

    def to_provider_tool(self) -> ProviderTool:
        """This tool in the shapes OpenAI and Anthropic function calling take."""
        self._check_definition()
        return ProviderTool(
            name=self.name, description=self.description, input_schema=self.input_schema
        )

    def validate_arguments(self, params: object) -> Mapping[str, JSON]:
        """Return ``params`` if they satisfy ``input_schema``; else raise ``ToolInputError``."""
        if not isinstance(params, Mapping):
            raise ToolInputError(
                f"Invalid arguments for `{self.name}`: the arguments must be a JSON object, "
                f"got {_json_type(params)}. Call the tool again with an object.",
                tool=self.name,
            )
        errors = sorted(self._validator().iter_errors(params), key=_error_order)
        if errors:
            raise _tool_input_error(self.name, errors)
        return params

    def _validator(self) -> Validator:
        cached: tuple[int, Validator] | None = self.__dict__.get("_memstack_validator")
        if cached is not None and cached[0] == id(self.input_schema):
            return cached[1]
        self._check_definition()
        cls = js_validators.validator_for(self.input_schema)
        try:
            cls.check_schema(self.input_schema)
        except js_exceptions.SchemaError as exc:
            raise ConfigError(
                f"tool {self.name!r} has an invalid input_schema: {exc.message}"
            ) from exc
        validator = cls(self.input_schema)
        self.__dict__["_memstack_validator"] = (id(self.input_schema), validator)
        return validator

    def _check_definition(self) -> None:
        for attr in ("name", "description", "input_schema"):
            if not hasattr(self, attr):
                raise ConfigError(f"{type(self).__name__} must define `{attr}`.")
        if not isinstance(self.name, str) or not TOOL_NAME.match(self.name):
            raise ConfigError(
                f"tool name {self.name!r} is invalid: use 1-64 letters, digits, '_' or '-'."
            )
        if not isinstance(self.input_schema, dict):
            raise ConfigError(f"tool {self.name!r}: input_schema must be a JSON Schema dict.")


def _validating(process: ProcessFn) -> ProcessFn:
    @functools.wraps(process)
    async def checked(self: Tool, context: ProcessingContext, params: Mapping[str, JSON]) -> JSON:
        return await process(self, context, self.validate_arguments(params))

    checked.__memstack_validates__ = True  # type: ignore[attr-defined]
    return checked


# -- turning validation errors into a message the model can act on -----------------


def _error_order(error: js_exceptions.ValidationError) -> tuple[int, str]:
    return (len(error.path), _field(error.path))


def _field(path: Iterable[object]) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _fields_of(error: js_exceptions.ValidationError) -> list[str]:
    base = list(error.path)
    instance = error.instance
    required = error.validator_value
    if error.validator == "required" and isinstance(instance, Mapping):
        names = required if isinstance(required, list) else []
        return [_field([*base, name]) for name in names if name not in instance]
    if error.validator == "additionalProperties" and isinstance(instance, Mapping):
        known = error.schema.get("properties", {}) if isinstance(error.schema, Mapping) else {}
        return [_field([*base, name]) for name in instance if name not in known]
    return [_field(base) or "(arguments)"]


def _describe(error: js_exceptions.ValidationError, fields: list[str]) -> str:
    named = ", ".join(f"`{f}`" for f in fields)
    kind = error.validator
    plural = len(fields) > 1
    if kind == "required":
        return f"missing required field{'s' if plural else ''} {named}"
    if kind == "additionalProperties":
        return f"unknown field{'s' if plural else ''} {named} (remove {'them' if plural else 'it'})"
    if kind == "type":
        return f"{named} must be of type {error.validator_value}, got {_json_type(error.instance)}"
    if kind == "enum" and isinstance(error.validator_value, list):
        allowed = ", ".join(json.dumps(v) for v in error.validator_value)
        return f"{named} must be one of {allowed}, got {json.dumps(error.instance, default=str)}"
    return f"{named}: {error.message}"


def _tool_input_error(tool: str, errors: list[js_exceptions.ValidationError]) -> ToolInputError:
    problems: list[str] = []
    fields: list[str] = []
    for error in errors[:_MAX_REPORTED_ERRORS]:
        names = _fields_of(error)
        fields.extend(names)
        problems.append(_describe(error, names))
    more = len(errors) - _MAX_REPORTED_ERRORS
    if more > 0:
        problems.append(f"and {more} more")
    return ToolInputError(
        f"Invalid arguments for `{tool}`: {'; '.join(problems)}. "
        "Fix the arguments to match the tool's schema and call it again.",
        tool=tool,
        fields=tuple(dict.fromkeys(fields)),
    )


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__


# -- the registry -------------------------------------------------------------------


class ToolRegistry:
    """Tools resolvable by name. Create your own, or use ``DEFAULT_REGISTRY``."""

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        self._lock = threading.Lock()
        for tool in tools:
            self.register_tool(tool)

    def register_tool(self, tool: Tool, *, replace: bool = False) -> Tool:
        """Register ``tool`` under its name. A second tool of the same name is refused
        unless ``replace=True``."""
        if not isinstance(tool, Tool):
            raise InvalidInput(
                f"register_tool takes a Tool instance, got {type(tool).__name__}.", field="tool"
            )
        tool.to_provider_tool()  # checks name and schema shape up front
        with self._lock:
            if tool.name in self._tools and not replace:
                raise InvalidInput(
                    f"a tool named {tool.name!r} is already registered; "
                    "pass replace=True to swap it.",
                    field="tool",
                )
            self._tools[tool.name] = tool
        return tool

    def resolve_tool(self, name: str) -> Tool:
        """The tool registered as ``name``; ``NotFound`` lists the known names."""
        with self._lock:
            tool = self._tools.get(name)
            known = sorted(self._tools)
        if tool is None:
            raise NotFound(
                f"no tool named {name!r} is registered; known tools: {', '.join(known) or 'none'}.",
                field="name",
            )
        return tool

    def get_all_tools(self) -> list[Tool]:
        """Every registered tool, in registration order."""
        with self._lock:
            return list(self._tools.values())

    def unregister_tool(self, name: str) -> None:
        with self._lock:
            self._tools.pop(name, None)

    def __contains__(self, name: object) -> bool:
        with self._lock:
            return name in self._tools


DEFAULT_REGISTRY: Final = ToolRegistry()
"""The process-wide registry behind ``register_tool`` / ``resolve_tool`` / ``get_all_tools``."""


def register_tool(tool: Tool, *, replace: bool = False) -> Tool:
    return DEFAULT_REGISTRY.register_tool(tool, replace=replace)


def resolve_tool(name: str) -> Tool:
    return DEFAULT_REGISTRY.resolve_tool(name)


def get_all_tools() -> list[Tool]:
    return DEFAULT_REGISTRY.get_all_tools()
