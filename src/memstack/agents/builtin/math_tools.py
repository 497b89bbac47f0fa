"""statistics, geometry, trigonometry: the math tools beside the calculator.

Pure functions of their arguments, no ``eval``: each tool looks its operation up in a
table and computes it with ``math``/``statistics``. Every number is checked on the way in
and every result on the way out (``_numbers``), so a value too large for a float, a list
with nothing in it, a length that is not positive, sides that make no triangle or an
``asin`` outside [-1, 1] come back as a ``ToolInputError`` naming the field and the fix.
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Literal, cast

from memstack._json import JSON, JSONObject
from memstack.agents.builtin._numbers import checked_result, checked_results, finite, tool_error
from memstack.tools import Tool

if TYPE_CHECKING:
    from memstack.context import ProcessingContext

__all__ = [
    "MAX_DATA_POINTS",
    "SHAPES",
    "STATISTICS",
    "TRIG_FUNCTIONS",
    "GeometryTool",
    "StatisticsTool",
    "TrigonometryTool",
]

MAX_DATA_POINTS: Final = 100_000
"""Most numbers one ``statistics`` call takes."""

# -- statistics -----------------------------------------------------------------------

STATISTICS: Final = ("mean", "median", "mode", "std_dev", "variance", "min", "max", "sum", "count")
"""What ``statistics`` computes; std_dev and variance are the sample ones (n - 1)."""
_STATS_TOOL: Final = "statistics"


@dataclass(frozen=True, kw_only=True)
class _Data:
    values: Sequence[int | float]
    floats: Sequence[float]

    def checked(self, what: str, compute: Callable[[], float]) -> float:
        return checked_result(compute, tool=_STATS_TOOL, field="data", what=f"the {what}")

    def mean(self) -> float:
        return self.checked("mean", lambda: math.fsum(self.floats) / len(self.floats))

    def variance(self) -> float:
        if len(self.floats) < 2:
            return 0.0
        mean = self.mean()
        squares = self.checked("variance", lambda: math.fsum((x - mean) ** 2 for x in self.floats))
        return squares / (len(self.floats) - 1)

    def total(self) -> int | float:
        if not all(isinstance(v, int) for v in self.values):
            return self.checked("sum", lambda: math.fsum(self.floats))
        exact = sum(cast("Sequence[int]", self.values))  # whole numbers stay exact
        return exact if abs(exact) <= sys.float_info.max else self.checked("sum", lambda: math.inf)

    def median(self) -> float:
        return self.checked("median", lambda: float(statistics.median(self.floats)))


_STATISTIC: Final[Mapping[str, Callable[[_Data], JSON]]] = {
    "mean": _Data.mean,
    "median": _Data.median,
    "mode": lambda d: statistics.mode(d.values),
    "std_dev": lambda d: math.sqrt(d.variance()),
    "variance": _Data.variance,
    "min": lambda d: min(d.values),
    "max": lambda d: max(d.values),
    "sum": _Data.total,
    "count": lambda d: len(d.values),
}


class StatisticsTool(Tool):
    name = "statistics"
    description = (
        "Compute statistics of a list of numbers: mean, median, mode, std_dev and variance "
        "(sample, n - 1), min, max, sum and count. Pass `calculations` to pick some, or "
        f'leave it out (or ["all"]) for every one. Takes up to {MAX_DATA_POINTS} numbers.'
    )
    input_schema: JSONObject = {
        "type": "object",
        "properties": {
            "data": {
                "type": "array",
                "items": {"type": "number"},
                "maxItems": MAX_DATA_POINTS,
                "description": "The numbers to analyse, e.g. [2, 4, 4, 5, 7].",
            },
            "calculations": {
                "type": "array",
                "items": {"type": "string", "enum": [*STATISTICS, "all"]},
                "description": 'Which statistics to compute (default ["all"]).',
            },
        },
        "required": ["data"],
        "additionalProperties": False,
    }

    async def process(self, context: ProcessingContext, params: Mapping[str, JSON]) -> JSON:
        values = cast("list[int | float]", params["data"])
        if not values:
            raise tool_error(
                self.name, "data", "`data` is empty; give at least one number, e.g. [2, 4, 5]."
            )
        floats = [finite(v, tool=self.name, field=f"data[{i}]") for i, v in enumerate(values)]
        wanted = cast("list[str]", params.get("calculations") or ["all"])
        names = STATISTICS if "all" in wanted else [s for s in STATISTICS if s in wanted]
        data = _Data(values=values, floats=floats)
        results: JSONObject = {name: _STATISTIC[name](data) for name in names}
        plural = "s" if len(values) != 1 else ""
        return {"data_summary": f"Analyzed {len(values)} value{plural}", "statistics": results}

    def user_message(self, params: Mapping[str, JSON]) -> str:
        data = params.get("data")
        wanted = params.get("calculations") or ["all"]
        shown = ", ".join(str(w) for w in wanted) if isinstance(wanted, list) else "all"
        count = len(data) if isinstance(data, list) else 0
        return f"Calculating statistics ({shown}) on {count} values"


# -- geometry -------------------------------------------------------------------------

_GEOMETRY_TOOL: Final = "geometry"
Dimensions = Mapping[str, float]


@dataclass(frozen=True, kw_only=True)
class _Shape:
    needs: tuple[tuple[str, ...], ...]
    """Alternative sets of dimensions; the shape needs one complete set."""
    compute: Callable[[Dimensions], dict[str, float]]
    lengths: bool = True
    """Whether the dimensions are lengths (greater than 0), not coordinates."""


def _triangle(d: Dimensions) -> dict[str, float]:
    results: dict[str, float] = {}
    if "base" in d and "height" in d:
        results["area"] = 0.5 * d["base"] * d["height"]
    if all(side in d for side in ("side_a", "side_b", "side_c")):
        a, b, c = d["side_a"], d["side_b"], d["side_c"]
        if max(a, b, c) >= (a + b + c) - max(a, b, c):
            raise tool_error(
                _GEOMETRY_TOOL,
                "dimensions",
                f"sides {a:g}, {b:g} and {c:g} make no triangle: each side must be shorter "
                "than the other two together.",
            )
        s = (a + b + c) / 2
        results["perimeter"] = a + b + c
        results["area_herons"] = math.sqrt(s * (s - a) * (s - b) * (s - c))
    return results


def _cube(d: Dimensions) -> dict[str, float]:
    side = next(d[k] for k in ("side", "width", "length") if k in d)
    return {"volume": side**3, "surface_area": 6 * side**2}


SHAPES: Final[Mapping[str, _Shape]] = {
    "circle": _Shape(
        needs=(("radius",),),
        compute=lambda d: {
            "area": math.pi * d["radius"] ** 2,
            "circumference": 2 * math.pi * d["radius"],
            "diameter": 2 * d["radius"],
        },
    ),
    "rectangle": _Shape(
        needs=(("width", "height"),),
        compute=lambda d: {
            "area": d["width"] * d["height"],
            "perimeter": 2 * (d["width"] + d["height"]),
            "diagonal": math.hypot(d["width"], d["height"]),
        },
    ),
    "triangle": _Shape(
        needs=(("base", "height"), ("side_a", "side_b", "side_c")), compute=_triangle
    ),
    "sphere": _Shape(
        needs=(("radius",),),
        compute=lambda d: {
            "volume": 4 / 3 * math.pi * d["radius"] ** 3,
            "surface_area": 4 * math.pi * d["radius"] ** 2,
        },
    ),
    "cylinder": _Shape(
        needs=(("radius", "height"),),
        compute=lambda d: {
            "volume": math.pi * d["radius"] ** 2 * d["height"],
            "surface_area": 2 * math.pi * d["radius"] * (d["radius"] + d["height"]),
        },
    ),
    "cube": _Shape(needs=(("side",), ("width",), ("length",)), compute=_cube),
    "distance_2d": _Shape(
        needs=(("x1", "y1", "x2", "y2"),),
        compute=lambda d: {"distance": math.hypot(d["x2"] - d["x1"], d["y2"] - d["y1"])},
        lengths=False,
    ),
    "distance_3d": _Shape(
        needs=(("x1", "y1", "z1", "x2", "y2", "z2"),),
        compute=lambda d: {
            "distance": math.hypot(d["x2"] - d["x1"], d["y2"] - d["y1"], d["z2"] - d["z1"])
        },
        lengths=False,
    ),
}
"""Each shape geometry knows: the dimensions it needs and what it computes from them."""
_DIMENSIONS: Final = tuple(
    dict.fromkeys(name for shape in SHAPES.values() for names in shape.needs for name in names)
)


def _dimensions(shape_name: str, shape: _Shape, given: Mapping[str, JSON]) -> dict[str, float]:
    """The dimensions ``shape`` uses, checked; the others are ignored."""
    if not any(all(name in given for name in names) for names in shape.needs):
        sets = " or ".join(", ".join(f"`dimensions.{n}`" for n in names) for names in shape.needs)
        example = json.dumps({"shape": shape_name, "dimensions": dict.fromkeys(shape.needs[0], 2)})
        raise tool_error(
            _GEOMETRY_TOOL, "dimensions", f"shape {shape_name!r} needs {sets}, e.g. {example}."
        )
    used = {name for names in shape.needs for name in names}
    dims: dict[str, float] = {}
    for name in (name for name in given if name in used):
        field = f"dimensions.{name}"
        dims[name] = finite(given[name], tool=_GEOMETRY_TOOL, field=field)
        if shape.lengths and dims[name] <= 0:
            raise tool_error(_GEOMETRY_TOOL, field, f"`{field}` must be greater than 0.")
    return dims


class GeometryTool(Tool):
    name = "geometry"
    description = (
        "Compute areas, perimeters, volumes, surface areas and distances. `shape` is one of "
        f"{', '.join(SHAPES)}; `dimensions` holds what it needs: circle and sphere a radius, "
        "rectangle width and height, triangle base and height and/or side_a, side_b and "
        "side_c, cylinder radius and height, cube side, distance_2d x1, y1, x2, y2, "
        "distance_3d those and z1, z2."
    )
    input_schema: JSONObject = {
        "type": "object",
        "properties": {
            "shape": {
                "type": "string",
                "enum": list(SHAPES),
                "description": "The shape or calculation.",
            },
            "dimensions": {
                "type": "object",
                "properties": {name: {"type": "number"} for name in _DIMENSIONS},
                "additionalProperties": False,
                "description": 'The shape\'s dimensions, e.g. {"radius": 2}.',
            },
        },
        "required": ["shape", "dimensions"],
        "additionalProperties": False,
    }

    async def process(self, context: ProcessingContext, params: Mapping[str, JSON]) -> JSON:
        shape_name = cast(str, params["shape"])
        shape = SHAPES[shape_name]
        dims = _dimensions(shape_name, shape, cast("Mapping[str, JSON]", params["dimensions"]))
        computed = checked_results(lambda: shape.compute(dims), tool=self.name, field="dimensions")
        return {"shape": shape_name, **computed}

    def user_message(self, params: Mapping[str, JSON]) -> str:
        return f"Calculating geometry for {params.get('shape', 'a shape')}"


# -- trigonometry ---------------------------------------------------------------------

AngleUnit = Literal["degrees", "radians"]
_TRIG_TOOL: Final = "trigonometry"


@dataclass(frozen=True, kw_only=True)
class _Trig:
    kind: Literal["forward", "inverse", "convert"]
    """forward: an angle in, a ratio out; inverse: a ratio in, an angle out; convert:
    an angle in one unit to the other."""
    call: Callable[[float], float]
    exact: tuple[float | None, ...] = ()
    """For forward functions: the value at 0, 90, 180 and 270 degrees (None: undefined),
    so a whole number of right angles gives an exact answer, not 1.2e-16."""


TRIG_FUNCTIONS: Final[Mapping[str, _Trig]] = {
    "sin": _Trig(kind="forward", call=math.sin, exact=(0.0, 1.0, 0.0, -1.0)),
    "cos": _Trig(kind="forward", call=math.cos, exact=(1.0, 0.0, -1.0, 0.0)),
    "tan": _Trig(kind="forward", call=math.tan, exact=(0.0, None, 0.0, None)),
    "asin": _Trig(kind="inverse", call=math.asin),
    "acos": _Trig(kind="inverse", call=math.acos),
    "atan": _Trig(kind="inverse", call=math.atan),
    "deg_to_rad": _Trig(kind="convert", call=math.radians),
    "rad_to_deg": _Trig(kind="convert", call=math.degrees),
}


def _forward(name: str, trig: _Trig, value: float, unit: AngleUnit) -> float:
    if unit == "degrees" and value % 90 == 0:
        exact = trig.exact[int(value // 90) % 4]
        if exact is None:
            raise tool_error(
                _TRIG_TOOL, "value", f"{name} is undefined at {value:g} degrees (cos is 0 there)."
            )
        return exact
    angle = math.radians(value) if unit == "degrees" else value
    return trig.call(angle)


def _trig(name: str, value: float, unit: AngleUnit) -> tuple[float, str, str | None]:
    """The result, the unit of the input, and the unit of the result when it is an angle."""
    trig = TRIG_FUNCTIONS[name]
    if trig.kind == "forward":
        return _forward(name, trig, value, unit), unit, None
    if trig.kind == "convert":
        into = "radians" if name == "deg_to_rad" else "degrees"
        source = "degrees" if name == "deg_to_rad" else "radians"
        return trig.call(value), source, into
    if name != "atan" and not -1 <= value <= 1:
        raise tool_error(_TRIG_TOOL, "value", f"`value` must be between -1 and 1 for {name}.")
    angle = trig.call(value)
    return (math.degrees(angle) if unit == "degrees" else angle), "ratio", unit


class TrigonometryTool(Tool):
    name = "trigonometry"
    description = (
        "Trigonometric functions: sin, cos, tan of an angle; asin, acos, atan of a ratio "
        "(the result is an angle); deg_to_rad and rad_to_deg. `angle_unit` (degrees by "
        "default, or radians) is the unit of the input angle, or of the result of an "
        "inverse function."
    )
    input_schema: JSONObject = {
        "type": "object",
        "properties": {
            "function": {
                "type": "string",
                "enum": list(TRIG_FUNCTIONS),
                "description": "The function to apply.",
            },
            "value": {
                "type": "number",
                "description": "The angle for sin, cos, tan; the ratio for asin, acos, atan.",
            },
            "angle_unit": {
                "type": "string",
                "enum": ["degrees", "radians"],
                "description": "Unit of the angle (default degrees).",
            },
        },
        "required": ["function", "value"],
        "additionalProperties": False,
    }

    async def process(self, context: ProcessingContext, params: Mapping[str, JSON]) -> JSON:
        name = cast(str, params["function"])
        value = finite(params["value"], tool=self.name, field="value")
        unit = cast(AngleUnit, params.get("angle_unit", "degrees"))
        raw, source, into = _trig(name, value, unit)
        outcome = checked_result(lambda: raw, tool=self.name, field="value", what="the result")
        result: JSONObject = {
            "function": name,
            "input_value": params["value"],
            "input_unit": source,
            "result": outcome,
        }
        if into is not None:
            result["result_unit"] = into
        return result

    def user_message(self, params: Mapping[str, JSON]) -> str:
        return f"Calculating {params.get('function', '')}({params.get('value', '')})"
