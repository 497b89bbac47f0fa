"""``memstack agent run "<objective>" --model PROVIDER:MODEL``: one agent, streamed."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import tempfile
import threading
from pathlib import Path
from typing import TYPE_CHECKING

import click

from memstack._json import JSON
from memstack.agents.builtin import builtin_tools
from memstack.agents.messages import Chunk, StepResult, ToolCallUpdate, ToolResult
from memstack.agents.simple import SimpleAgent
from memstack.context import ProcessingContext
from memstack.errors import InvalidInput, MemstackError
from memstack.providers import ChatModel
from memstack.providers.resolve import resolve_model
from memstack.tools import Tool

if TYPE_CHECKING:
    from memstack.transports.inspector.run_panel import RunPanel

TOOL_GROUPS = {
    "workspace": ("workspace_read", "workspace_write", "workspace_list"),
    "calculator": ("calculator",),
    "math": ("calculator", "statistics", "geometry", "trigonometry", "unit_conversion"),
    "files": ("read_file", "write_file", "list_directory"),
}


@click.group()
def agent() -> None:
    """Run agents from the command line."""


@agent.command("run")
@click.argument("objective")
@click.option(
    "--model",
    "model_spec",
    required=True,
    envvar="MEMSTACK_AGENT_MODEL",
    help="provider:model, e.g. openai:gpt-4o-mini, anthropic:claude-haiku-4-5, "
    "ollama:qwen2.5:7b, scripted:echo [env MEMSTACK_AGENT_MODEL].",
)
@click.option(
    "--tools",
    default="",
    help="Comma-separated built-in tools: workspace (read/write/list), calculator, math "
    "(calculator, statistics, geometry, trigonometry, unit_conversion), files (read_file, "
    "write_file, list_directory, in the workspace), or single tool names.",
)
@click.option(
    "--workspace",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Directory for the agent's files, kept after the run (default: a temporary one, "
    "deleted when the run ends).",
)
@click.option("--max-iterations", type=click.IntRange(1, 100), default=10, show_default=True)
@click.option("--system-prompt", default="", help="A preamble for the system prompt.")
@click.option(
    "--inspect",
    is_flag=True,
    help="Serve a live panel of the run's working memory on a local port (it stays up after "
    "the run until Ctrl-C).",
)
@click.option(
    "--inspect-port",
    type=click.IntRange(0, 65535),
    default=8766,
    show_default=True,
    help="The panel's port on 127.0.0.1; 0 picks a free one.",
)
def run(
    objective: str,
    model_spec: str,
    tools: str,
    workspace: Path | None,
    max_iterations: int,
    system_prompt: str,
    inspect: bool,
    inspect_port: int,
) -> None:
    """Run OBJECTIVE as a SimpleAgent and stream what it does; the result is printed last."""
    try:
        provider, model = resolve_model(model_spec, env=os.environ)
        chosen = _tools(tools)
    except MemstackError as exc:
        raise click.ClickException(str(exc)) from exc
    with contextlib.ExitStack() as cleanup:
        if workspace is None:
            scratch = tempfile.TemporaryDirectory(prefix="memstack-agent-")
            root = Path(cleanup.enter_context(scratch))
            note = "deleted after the run; --workspace DIR keeps it"
            click.echo(f"workspace: {root} ({note})", err=True)
        else:
            root = workspace
            root.mkdir(parents=True, exist_ok=True)
            click.echo(f"workspace: {root}", err=True)
        _run_agent(
            objective,
            provider,
            model,
            chosen,
            root,
            max_iterations,
            system_prompt,
            panel_port=inspect_port if inspect else None,
        )


def _run_agent(
    objective: str,
    provider: ChatModel,
    model: str,
    chosen: list[Tool],
    root: Path,
    max_iterations: int,
    system_prompt: str,
    *,
    panel_port: int | None = None,
) -> None:
    context = ProcessingContext(workspace=root)
    runner = SimpleAgent(
        name="cli-agent",
        objective=objective,
        provider=provider,
        model=model,
        tools=chosen,
        system_prompt=system_prompt,
        max_iterations=max_iterations,
    )

    panel = None if panel_port is None else _start_panel(context, panel_port)
    try:
        streamed = asyncio.run(_stream(runner, context))
    except MemstackError as exc:
        raise click.ClickException(str(exc)) from exc
    finally:
        if panel:
            panel.finish()
    try:
        _print_result(runner.get_results(), streamed)
    finally:
        if panel:
            _hold(panel)


def _start_panel(context: ProcessingContext, port: int) -> RunPanel:
    try:
        from memstack.transports.inspector.run_panel import RunPanel
    except ImportError as exc:
        raise click.ClickException(
            f"--inspect needs the server extra ({exc.name} is missing): "
            'pip install "memstack[server]"'
        ) from exc
    panel = RunPanel(context.memory, port=port)
    try:
        url = panel.start()
    except MemstackError as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(f"inspect: {url}", err=True)
    return panel


def _hold(panel: RunPanel) -> None:
    """Keep the finished run's panel up until Ctrl-C."""
    click.echo("the run is over; its panel stays up until Ctrl-C.", err=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        panel.stop()


async def _stream(runner: SimpleAgent, context: ProcessingContext) -> str:
    """Stream the run to the terminal; return the text of the model's last turn."""
    turn: list[str] = []
    async for message in runner.execute(context):
        if isinstance(message, Chunk):
            turn.append(message.content)
            click.echo(message.content, nl=False)
        elif isinstance(message, ToolCallUpdate):
            turn.clear()
            click.echo(f"\n[{message.message}]", err=True)
        elif isinstance(message, ToolResult) and message.error:
            click.echo(f"[{message.name} error: {message.error}]", err=True)
        elif isinstance(message, StepResult) and turn:
            click.echo("")
    return "".join(turn)


def _print_result(result: JSON, streamed: str) -> None:
    """The result, unless it is the text just streamed; a run that failed exits 1."""
    if isinstance(result, dict) and set(result) == {"error"}:
        raise click.ClickException(str(result["error"]))
    if not (isinstance(result, str) and result.strip() == streamed.strip()):
        click.echo(result if isinstance(result, str) else json.dumps(result, indent=2))


def _tools(spec: str) -> list[Tool]:
    names: list[str] = []
    for part in (p.strip() for p in spec.split(",") if p.strip()):
        names.extend(TOOL_GROUPS.get(part, (part,)))
    available = {t.name: t for t in builtin_tools()}
    unknown = [n for n in names if n not in available]
    if unknown:
        raise InvalidInput(
            f"unknown tool {', '.join(unknown)}; choose from {', '.join(sorted(available))} "
            f"or the groups {', '.join(TOOL_GROUPS)}.",
            field="tools",
        )
    return [available[n] for n in dict.fromkeys(names)]
