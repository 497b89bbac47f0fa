"""The default execution system prompts; the memory-tools section is part of every one."""

from __future__ import annotations

import json
from typing import Final

from memstack._json import JSONObject
from memstack.working import MEMORY_TOOLS_PROMPT

__all__ = [
    "CONCLUSION_NOTE",
    "CONCLUSION_NOTE_UNSTRUCTURED",
    "DEFAULT_EXECUTION_SYSTEM_PROMPT",
    "DEFAULT_FINISH_TASK_SYSTEM_PROMPT",
    "DEFAULT_UNSTRUCTURED_SYSTEM_PROMPT",
    "build_system_prompt",
]

_TOOL_USE: Final = """\
# Tool Use
- Use tools only when they materially improve correctness or are required.
- Avoid exploratory or repeated tool calls that are unlikely to change the outcome.
- Tool calls in one turn run concurrently; results come back as tool messages."""

_FINISH: Final = """\
# Completion
- When the step is done, call `finish_step` exactly once with `{"result": <your result>}`.
- The result must match the output schema; if `finish_step` reports a validation error,
  fix the result and call it again.
- Do not answer with plain text instead of calling `finish_step`."""

DEFAULT_EXECUTION_SYSTEM_PROMPT: Final = f"""\
You are executing one step of a larger task. Follow the step's instructions precisely.

{_TOOL_USE}

{MEMORY_TOOLS_PROMPT}

{_FINISH}"""

DEFAULT_FINISH_TASK_SYSTEM_PROMPT: Final = f"""\
You are executing the final step of a task: its result is the result of the whole task.
Follow the step's instructions precisely and make the result complete on its own.

{_TOOL_USE}

{MEMORY_TOOLS_PROMPT}

{_FINISH}"""

DEFAULT_UNSTRUCTURED_SYSTEM_PROMPT: Final = f"""\
You are executing one step of a task. Follow the step's instructions precisely.

{_TOOL_USE}

{MEMORY_TOOLS_PROMPT}

# Completion
- When done, reply with your final answer as plain text, without a tool call: that
  answer is the step's result."""

CONCLUSION_NOTE: Final = (
    "You are close to the token budget of this step. Only `finish_step` is available now: "
    "call it with your best result."
)
CONCLUSION_NOTE_UNSTRUCTURED: Final = (
    "You are close to the token budget of this step. No tools are available now: reply "
    "with your best result as plain text."
)


def build_system_prompt(
    *,
    caller_prompt: str = "",
    output_schema: JSONObject | None,
    finish_task: bool,
    skills_section: str = "",
) -> str:
    """The system prompt of a step: skills, then the caller's preamble, then the default
    execution prompt (never replaced), then the output schema."""
    if output_schema is None:
        default = DEFAULT_UNSTRUCTURED_SYSTEM_PROMPT
    else:
        default = (
            DEFAULT_FINISH_TASK_SYSTEM_PROMPT if finish_task else DEFAULT_EXECUTION_SYSTEM_PROMPT
        )
    parts = [p.strip() for p in (skills_section, caller_prompt, default) if p and p.strip()]
    if output_schema is not None:
        schema = json.dumps(output_schema, indent=2, ensure_ascii=False)
        parts.append(
            "# Output Schema\nThe final result must match this JSON schema exactly:\n"
            f"```json\n{schema}\n```"
        )
    return "\n\n".join(parts)
