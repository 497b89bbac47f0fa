"""The planning prompt: how the planner asks for ``create_task``."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Final

from memstack.working import memory_keys

__all__ = [
    "NO_TOOLS_LINE",
    "build_planning_prompt",
    "build_planning_user_message",
    "retry_feedback",
]

NO_TOOLS_LINE: Final = "- (none: steps can only reason and use working memory)"

_PLANNING_PROMPT: Final = """\
You are a planner. Decompose the objective into a plan an agent will execute: one or
more tasks, each a small DAG of steps. You do not execute anything yourself.

# How a plan runs
- Each step is run by an LLM with tools, from its `instructions` alone: make them
  self-contained and specific (what to do, which inputs to use, what to produce).
- Results pass between steps through working memory. A step's result is stored under
  `step:<step id>`; the last step of a task produces the task's result, stored under
  `task:<task id>`. Caller inputs are stored under `input:<key>`.
- Results are NOT pasted into later prompts (progressive disclosure): a step is told the
  keys of the steps in its `depends_on` and pulls the values it needs with `memory_read`.
  So declare every upstream result a step needs in its `depends_on`.
- Steps run after their dependencies; independent steps may run in parallel.
  Dependencies must form a DAG: no cycles, no step depending on itself.
- Every task id and every step id must be unique in the whole plan.

# Steps
- `id`: a short snake_case id; `instructions`: what the step must do.
- `depends_on`: ids of steps of the same task whose results this step needs.
- `tools`: optional; restricts the step to these tool names (from the list below).
  Omit it to give the step every tool. `memory_list`, `memory_read` and `memory_write`
  are always available to every step, and `finish_step` to every step with an
  `output_schema`; do not list them.
- `output_schema`: optional JSON Schema object for the step's result; give one when a
  later step or the caller relies on the result's shape.
- The last step of a task is its final step: its result is the task's result, so it
  should depend on the steps whose results it needs.

# Fan-out modes (`mode`)
- `discover`: the step produces a list of items (its result is an array).
- `process`: one sub-step runs per item of the list, in parallel. A process step must
  depend on a discover step; `per_item_instructions` is the sub-step's instructions,
  with `{item}` replaced by the item.
- `aggregate`: the step combines the per-item results of a process step it depends on.
- Omit `mode` for an ordinary step.

# Tasks
- Use one task unless the objective has clearly separate phases. Call `create_task` once
  per task, all in one reply. A task's `depends_on` names earlier tasks whose results it
  needs (the steps read them as `task:<id>`). The last task's result is the plan's result.

# Limits
- At most {max_steps} steps in each task. Fewer is better.

# Available tools
{tools}

# Output
Call `create_task` (once per task). Do not answer in prose: text without a `create_task`
call is not a plan. If a plan is rejected, the error says what to fix; call `create_task`
again for every task of the corrected plan."""


def build_planning_prompt(
    *, tools: Sequence[tuple[str, str]], max_steps: int, caller_prompt: str = ""
) -> str:
    """The planner's system prompt: the caller's preamble, then the planning contract with
    the available tools (``(name, description)``, one line each) and ``max_steps``."""
    lines = [f"- `{name}`: {_first_line(description)}" for name, description in tools]
    body = _PLANNING_PROMPT.replace("{max_steps}", str(max_steps)).replace(
        "{tools}", "\n".join(lines) or NO_TOOLS_LINE
    )
    return "\n\n".join(p.strip() for p in (caller_prompt, body) if p and p.strip())


def build_planning_user_message(objective: str, input_keys: Iterable[str] = ()) -> str:
    """The objective, then the caller inputs available in memory as ``input:<key>``."""
    parts = [f"# Objective\n{objective.strip()}"]
    keys = [memory_keys.input(k) for k in dict.fromkeys(input_keys)]
    if keys:
        listed = "\n".join(f"- {k}" for k in keys)
        parts.append(
            "# Inputs\nThe caller supplied these inputs; steps read them with `memory_read`, so "
            "name the keys a step needs in its instructions:\n" + listed
        )
    parts.append("Plan it now by calling `create_task`.")
    return "\n\n".join(parts)


def retry_feedback(error: str) -> str:
    """What the model is told when its plan is rejected."""
    return (
        f"The plan was rejected: {error}\n"
        "Fix it and call `create_task` again for every task of the corrected plan "
        "(the rejected calls are discarded)."
    )


def _first_line(text: str) -> str:
    for line in text.strip().splitlines():
        if line.strip():
            return line.strip()
    return "(no description)"
