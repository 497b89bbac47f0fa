"""unit_conversion (``ConversionTool``): between units of one kind of quantity.

The units are a table: for each kind (length, mass, area, volume) every unit's size in the
kind's base unit, with the exact definitions (a pound is 0.45359237 kg, a US gallon
3.785411784 l). Temperatures are converted through Celsius. A conversion between two kinds
(meters to kilograms), an unknown unit, a temperature below absolute zero or a result too
large for a float is a ``ToolInputError`` naming the field.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, cast

from memstack._json import JSON, JSONObject
from memstack.agents.builtin._numbers import checked_result, finite, tool_error
from memstack.tools import Tool

if TYPE_CHECKING:
    from memstack.context import ProcessingContext

__all__ = ["TEMPERATURES", "UNITS", "ConversionTool"]

_TOOL: Final = "unit_conversion"
_INCH: Final = 0.0254
_FOOT: Final = 0.3048
_US_GALLON: Final = 3.785411784

UNITS: Final[Mapping[str, Mapping[str, float]]] = {
    "length": {
        "meters": 1.0, "m": 1.0, "meter": 1.0, "metres": 1.0, "metre": 1.0,
        "centimeters": 0.01, "cm": 0.01, "centimeter": 0.01,
        "millimeters": 0.001, "mm": 0.001, "millimeter": 0.001,
        "kilometers": 1000.0, "km": 1000.0, "kilometer": 1000.0,
        "feet": _FOOT, "ft": _FOOT, "foot": _FOOT,
        "inches": _INCH, "in": _INCH, "inch": _INCH,
        "yards": 0.9144, "yd": 0.9144, "yard": 0.9144,
        "miles": 1609.344, "mi": 1609.344, "mile": 1609.344,
    },
    "mass": {
        "kilograms": 1.0, "kg": 1.0, "kilogram": 1.0,
        "grams": 0.001, "g": 0.001, "gram": 0.001,
        "pounds": 0.45359237, "lbs": 0.45359237, "lb": 0.45359237, "pound": 0.45359237,
        "ounces": 0.028349523125, "oz": 0.028349523125, "ounce": 0.028349523125,
    },
    "area": {
        "square_meters": 1.0, "m2": 1.0,
        "square_feet": _FOOT**2, "ft2": _FOOT**2,
        "square_inches": _INCH**2, "in2": _INCH**2,
        "acres": 4046.8564224, "acre": 4046.8564224,
        "hectares": 10_000.0, "ha": 10_000.0,
    },
    "volume": {
        "liters": 1.0, "l": 1.0, "liter": 1.0, "litres": 1.0, "litre": 1.0,
        "milliliters": 0.001, "ml": 0.001, "milliliter": 0.001,
        "gallons": _US_GALLON, "gal": _US_GALLON, "gallon": _US_GALLON,
        "cups": _US_GALLON / 16, "cup": _US_GALLON / 16,
        "fluid_ounces": _US_GALLON / 128, "fl_oz": _US_GALLON / 128,
    },
}  # fmt: skip
"""Each kind's units, as multiples of its base unit (meter, kilogram, square meter, liter)."""


@dataclass(frozen=True, kw_only=True)
class _Scale:
    to_celsius: Callable[[float], float]
    from_celsius: Callable[[float], float]


TEMPERATURES: Final[Mapping[str, _Scale]] = {
    "celsius": _Scale(to_celsius=lambda v: v, from_celsius=lambda c: c),
    "fahrenheit": _Scale(
        to_celsius=lambda v: (v - 32) * 5 / 9, from_celsius=lambda c: c * 9 / 5 + 32
    ),
    "kelvin": _Scale(to_celsius=lambda v: v - 273.15, from_celsius=lambda c: c + 273.15),
}
_TEMPERATURE_ALIASES: Final = {
    "c": "celsius",
    "°c": "celsius",
    "f": "fahrenheit",
    "°f": "fahrenheit",
    "k": "kelvin",
}
_ABSOLUTE_ZERO_C: Final = -273.15


def _normal(unit: str) -> str:
    text = "_".join(unit.strip().lower().replace("-", " ").split())
    return _TEMPERATURE_ALIASES.get(text, text)


def _kind(unit: str, field: str) -> str:
    """The kind of quantity ``unit`` measures, or a ``ToolInputError`` listing the units."""
    if unit in TEMPERATURES:
        return "temperature"
    for kind, units in UNITS.items():
        if unit in units:
            return kind
    known = "; ".join(
        f"{kind}: {', '.join(units)}"
        for kind, units in {**UNITS, "temperature": TEMPERATURES}.items()
    )
    raise tool_error(_TOOL, field, f"unknown unit {unit!r} in `{field}`. Known units: {known}.")


def _convert(value: float, from_unit: str, to_unit: str) -> float:
    """``value`` in ``from_unit`` expressed in ``to_unit`` (normalized unit names)."""
    source, target = _kind(from_unit, "from_unit"), _kind(to_unit, "to_unit")
    if source != target:
        raise tool_error(
            _TOOL,
            "to_unit",
            f"cannot convert {source} ({from_unit}) to {target} ({to_unit}): both units "
            "must measure the same kind of quantity.",
        )
    if source != "temperature":
        return checked_result(
            lambda: value * UNITS[source][from_unit] / UNITS[source][to_unit],
            tool=_TOOL,
            field="value",
            what="the converted value",
        )
    celsius = TEMPERATURES[from_unit].to_celsius(value)
    if celsius < _ABSOLUTE_ZERO_C - 1e-9:
        raise tool_error(
            _TOOL, "value", f"{value:g} {from_unit} is below absolute zero (-273.15 celsius)."
        )
    return checked_result(
        lambda: TEMPERATURES[to_unit].from_celsius(celsius),
        tool=_TOOL,
        field="value",
        what="the converted value",
    )


class ConversionTool(Tool):
    name = "unit_conversion"
    description = (
        "Convert a value between units of length (m, cm, mm, km, ft, in, yd, mi), mass "
        "(kg, g, lbs, oz), area (m2, ft2, in2, acres, hectares), volume (l, ml, gallons, "
        "cups, fl_oz; US measures) or temperature (celsius, fahrenheit, kelvin). Both units "
        "must measure the same kind of quantity."
    )
    input_schema: JSONObject = {
        "type": "object",
        "properties": {
            "value": {"type": "number", "description": "The value to convert."},
            "from_unit": {
                "type": "string",
                "minLength": 1,
                "maxLength": 40,
                "description": "The unit of `value`, e.g. 'meters', 'feet', 'celsius', 'kg'.",
            },
            "to_unit": {
                "type": "string",
                "minLength": 1,
                "maxLength": 40,
                "description": "The unit to convert to, e.g. 'feet', 'fahrenheit', 'lbs'.",
            },
        },
        "required": ["value", "from_unit", "to_unit"],
        "additionalProperties": False,
    }

    async def process(self, context: ProcessingContext, params: Mapping[str, JSON]) -> JSON:
        value = finite(params["value"], tool=self.name, field="value")
        from_unit = _normal(cast(str, params["from_unit"]))
        to_unit = _normal(cast(str, params["to_unit"]))
        result = _convert(value, from_unit, to_unit)
        return {
            "original_value": params["value"],
            "from_unit": from_unit,
            "to_unit": to_unit,
            "converted_value": result,
            "formatted": f"{params['value']} {from_unit} = {result:.10g} {to_unit}",
        }

    def user_message(self, params: Mapping[str, JSON]) -> str:
        return (
            f"Converting {params.get('value', '')} {params.get('from_unit', '')} "
            f"to {params.get('to_unit', '')}"
        )
