"""``finish_step``: how a step hands back its result, validated against its output schema."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from memstack._json import JSON, JSONObject
from memstack.tools import Tool

if TYPE_CHECKING:
    from memstack.context import ProcessingContext

__all__ = ["FINISH_STEP", "FinishStepTool"]

FINISH_STEP = "finish_step"


class FinishStepTool(Tool):
    """Its arguments are ``{"result": ...}``; the result is checked against the step's
    output schema by the Tool base before ``process`` runs, so a bad result goes back to
    the model as a ToolInputError naming the field."""

    name = FINISH_STEP
    description = (
        "Finish the current step and hand back its result. Call it exactly once, when the "
        "step is complete, with the result in `result`."
    )

    def __init__(self, output_schema: JSONObject | None = None) -> None:
        result_schema: JSONObject = dict(output_schema) if output_schema else {}
        result_schema.setdefault("description", "The step's result.")
        self.input_schema: JSONObject = {
            "type": "object",
            "properties": {"result": result_schema},
            "required": ["result"],
            "additionalProperties": False,
        }

    async def process(self, context: ProcessingContext, params: Mapping[str, JSON]) -> JSON:
        return params["result"]
