"""The ``memstack`` command line: ``memstack <noun> <verb>``.

Transports stay thin: every command calls the library and formats what it returns. Each
command group is imported when it runs (``memstack --version`` loads no web server), and
every ``MemstackError`` a command lets through ends as a one-line ``Error: ...`` with exit
code 1, never a traceback.
"""

from __future__ import annotations

import importlib
import json
import re
from collections.abc import Mapping
from typing import Any, Literal

import click

from memstack import __version__
from memstack.errors import MemstackError
from memstack.tools import Tool
from memstack.working import MEMORY_TOOLS_PROMPT, memory_tools

LAZY_COMMANDS: Mapping[str, str] = {
    "agent": "memstack.cli.agent:agent",
    "bench": "memstack.cli.bench:bench",
    "keys": "memstack.cli.keys:keys",
    "mcp": "memstack.cli.mcp:mcp",
    "memories": "memstack.cli.memories:memories",
    "models": "memstack.cli.models:models",
    "serve": "memstack.cli.serve:serve",
    "users": "memstack.cli.users:users",
}
"""Command name -> ``module:attribute`` of a command imported only when it is used."""


class _Main(click.Group):
    """The root group: lazy subcommands, and the one place CLI errors are translated."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted([*super().list_commands(ctx), *LAZY_COMMANDS])

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = LAZY_COMMANDS.get(cmd_name)
        if target is None:
            return super().get_command(ctx, cmd_name)
        module, _, attribute = target.partition(":")
        command = getattr(importlib.import_module(module), attribute)
        assert isinstance(command, click.Command)
        return command

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except MemstackError as exc:
            raise click.ClickException(" ".join(str(exc).split())) from exc


@click.group(cls=_Main)
@click.version_option(__version__, prog_name="memstack")
def main() -> None:
    """memstack: the memory layer for LLM agents."""


@main.group()
def tools() -> None:
    """The tools memstack gives an LLM."""


def _builtin_tools() -> list[Tool]:
    from memstack.agents.builtin import builtin_tools

    return [*memory_tools(), *builtin_tools()]


_SENTENCE_END = re.compile(r'(?<!\be\.g)(?<!\bi\.e)\.\s+(?=[A-Z`"])')


def _first_sentence(text: str) -> str:
    """Up to the first full stop that ends a sentence ("e.g." does not)."""
    return _SENTENCE_END.split(text, maxsplit=1)[0].rstrip(".") + "."


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
        click.echo(f"{spec.name.ljust(width)}  {_first_sentence(spec.description)}")


@main.group()
def prompt() -> None:
    """Prompt sections memstack adds to an agent's system prompt."""


@prompt.command("memory-tools")
def prompt_memory_tools() -> None:
    """Print the "Memory Tools (progressive disclosure)" section."""
    click.echo(MEMORY_TOOLS_PROMPT)
