"""The ``memstack`` command line: ``memstack <noun> <verb>``.

Transports stay thin: every command calls the library and formats what it returns.
"""

from __future__ import annotations

import json
from typing import Literal

import click

from memstack import __version__
from memstack.agents.commands import agent
from memstack.bench.commands import bench
from memstack.mcp.commands import mcp
from memstack.memories_cli import memories
from memstack.server.commands import keys, serve
from memstack.tools import Tool
from memstack.working import MEMORY_TOOLS_PROMPT, memory_tools


@click.group()
@click.version_option(__version__, prog_name="memstack")
def main() -> None:
    """memstack: the memory layer for LLM agents."""


main.add_command(agent)
main.add_command(bench)
main.add_command(serve)
main.add_command(keys)
main.add_command(mcp)
main.add_command(memories)


@main.group()
def tools() -> None:
    """The tools memstack gives an LLM."""


def _builtin_tools() -> list[Tool]:
    from memstack.agents.builtin import builtin_tools

    return [*memory_tools(), *builtin_tools()]


@tools.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@click.option(
    "--format",
    "shape",
    type=click.Choice(["openai", "anthropic"]),
    default="openai",
    show_default=True,
    help="Provider shape of each tool definition (with --json).",
)
def tools_list(as_json: bool, shape: Literal["openai", "anthropic"]) -> None:
    """List the built-in tools, or print their definitions for a provider."""
    specs = [tool.to_provider_tool() for tool in _builtin_tools()]
    if as_json:
        payload = [s.to_openai() if shape == "openai" else s.to_anthropic() for s in specs]
        click.echo(json.dumps(payload, indent=2, ensure_ascii=False))
        return
    width = max(len(s.name) for s in specs)
    for spec in specs:
        summary = spec.description.split(". ")[0].rstrip(".")
        click.echo(f"{spec.name.ljust(width)}  {summary}.")


@main.group()
def prompt() -> None:
    """Prompt sections memstack adds to an agent's system prompt."""


@prompt.command("memory-tools")
def prompt_memory_tools() -> None:
    """Print the "Memory Tools (progressive disclosure)" section."""
    click.echo(MEMORY_TOOLS_PROMPT)
