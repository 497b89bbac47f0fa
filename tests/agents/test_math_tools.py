"""statistics, geometry, trigonometry, unit_conversion (spec 003's math tools): the
answers, and a clear ``ToolInputError`` naming the field for every bad input."""

from __future__ import annotations

import math
from typing import Any

import pytest

from memstack.agents.builtin import (
    BUILTIN_TOOL_NAMES,
    ConversionTool,
    GeometryTool,
    StatisticsTool,
    TrigonometryTool,
    builtin_tools,
)
from memstack.agents.builtin.math_tools import MAX_DATA_POINTS
from memstack.agents.simple import SimpleAgent
from memstack.context import ProcessingContext
from memstack.errors import ToolInputError
from memstack.providers import Completion, ScriptedProvider
from memstack.tools import Tool

HUGE = 10**400  # a JSON integer no float can hold


async def call(tool: Tool, params: dict[str, Any]) -> Any:
    return await tool.process(ProcessingContext(), params)


async def refused(tool: Tool, params: dict[str, Any]) -> ToolInputError:
    with pytest.raises(ToolInputError) as caught:
        await call(tool, params)
    assert caught.value.tool == tool.name
    return caught.value


# -- statistics -----------------------------------------------------------------------


async def test_statistics_computes_every_statistic_by_default():
    result = await call(StatisticsTool(), {"data": [2, 4, 4, 5, 7]})
    assert result["data_summary"] == "Analyzed 5 values"
    stats = result["statistics"]
    assert list(stats) == [
        "mean",
        "median",
        "mode",
        "std_dev",
        "variance",
        "min",
        "max",
        "sum",
        "count",
    ]
    assert stats["mean"] == pytest.approx(4.4)
    assert stats["median"] == 4
    assert stats["mode"] == 4
    assert stats["variance"] == pytest.approx(3.3)  # the sample variance (n - 1)
    assert stats["std_dev"] == pytest.approx(math.sqrt(3.3))
    assert (stats["min"], stats["max"], stats["sum"], stats["count"]) == (2, 7, 22, 5)


async def test_statistics_picks_the_calculations_asked_for():
    result = await call(StatisticsTool(), {"data": [1.5, 2.5], "calculations": ["sum", "median"]})
    assert result["statistics"] == {"median": 2.0, "sum": 4.0}
    single = await call(StatisticsTool(), {"data": [3], "calculations": ["std_dev", "variance"]})
    assert single["statistics"] == {"std_dev": 0.0, "variance": 0.0}


async def test_whole_numbers_sum_exactly():
    big = 2**60 + 1  # not exact as a float
    result = await call(StatisticsTool(), {"data": [big, 1], "calculations": ["sum"]})
    assert result["statistics"]["sum"] == 2**60 + 2


@pytest.mark.parametrize(
    ("params", "field", "message"),
    [
        ({"data": []}, "data", "`data` is empty; give at least one number"),
        ({"data": [1, HUGE]}, "data[1]", "`data[1]` is too large"),
        ({"data": [1e308, 1e308], "calculations": ["mean"]}, "data", "the mean is too large"),
        ({"data": [1e308, -1e308], "calculations": ["variance"]}, "data", "is too large"),
        ({"data": [10**308, 10**308], "calculations": ["sum"]}, "data", "the sum is too large"),
        ({"data": ["1"]}, "data[0]", "must be of type number"),
        ({"data": [1], "calculations": ["average"]}, "calculations[0]", "must be one of"),
        ({"data": [0] * (MAX_DATA_POINTS + 1)}, "data", "is too long"),
    ],
)
async def test_statistics_refuses_bad_data_naming_the_field(
    params: dict[str, Any], field: str, message: str
):
    error = await refused(StatisticsTool(), params)
    assert field in error.fields
    assert message in str(error)


