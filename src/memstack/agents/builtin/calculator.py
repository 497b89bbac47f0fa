"""calculator: arithmetic for the model, evaluated without eval, exec or compiled code.

The expression is parsed with ``ast.parse(mode="eval")`` and the tree is walked
node by node; only a whitelist is evaluated: numbers, ``+ - * / // % **``, unary
``+``/``-``, parentheses, the constants ``pi`` and ``e`` and the functions in
``FUNCTIONS``. Names, attributes, subscripts, comparisons, lambdas, comprehensions,
strings and keyword arguments are refused. Limits keep one call cheap: the length
of the expression, the nesting depth, and the size of every value (an integer of
at most ``MAX_INT_BITS`` bits, a finite float), checked before a power is computed,
so ``9**9**9`` is refused at once. Every refusal is a ``ToolInputError`` the model
can act on.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, cast

from memstack._json import JSON, JSONObject
from memstack.errors import ToolInputError
from memstack.tools import Tool

if TYPE_CHECKING:
    from memstack.context import ProcessingContext

__all__ = ["CONSTANTS", "FUNCTIONS", "MAX_EXPRESSION_CHARS", "CalculatorTool", "evaluate"]

Number = int | float

MAX_EXPRESSION_CHARS: Final = 1000
MAX_DEPTH: Final = 500
"""Deepest nesting of operations and calls (``1+1+...`` nests one level per ``+``)."""
MAX_INT_BITS: Final = 1024
"""Largest integer magnitude, in bits (about 1.8e308, the float range)."""
MAX_ROUND_DIGITS: Final = 100

_TOOL: Final = "calculator"


@dataclass(frozen=True)
class _Function:
    call: Callable[..., Number]
    min_args: int
    max_args: int | None


def _round(value: Number, digits: Number | None = None) -> Number:
    if digits is None:
        return round(value)
    if not isinstance(digits, int) or abs(digits) > MAX_ROUND_DIGITS:
        raise _fail(
            f"round's second argument must be a whole number between -{MAX_ROUND_DIGITS} "
            f"and {MAX_ROUND_DIGITS}"
        )
    return round(value, digits)


FUNCTIONS: Final[Mapping[str, _Function]] = {
    "sqrt": _Function(math.sqrt, 1, 1),
    "log": _Function(math.log, 1, 2),
    "exp": _Function(math.exp, 1, 1),
    "sin": _Function(math.sin, 1, 1),
    "cos": _Function(math.cos, 1, 1),
    "tan": _Function(math.tan, 1, 1),
    "abs": _Function(abs, 1, 1),
    "round": _Function(_round, 1, 2),
    "min": _Function(lambda *args: min(args), 1, None),
    "max": _Function(lambda *args: max(args), 1, None),
}
"""The functions an expression may call, with how many arguments each takes."""
CONSTANTS: Final[Mapping[str, float]] = {"pi": math.pi, "e": math.e}

_BINARY: Final[Mapping[type[ast.operator], Callable[[Number, Number], Number]]] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
    ast.FloorDiv: lambda a, b: a // b,
    ast.Mod: lambda a, b: a % b,
    ast.Pow: lambda a, b: _power(a, b),
}
_UNARY: Final[Mapping[type[ast.unaryop], Callable[[Number], Number]]] = {
    ast.UAdd: lambda a: +a,
    ast.USub: lambda a: -a,
}
_REFUSED: Final[Mapping[type[ast.AST], str]] = {
    ast.Attribute: "attribute access",
    ast.Subscript: "indexing",
    ast.Lambda: "lambdas",
    ast.ListComp: "comprehensions",
    ast.SetComp: "comprehensions",
    ast.DictComp: "comprehensions",
    ast.GeneratorExp: "comprehensions",
    ast.Compare: "comparisons",
    ast.BoolOp: "and/or",
    ast.IfExp: "conditional expressions",
    ast.NamedExpr: "assignment",
    ast.JoinedStr: "strings",
}
_ACCEPTS: Final = (
    "The calculator accepts numbers, + - * / // % ** and parentheses, the constants "
    f"{', '.join(CONSTANTS)}, and the functions {', '.join(FUNCTIONS)}."
)


def _fail(problem: str) -> ToolInputError:
    return ToolInputError(
        f"Invalid arguments for `calculator`: {problem}. {_ACCEPTS}",
        tool=_TOOL,
        fields=("expression",),
    )


def evaluate(expression: str) -> Number:
    """The value of the arithmetic ``expression``; ``ToolInputError`` says what is wrong."""
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise _fail(f"`expression` is longer than {MAX_EXPRESSION_CHARS} characters")
    source = expression.strip()
    try:
        tree = ast.parse(source, mode="eval")
    except SyntaxError as exc:
        raise _fail(f"`expression` is not valid arithmetic ({exc.msg})") from None
    except (RecursionError, MemoryError):
        raise _fail("`expression` is nested too deeply") from None
    try:
        return _Evaluator(source).value(tree.body, 0)
    except RecursionError:
        raise _fail("`expression` is nested too deeply") from None


class _Evaluator:
    def __init__(self, source: str) -> None:
        self.source = source

    def value(self, node: ast.expr, depth: int) -> Number:
        if depth > MAX_DEPTH:
            raise _fail(f"`expression` is nested more than {MAX_DEPTH} levels deep")
        if isinstance(node, ast.Constant):
            return self.constant(node)
        if isinstance(node, ast.Name):
            return self.name(node)
        if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
            return _UNARY[type(node.op)](self.value(node.operand, depth + 1))
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            left = self.value(node.left, depth + 1)
            right = self.value(node.right, depth + 1)
            return _apply(_BINARY[type(node.op)], left, right, text=self.text(node))
        if isinstance(node, ast.Call):
            return self.call(node, depth)
        raise self.refused(node)

    def constant(self, node: ast.Constant) -> Number:
        value = node.value
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise _fail(f"{self.text(node)} is not a number")
        return _checked(value, self.text(node))

    def name(self, node: ast.Name) -> Number:
        if node.id in CONSTANTS:
            return CONSTANTS[node.id]
        if node.id in FUNCTIONS:
            raise _fail(f"`{node.id}` is a function: call it, e.g. {node.id}(2)")
        raise _fail(f"unknown name `{node.id}`")

    def call(self, node: ast.Call, depth: int) -> Number:
        name = node.func.id if isinstance(node.func, ast.Name) else None
        function = FUNCTIONS.get(name) if name is not None else None
        if name is None or function is None:
            raise _fail(f"{self.text(node.func)} is not a function the calculator knows")
        if node.keywords or any(isinstance(arg, ast.Starred) for arg in node.args):
            raise _fail(f"call {name}() with plain positional numbers only")
        count = len(node.args)
        most = count if function.max_args is None else function.max_args
        if not function.min_args <= count <= most:
            raise _fail(f"{name}() does not take {count} argument{'s' if count != 1 else ''}")
        args = [self.value(arg, depth + 1) for arg in node.args]
        return _apply(function.call, *args, text=self.text(node))

    def refused(self, node: ast.AST) -> ToolInputError:
        what = _REFUSED.get(type(node), f"`{type(node).__name__}` syntax")
        return _fail(f"{self.text(node)} uses {what}, which the calculator does not allow")

    def text(self, node: ast.AST) -> str:
        segment = ast.get_source_segment(self.source, node) or type(node).__name__
        return f"`{segment[:60]}{'…' if len(segment) > 60 else ''}`"


def _apply(function: Callable[..., Number], *args: Number, text: str) -> Number:
    try:
        result = function(*args)
    except ZeroDivisionError:
        raise _fail(f"{text} divides by zero") from None
    except OverflowError:
        raise _fail(f"{text} is too large (the limit is about 1.8e308)") from None
    except ValueError:
        raise _fail(f"{text} is outside the function's domain") from None
    if isinstance(result, complex):
        raise _fail(f"{text} is not a real number")
    return _checked(result, text)


def _power(base: Number, exponent: Number) -> Number:
    """``base ** exponent``, refused before computing when the integer result is too big."""
    if isinstance(base, int) and isinstance(exponent, int) and exponent > 0 and abs(base) > 1:
        if (abs(base).bit_length() - 1) * exponent > MAX_INT_BITS:
            raise OverflowError
    return cast(Number, base**exponent)


def _checked(value: Number, text: str) -> Number:
    too_big = (
        value.bit_length() > MAX_INT_BITS if isinstance(value, int) else not math.isfinite(value)
    )
    if too_big:
        raise _fail(f"{text} is too large (the limit is about 1.8e308)")
    return value


class CalculatorTool(Tool):
    name = "calculator"
    description = (
        "Evaluate an arithmetic expression exactly as written, e.g. `(3 + 4) * 2 ** 10` or "
        "`sqrt(2) * pi`. Supports + - * / // % **, parentheses, pi, e and the functions "
        f"{', '.join(FUNCTIONS)}."
    )
    input_schema: JSONObject = {
        "type": "object",
        "properties": {
            "expression": {
                "type": "string",
                "minLength": 1,
                "maxLength": MAX_EXPRESSION_CHARS,
                "description": 'The expression to evaluate, e.g. "12 * (3.5 + 4) / 7".',
            }
        },
        "required": ["expression"],
        "additionalProperties": False,
    }

    async def process(self, context: ProcessingContext, params: Mapping[str, JSON]) -> JSON:
        expression = cast(str, params["expression"])
        return {"expression": expression, "result": evaluate(expression)}

    def user_message(self, params: Mapping[str, JSON]) -> str:
        return f"Calculating {params.get('expression', '')}"
