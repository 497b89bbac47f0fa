import math
from typing import Any

import pytest

from memstack.agents.builtin import CalculatorTool, evaluate
from memstack.agents.builtin.calculator import MAX_EXPRESSION_CHARS
from memstack.context import ProcessingContext
from memstack.errors import ToolInputError


async def test_calculator_returns_the_expression_and_its_result():
    result = await CalculatorTool().process(
        ProcessingContext(), {"expression": "(3 + 4) * 2 ** 10"}
    )
    assert result == {"expression": "(3 + 4) * 2 ** 10", "result": 7168}


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("1 + 2", 3),
        ("  7 - 10  ", -3),
        ("6 * 7", 42),
        ("7 / 2", 3.5),
        ("7 // 2", 3),
        ("-7 // 2", -4),
        ("7 % 3", 1),
        ("2 ** 10", 1024),
        ("2 ** -1", 0.5),
        ("2 ** 0.5", math.sqrt(2)),
        ("-2 ** 2", -4),
        ("+5", 5),
        ("((1 + 2) * (3 + 4))", 21),
        ("1_000 * 3", 3000),
        ("1.5e3 + 0.25", 1500.25),
        ("pi", math.pi),
        ("e", math.e),
        ("sqrt(16)", 4.0),
        ("log(e)", 1.0),
        ("log(8, 2)", 3.0),
        ("exp(0)", 1.0),
        ("sin(0) + cos(0) + tan(0)", 1.0),
        ("abs(-3)", 3),
        ("round(2.567, 2)", 2.57),
        ("round(2.5)", 2),
        ("min(3, 1, 2)", 1),
        ("max(3, 1, 2)", 3),
        ("max(4)", 4),
        ("sqrt(2) * pi", math.sqrt(2) * math.pi),
        ("2 ** 1023", 2**1023),
        ("1+" * 499 + "1", 500),
    ],
)
def test_arithmetic(expression: str, expected: float):
    assert evaluate(expression) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        # code, not arithmetic
        ("__import__('os').system('ls')", "is not a function the calculator knows"),
        ("__import__('os')", "`__import__` is not a function the calculator knows"),
        ("().__class__", "uses attribute access"),
        ("(1).real", "uses attribute access"),
        ("math.sqrt(4)", "`math.sqrt` is not a function"),
        ("lambda: 1", "uses lambdas"),
        ("[x for x in (1, 2)]", "uses comprehensions"),
        ("sum(x for x in (1, 2))", "`sum` is not a function"),
        ("max(x for x in (1, 2))", "uses comprehensions"),
        ("(1, 2)[0]", "uses indexing"),
        ("[1, 2]", "uses `List` syntax"),
        ("1 < 2", "uses comparisons"),
        ("1 and 2", "uses and/or"),
        ("1 if 1 else 2", "uses conditional expressions"),
        ("(x := 1)", "uses assignment"),
        ("f'{1}'", "uses strings"),
        ("x", "unknown name `x`"),
        ("os", "unknown name `os`"),
        ("sin", "`sin` is a function: call it"),
        ("'abc'", "`'abc'` is not a number"),
        ("True + 1", "`True` is not a number"),
        ("1j", "`1j` is not a number"),
        ("abs(x=1)", "plain positional numbers only"),
        ("max(*(1, 2))", "plain positional numbers only"),
        ("1 +", "is not valid arithmetic"),
        ("import os", "is not valid arithmetic"),
        # arithmetic that has no answer
        ("1 / 0", "`1 / 0` divides by zero"),
        ("5 % 0", "divides by zero"),
        ("0 ** -1", "divides by zero"),
        ("sqrt(-1)", "outside the function's domain"),
        ("log(0)", "outside the function's domain"),
        ("(-8) ** (1 / 3)", "is not a real number"),
        ("sqrt(1, 2)", "sqrt() does not take 2 arguments"),
        ("min()", "min() does not take 0 arguments"),
        # limits
        ("9 ** 9 ** 9", "is too large"),
        ("2 ** 10000000", "is too large"),
        ("10 ** 400", "is too large"),
        ("2 ** 1024", "is too large"),
        ("1e308 * 10", "is too large"),
        ("2.0 ** 5000", "is too large"),
        ("exp(1000)", "is too large"),
        ("9" * 400, "is too large"),
        ("round(5, -10 ** 9)", "between -100 and 100"),
        ("round(5, 0.5)", "must be a whole number"),
        ("-" * 900 + "1", "nested more than"),
        ("1" * (MAX_EXPRESSION_CHARS + 1), "longer than"),
    ],
)
def test_refusals_say_what_to_change(expression: str, message: str):
    with pytest.raises(ToolInputError) as caught:
        evaluate(expression)
    error = caught.value
    assert message in str(error)
    assert str(error).startswith("Invalid arguments for `calculator`: ")
    assert "The calculator accepts numbers" in str(error)
    assert (error.tool, error.fields) == ("calculator", ("expression",))


@pytest.mark.parametrize(
    "params", [{}, {"expression": ""}, {"expression": 12}, {"expression": "1", "x": 1}]
)
async def test_arguments_are_checked_against_the_schema(params: dict[str, Any]):
    with pytest.raises(ToolInputError, match="Invalid arguments for `calculator`"):
        await CalculatorTool().process(ProcessingContext(), params)


def test_user_message():
    assert CalculatorTool().user_message({"expression": "1 + 1"}) == "Calculating 1 + 1"