# -- geometry -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("shape", "dimensions", "expected"),
    [
        ("circle", {"radius": 2}, {"area": 4 * math.pi, "circumference": 4 * math.pi}),
        ("rectangle", {"width": 3, "height": 4}, {"area": 12, "perimeter": 14, "diagonal": 5}),
        ("triangle", {"base": 4, "height": 3}, {"area": 6}),
        ("triangle", {"side_a": 3, "side_b": 4, "side_c": 5}, {"perimeter": 12, "area_herons": 6}),
        ("sphere", {"radius": 1}, {"volume": 4 / 3 * math.pi, "surface_area": 4 * math.pi}),
        ("cylinder", {"radius": 1, "height": 2}, {"volume": 2 * math.pi}),
        ("cube", {"side": 3}, {"volume": 27, "surface_area": 54}),
        ("distance_2d", {"x1": 0, "y1": 0, "x2": 3, "y2": -4}, {"distance": 5}),
        ("distance_3d", {"x1": 1, "y1": 1, "z1": 1, "x2": 2, "y2": 3, "z2": 3}, {"distance": 3}),
    ],
)
async def test_geometry(shape: str, dimensions: dict[str, float], expected: dict[str, float]):
    result = await call(GeometryTool(), {"shape": shape, "dimensions": dimensions})
    assert result["shape"] == shape
    for what, value in expected.items():
        assert result[what] == pytest.approx(value), what


@pytest.mark.parametrize(
    ("params", "field", "message"),
    [
        (
            {"shape": "circle", "dimensions": {}},
            "dimensions",
            'needs `dimensions.radius`, e.g. {"shape": "circle", "dimensions": {"radius": 2}}',
        ),
        ({"shape": "circle", "dimensions": {"radius": -1}}, "dimensions.radius", "greater than 0"),
        ({"shape": "cube", "dimensions": {"side": 0}}, "dimensions.side", "greater than 0"),
        ({"shape": "circle", "dimensions": {"radius": HUGE}}, "dimensions.radius", "too large"),
        ({"shape": "sphere", "dimensions": {"radius": 1e200}}, "dimensions", "too large"),
        (
            {"shape": "triangle", "dimensions": {"side_a": 1, "side_b": 2, "side_c": 10}},
            "dimensions",
            "make no triangle",
        ),
        ({"shape": "cube", "dimensions": {"radious": 2}}, "dimensions.radious", "unknown field"),
        ({"shape": "hexagon", "dimensions": {"side": 1}}, "shape", "must be one of"),
    ],
)
async def test_geometry_refuses_bad_dimensions_naming_the_field(
    params: dict[str, Any], field: str, message: str
):
    error = await refused(GeometryTool(), params)
    assert field in error.fields
    assert message in str(error)


async def test_coordinates_may_be_negative_and_unused_dimensions_are_ignored():
    result = await call(
        GeometryTool(),
        {"shape": "distance_2d", "dimensions": {"x1": -1, "y1": -1, "x2": -4, "y2": 3, "z1": 9}},
    )
    assert result == {"shape": "distance_2d", "distance": 5.0}


# -- trigonometry ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("params", "result", "units"),
    [
        ({"function": "sin", "value": 30}, 0.5, ("degrees", None)),
        ({"function": "sin", "value": 180}, 0.0, ("degrees", None)),
        ({"function": "cos", "value": -90}, 0.0, ("degrees", None)),
        ({"function": "tan", "value": 45}, 1.0, ("degrees", None)),
        ({"function": "cos", "value": math.pi, "angle_unit": "radians"}, -1.0, ("radians", None)),
        ({"function": "asin", "value": 1}, 90.0, ("ratio", "degrees")),
        (
            {"function": "acos", "value": 0, "angle_unit": "radians"},
            math.pi / 2,
            ("ratio", "radians"),
        ),
        ({"function": "atan", "value": 1}, 45.0, ("ratio", "degrees")),
        ({"function": "deg_to_rad", "value": 180}, math.pi, ("degrees", "radians")),
        ({"function": "rad_to_deg", "value": math.pi}, 180.0, ("radians", "degrees")),
    ],
)
async def test_trigonometry(params: dict[str, Any], result: float, units: tuple[str, str | None]):
    answer = await call(TrigonometryTool(), params)
    assert answer["function"] == params["function"]
    assert answer["input_value"] == params["value"]
    assert answer["result"] == pytest.approx(result, abs=1e-12)
    assert (answer["input_unit"], answer.get("result_unit")) == units


async def test_a_whole_number_of_right_angles_is_exact():
    answer = await call(TrigonometryTool(), {"function": "sin", "value": 180})
    assert answer["result"] == 0.0  # not 1.2e-16


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"function": "asin", "value": 2}, "`value` must be between -1 and 1 for asin"),
        ({"function": "acos", "value": -1.5}, "`value` must be between -1 and 1 for acos"),
        ({"function": "tan", "value": 90}, "tan is undefined at 90 degrees"),
        ({"function": "tan", "value": -270}, "tan is undefined at -270 degrees"),
        ({"function": "sin", "value": HUGE}, "`value` is too large"),
        ({"function": "rad_to_deg", "value": 1e308}, "the result is too large"),
    ],
)
async def test_trigonometry_refuses_values_outside_the_domain(params: dict[str, Any], message: str):
    error = await refused(TrigonometryTool(), params)
    assert error.fields == ("value",)
    assert message in str(error)


# -- unit_conversion ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "from_unit", "to_unit", "expected"),
    [
        (1, "miles", "km", 1.609344),
        (12, "inches", "ft", 1.0),
        (1, "kg", "lbs", 1 / 0.45359237),
        (16, "oz", "pound", 1.0),
        (1, "acres", "m2", 4046.8564224),
        (1, "gallons", "cups", 16.0),
        (100, "Celsius", "F", 212.0),
        (32, "fahrenheit", "kelvin", 273.15),
        (0, "kelvin", "celsius", -273.15),
        (5, "Square Feet", "square-inches", 720.0),
    ],
)
async def test_unit_conversion(value: float, from_unit: str, to_unit: str, expected: float):
    answer = await call(
        ConversionTool(), {"value": value, "from_unit": from_unit, "to_unit": to_unit}
    )
    assert answer["converted_value"] == pytest.approx(expected)
    assert answer["original_value"] == value
    assert answer["formatted"].startswith(f"{value} {answer['from_unit']} = ")


@pytest.mark.parametrize(
    ("params", "field", "message"),
    [
        (
            {"value": 1, "from_unit": "meters", "to_unit": "kg"},
            "to_unit",
            "cannot convert length (meters) to mass (kg)",
        ),
        ({"value": 1, "from_unit": "parsec", "to_unit": "m"}, "from_unit", "unknown unit 'parsec'"),
        ({"value": 1, "from_unit": "m", "to_unit": "furlong"}, "to_unit", "Known units: length"),
        ({"value": -300, "from_unit": "celsius", "to_unit": "kelvin"}, "value", "absolute zero"),
        ({"value": -1, "from_unit": "kelvin", "to_unit": "celsius"}, "value", "absolute zero"),
        ({"value": HUGE, "from_unit": "m", "to_unit": "cm"}, "value", "`value` is too large"),
        ({"value": 1e308, "from_unit": "km", "to_unit": "mm"}, "value", "too large"),
    ],
)
async def test_unit_conversion_refuses_bad_input_naming_the_field(
    params: dict[str, Any], field: str, message: str
):
    error = await refused(ConversionTool(), params)
    assert error.fields == (field,)
    assert message in str(error)


# -- given to an agent by name --------------------------------------------------------


async def test_an_agent_is_given_the_math_tools_by_name():
    assert {"statistics", "geometry", "trigonometry", "unit_conversion"} <= set(BUILTIN_TOOL_NAMES)
    wanted = ("statistics", "unit_conversion")
    tools = [tool for tool in builtin_tools() if tool.name in wanted]
    call_stats = ScriptedProvider.tool_call("statistics", {"data": [1, 2, 3]})
    call_units = ScriptedProvider.tool_call(
        "unit_conversion", {"value": 1, "from_unit": "km", "to_unit": "m"}
    )
    provider = ScriptedProvider(
        [Completion(tool_calls=(call_stats, call_units)), Completion(content="done")]
    )
    agent = SimpleAgent(name="a", objective="compute", provider=provider, model="m", tools=tools)
    results: dict[str, Any] = {}
    async for message in agent.execute(ProcessingContext()):
        if message.type == "tool_result":
            results[message.name] = message
    assert set(wanted) <= set(provider.calls[0].tool_names)
    assert results["statistics"].error is None
    assert results["statistics"].result["statistics"]["mean"] == 2.0
    assert results["unit_conversion"].result["converted_value"] == 1000.0
